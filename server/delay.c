/*
 * delay.c - the known-latency endpoint (see delay.h).
 *
 * Distribution with ?jitter=J: uniform on [ms - J, ms + J] (clamped at 0), so
 * its mean and median are `ms` and its p99 is ms + 0.98 J; with no jitter,
 * every answer is due exactly `ms` after the handler received the request.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "delay.h"
#include "http.h"
#include "metrics.h"
#include "respond.h"

typedef struct pending {
    uint64_t due_ns;
    h2o_req_t *req;
    size_t *slot; /* where the request's context records its heap position */
} pending_t;

/* The request's side: a shared allocation in req->pool, so that a request that
 * goes away first can leave the heap. */
typedef struct delay_ctx {
    size_t heap_index; /* SIZE_MAX when not in the heap */
    long ms;
} delay_ctx_t;

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
    *heap[i].slot = i;
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
    *heap[i].slot = SIZE_MAX;
    if (--heap_len == i)
        return;
    heap_set(i, heap[heap_len]);
    sift_down(i);
    sift_up(*heap[i].slot);
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
    uint64_t expirations, now = metrics_now_ns();

    if (read(h2o_socket_get_fd(sock), &expirations, sizeof(expirations)) < 0) {
        /* EAGAIN: re-armed before this wake-up was handled; nothing to read. */
    }
    armed_for_ns = 0;
    while (heap_len > 0 && heap[0].due_ns <= now) {
        h2o_req_t *req = heap[0].req;
        delay_ctx_t *ctx = H2O_STRUCT_FROM_MEMBER(delay_ctx_t, heap_index, heap[0].slot);
        heap_remove(0);
        char *body = h2o_mem_alloc_pool(&req->pool, 48);
        int len = snprintf(body, 48, "{\"delay_ms\":%ld}", ctx->ms);
        respond(req, 200, CT_JSON, body, (size_t)len);
    }
    rearm();
}

static void on_ctx_dispose(void *p)
{
    delay_ctx_t *ctx = p;
    if (ctx->heap_index != SIZE_MAX) {
        heap_remove(ctx->heap_index);
        rearm();
    }
}

/* Reads a whole number from a query parameter; -1 when absent, -2 when bad. */
static long query_number(h2o_req_t *req, const char *name)
{
    if (req->query_at == SIZE_MAX)
        return -1;
    size_t name_len = strlen(name);
    const char *q = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
    while (q < end) {
        const char *stop = memchr(q, '&', (size_t)(end - q));
        if (stop == NULL)
            stop = end;
        if ((size_t)(stop - q) > name_len && memcmp(q, name, name_len) == 0 && q[name_len] == '=') {
            long v = 0;
            const char *p = q + name_len + 1;
            if (p == stop)
                return -2;
            for (; p < stop; p++) {
                if (*p < '0' || *p > '9' || v > DELAY_MAX_MS)
                    return -2;
                v = v * 10 + (*p - '0');
            }
            return v;
        }
        q = stop + 1;
    }
    return -1;
}

/* GET /delay/:ms[?jitter=J] */
static int on_delay(h2o_handler_t *self, h2o_req_t *req)
{
    h2o_iovec_t p = req->path_normalized;
    long ms = 0;

    metrics_request_begin(req, ROUTE_DELAY);
    if (!req_is_get(req)) {
        respond_method_not_allowed(req, "GET, HEAD");
        return 0;
    }
    if (p.len <= 7 || p.len > 7 + 5) {
        respond_error(req, 400, "delay must be a whole number of milliseconds, 0 to 60000");
        return 0;
    }
    for (size_t i = 7; i < p.len; i++) {
        if (p.base[i] < '0' || p.base[i] > '9') {
            respond_error(req, 400, "delay must be a whole number of milliseconds, 0 to 60000");
            return 0;
        }
        ms = ms * 10 + (p.base[i] - '0');
    }
    long jitter = query_number(req, "jitter");
    if (ms > DELAY_MAX_MS || jitter == -2 || jitter > DELAY_MAX_MS) {
        respond_error(req, 400,
                      "delay and jitter must be whole numbers of milliseconds, 0 to 60000");
        return 0;
    }
    if (heap_len == DELAY_MAX_PENDING || timer_sock == NULL) {
        respond_unavailable(req, "too many pending /delay requests");
        return 0;
    }
    delay_ctx_t *ctx = h2o_mem_alloc_shared(&req->pool, sizeof(*ctx), on_ctx_dispose);
    ctx->ms = ms;
    ctx->heap_index = heap_len;
    uint64_t due = metrics_now_ns() +
                   (uint64_t)delay_draw_us(ms, jitter < 0 ? 0 : jitter, next_uniform()) * 1000;
    heap[heap_len].due_ns = due;
    heap[heap_len].req = req;
    heap[heap_len].slot = &ctx->heap_index;
    heap_len++;
    sift_up(heap_len - 1);
    rearm();
    return 0;
}

void delay_register(h2o_hostconf_t *host)
{
    http_register(host, "/delay", on_delay);
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
    rng ^= metrics_now_ns();
}

void delay_stop(void)
{
    if (timer_sock != NULL) {
        h2o_socket_read_stop(timer_sock);
        h2o_socket_close(timer_sock);
        timer_sock = NULL;
    }
}
