/*
 * delay.c - the known-latency endpoint (see delay.h).
 *
 * Distribution with ?jitter=J: uniform on [ms - J, ms + J] (clamped at 0), so
 * its mean and median are `ms` and its p99 is ms + 0.98 J; with no jitter,
 * every answer is due exactly `ms` after the handler received the request.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "delay.h"
#include "respond.h"
#include "routes.h"
#include "validate.h"

/* The request's side lives in its context (request.h, r->timer), which dies
 * with the request: a request that goes away first leaves the heap then. */
typedef struct pending {
    uint64_t due_ns;
    notesd_req_t *r;
} pending_t;

/* One heap and timer per loop, used only by its thread. */
static __thread pending_t *heap; /* DELAY_MAX_PENDING entries */
static __thread size_t heap_len;
static __thread h2o_socket_t *timer_sock;
static __thread uint64_t armed_for_ns;
static __thread uint64_t rng = 0x853c49e6748fea9bULL;

static double next_uniform(void)
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (double)((rng * 0x2545f4914f6cdd1dULL) >> 11) / 9007199254740992.0;
}

int64_t delay_draw_us(long ms, long jitter_ms, double u)
{
    int64_t us = (int64_t)ms * 1000 + (int64_t)((2 * u - 1) * (double)jitter_ms * 1000);
    return us < 0 ? 0 : us;
}

static void heap_set(size_t i, pending_t p)
{
    heap[i] = p;
    heap[i].r->timer.heap_index = i;
}

static void sift_up(size_t i)
{
    pending_t p = heap[i];
    while (i > 0 && heap[(i - 1) / 2].due_ns > p.due_ns) {
        heap_set(i, heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(i, p);
}

static void sift_down(size_t i)
{
    pending_t p = heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= heap_len)
            break;
        if (c + 1 < heap_len && heap[c + 1].due_ns < heap[c].due_ns)
            c++;
        if (heap[c].due_ns >= p.due_ns)
            break;
        heap_set(i, heap[c]);
        i = c;
    }
    heap_set(i, p);
}

static void heap_remove(size_t i)
{
    heap[i].r->timer.on_due = NULL;
    if (--heap_len == i)
        return;
    heap_set(i, heap[heap_len]);
    sift_down(i);
    sift_up(heap[i].r->timer.heap_index);
}

/* Arms the timerfd for the earliest deadline (or disarms it). */
static void rearm(void)
{
    struct itimerspec its = {{0, 0}, {0, 0}};
    uint64_t due = heap_len > 0 ? heap[0].due_ns : 0;
    if (due == armed_for_ns)
        return;
    if (due != 0) {
        its.it_value.tv_sec = (time_t)(due / 1000000000u);
        its.it_value.tv_nsec = (long)(due % 1000000000u);
    }
    timerfd_settime(h2o_socket_get_fd(timer_sock), TFD_TIMER_ABSTIME, &its, NULL);
    armed_for_ns = due;
}

static void on_timer(h2o_socket_t *sock, const char *err)
{
    uint64_t expirations, now = stats_now_ns();

    if (read(h2o_socket_get_fd(sock), &expirations, sizeof(expirations)) < 0) {
        /* EAGAIN: re-armed before this wake-up was handled; nothing to read. */
    }
    armed_for_ns = 0;
    while (heap_len > 0 && heap[0].due_ns <= now) {
        notesd_req_t *r = heap[0].r;
        void (*on_due)(notesd_req_t *) = r->timer.on_due;
        heap_remove(0);
        on_due(r); /* may arm a new timer for r (a drip's next chunk) */
    }
    rearm();
}

int delay_timer_arm(notesd_req_t *r, uint64_t due_ns, void (*on_due)(notesd_req_t *r))
{
    assert(r->timer.on_due == NULL);
    if (heap_len == DELAY_MAX_PENDING || timer_sock == NULL)
        return -1;
    r->timer.on_due = on_due;
    heap[heap_len].due_ns = due_ns;
    heap[heap_len].r = r;
    heap_len++;
    sift_up(heap_len - 1);
    rearm();
    return 0;
}

void delay_timer_cancel(notesd_req_t *r)
{
    if (r->timer.on_due != NULL) {
        heap_remove(r->timer.heap_index);
        rearm();
    }
}

static void on_delay_due(notesd_req_t *r)
{
    request_client_gone(r); /* answered all the same: h2o needs the request to end */
    char *body = h2o_mem_alloc_pool(&r->req->pool, 48);
    int len = snprintf(body, 48, "{\"delay_ms\":%ld}", r->u.delay.ms);
    respond(r, 200, CT_JSON, body, (size_t)len);
}

/* GET /delay/:ms[?jitter=J] */
int delay_get(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    h2o_iovec_t p = r->param; /* what follows "/delay/" */
    long ms = 0, jitter = 0;

    int digits = p.len > 0 && p.len <= 5;
    for (size_t i = 0; digits && i < p.len; i++) {
        digits = p.base[i] >= '0' && p.base[i] <= '9';
        ms = ms * 10 + (p.base[i] - '0');
    }
    if (!digits || ms > DELAY_MAX_MS) {
        respond_error(r, 400, "delay must be a whole number of milliseconds, 0 to 60000");
        return 0;
    }
    if (req->query_at != SIZE_MAX &&
        validate_query_number(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1,
                              "jitter", DELAY_MAX_MS, &jitter) < 0) {
        respond_error(r, 400, "jitter must be a whole number of milliseconds, 0 to 60000");
        return 0;
    }
    r->u.delay.ms = ms;
    if (delay_timer_arm(r,
                        stats_now_ns() + (uint64_t)delay_draw_us(ms, jitter, next_uniform()) * 1000,
                        on_delay_due) != 0) {
        respond_unavailable(r, "too many pending /delay requests");
        return 0;
    }
    r->on_dispose = delay_timer_cancel;
    return 0;
}

void delay_start(h2o_loop_t *loop)
{
    heap = calloc(DELAY_MAX_PENDING, sizeof(*heap));
    if (heap == NULL)
        abort();
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return; /* /delay then answers 503 */
    timer_sock = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(timer_sock, on_timer);
    rng ^= stats_now_ns();
}

void delay_stop(void)
{
    if (timer_sock != NULL) {
        h2o_socket_read_stop(timer_sock);
        h2o_socket_close(timer_sock);
        timer_sock = NULL;
    }
}
