/*
 * delay.c - GET /delay/:ms[?jitter=J], which answers after a known delay, for
 * checking the latency figures of load tools. The wait is a request timer on
 * the loop's timer service (request_timer_arm; timers.h), so waits of any
 * length are precise to the loop's wake-up, and nothing ever sleeps.
 *
 * Distribution with ?jitter=J: uniform on [ms - J, ms + J] (clamped at 0), so
 * its mean and median are `ms` and its p99 is ms + 0.98 J; with no jitter,
 * every answer is due exactly `ms` after the handler received the request.
 */
#include <stdio.h>
#include "knob.h"
#include "respond.h"
#include "rng.h"
#include "routes.h"

/* A delay in microseconds: `ms` plus a uniform offset in [-jitter, +jitter]
 * milliseconds, never below 0. `u` is uniform in [0, 1). */
static int64_t draw_us(long ms, long jitter_ms, double u)
{
    int64_t us = (int64_t)ms * 1000 + (int64_t)((2 * u - 1) * (double)jitter_ms * 1000);
    return us < 0 ? 0 : us;
}

/* The request's state (r->state): the delay it asked for. */
typedef struct delay_req {
    long ms;
} delay_req_t;

const route_state_t delay_state = {.request_size = sizeof(delay_req_t)};

static void on_delay_due(notesd_req_t *r)
{
    request_client_gone(r); /* answered all the same: h2o needs the request to end */
    char *body = h2o_mem_alloc_pool(&r->req->pool, 48);
    int len = snprintf(body, 48, "{\"delay_ms\":%ld}", ((delay_req_t *)r->state)->ms);
    respond(r, 200, CT_JSON, body, (size_t)len);
}

/* GET /delay/:ms[?jitter=J] */
int delay_get(notesd_req_t *r)
{
    uint64_t ms = 0, jitter = 0;

    if (knob_path(r, "delay", 0, REQUEST_WAIT_MAX_MS, &ms) < 0 ||
        knob_query(r, "jitter", 0, REQUEST_WAIT_MAX_MS, &jitter) < 0)
        return 0;
    ((delay_req_t *)r->state)->ms = (long)ms;
    uint64_t due = stats_now_ns() + (uint64_t)draw_us((long)ms, (long)jitter, rng_uniform()) * 1000;
    if (request_timer_arm(r, due, on_delay_due) != 0) {
        respond_unavailable(r, "too many pending /delay requests");
        return 0;
    }
    r->on_dispose = request_timer_cancel;
    return 0;
}
