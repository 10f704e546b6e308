/*
 * routes_ws.c - the WebSocket fixture routes: GET /ws/echo, which sends every
 * message back as it came, and GET /ws/feed?rate=N&count=M&size=B, which
 * sends M messages of B bytes at N per second on the loop's timers and then
 * closes with 1000. Each answer is a known function of the request, so a
 * load tool's message counts, gaps and latency can be checked against the
 * truth (feed.h has the feed's). The handshake, limits, closes and counters
 * are ws.c's; this file decides what a connection does with them, and names
 * its routes to ws.c (ws_routes: each route's counters and label).
 */
#include <stdio.h>
#include <time.h>
#include "feed.h"
#include "knob.h"
#include "respond.h"
#include "routes.h"
#include "ws.h"

/* The WebSocket routes, as ws.c counts them: a slot of every loop's counters
 * each, named by its row's label in the route table. The metrics page writes
 * their series in this order. */
enum { ECHO, FEED };
const ws_route_t ws_routes[WS_NROUTES] = {
    [ECHO] = {.label = &routes[ROUTE_WS_ECHO].label, .slot = ECHO},
    [FEED] = {.label = &routes[ROUTE_WS_FEED].label, .slot = FEED},
};
_Static_assert(WS_NROUTES <= WS_ROUTES_MAX, "a slot of ws_loop_stats_t per WebSocket route");

/* The connection's limits: the WS_* settings, which a request may lower
 * (never raise) with ?max_message_bytes=, max_fragment_bytes=, max_messages=
 * and idle_timeout_ms=, for a close that comes when a test wants it. */
static int read_limits(notesd_req_t *r, request_ws_limits_t *limits)
{
    const request_ws_limits_t *max = &r->settings->ws;
    *limits = *max;
    return knob_query(r, "max_message_bytes", 1, max->max_message_bytes,
                      &limits->max_message_bytes) < 0 ||
                   knob_query(r, "max_fragment_bytes", 1, max->max_fragment_bytes,
                              &limits->max_fragment_bytes) < 0 ||
                   knob_query(r, "max_messages", 1,
                              max->max_messages != 0 ? max->max_messages : INT64_MAX,
                              &limits->max_messages) < 0 ||
                   knob_query(r, "idle_timeout_ms", 1, max->idle_timeout_ms,
                              &limits->idle_timeout_ms) < 0
               ? -1
               : 0;
}

/* ---- /ws/echo ----------------------------------------------------------------------------- */

static void on_echo_message(ws_conn_t *c, int binary, const uint8_t *msg, size_t len)
{
    if (ws_send(c, binary, msg, len) != 0) {
        /* closing: the message is not sent */
    }
}

static const ws_handlers_t echo_handlers = {.on_message = on_echo_message};

/* GET /ws/echo[?max_message_bytes=&max_fragment_bytes=&max_messages=&idle_timeout_ms=] */
int ws_echo_get(notesd_req_t *r)
{
    request_ws_limits_t limits;
    if (read_limits(r, &limits) == 0)
        ws_accept(r, r->loop->ws, &ws_routes[ECHO], &limits, &echo_handlers, NULL, 0);
    return 0;
}

/* ---- /ws/feed ----------------------------------------------------------------------------- */

typedef struct feed {
    uint64_t next;  /* seq of the next message; count + 1 when all are out */
    uint64_t count; /* messages in the feed */
    uint32_t rate;  /* per second */
    uint32_t size;  /* bytes of each */
} feed_t;

/* Sends every message that is due (several when the loop was late: each
 * says how late), leaves out those the client has no room for (ws_skip: a
 * gap in seq), then waits for the next one, or closes after the last. */
static void feed_send_due(ws_conn_t *c)
{
    /* On the stack, not in thread-local storage: every thread's TLS block is
     * zeroed when the thread starts, so 64 KiB there would be 64 KiB of private
     * memory in every notesd, feeds or not; stack pages are touched only as far
     * as a message is written. wslay copies the message when it is queued. */
    char buf[FEED_MAX_BYTES];
    feed_t *f = ws_data(c);
    uint64_t start = ws_opened_ns(c), now = stats_now_ns();

    while (f->next <= f->count && feed_due_ns(start, f->rate, f->next) <= now) {
        if (ws_is_backed_up(c)) {
            ws_skip(c);
        } else {
            struct timespec wall;
            clock_gettime(CLOCK_REALTIME, &wall);
            int64_t sent_us = (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000;
            uint64_t late_us = (now - feed_due_ns(start, f->rate, f->next)) / 1000;
            size_t len = feed_render(buf, f->size, f->next, f->count, sent_us, late_us);
            if (ws_send(c, 0, buf, len) != 0)
                return; /* closing */
        }
        f->next++;
    }
    if (f->next > f->count)
        ws_close(c, WS_CLOSE_DONE);
    else
        ws_timer_arm(c, feed_due_ns(start, f->rate, f->next), feed_send_due);
}

static const ws_handlers_t feed_handlers = {.on_open = feed_send_due};

/* GET /ws/feed?rate=N&count=M&size=B: M (1..1000000, default 10) messages of
 * B bytes (128..65536, default 128), N per second (1..10000, default 10),
 * the first as soon as the connection opens; then a close with 1000. */
int ws_feed_get(notesd_req_t *r)
{
    uint64_t rate = 10, count = 10, size = FEED_MIN_BYTES;
    request_ws_limits_t limits;
    if (knob_query(r, "rate", 1, FEED_MAX_RATE, &rate) < 0 ||
        knob_query(r, "count", 1, FEED_MAX_COUNT, &count) < 0 ||
        knob_query(r, "size", FEED_MIN_BYTES, FEED_MAX_BYTES, &size) < 0 ||
        read_limits(r, &limits) != 0)
        return 0;
    /* copied into the connection, which outlives the request */
    feed_t feed = {.next = 1, .count = count, .rate = (uint32_t)rate, .size = (uint32_t)size};
    return ws_accept(r, r->loop->ws, &ws_routes[FEED], &limits, &feed_handlers, &feed,
                     sizeof(feed));
}
