/*
 * routes_fixture.c - the fixture routes (see routes_fixture.h): /fault/:status,
 * /bytes/:n, /drip and /stall. Each answer is a known function of its request
 * and of counters kept per loop, so a load tool's figures can be checked
 * against the exact truth. Only /stall blocks the loop, because a stalled
 * server is what it models.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "knob.h"
#include "respond.h"
#include "routes.h"
#include "routes_fixture.h"
#include "validate.h"

#define CT_OCTETS "application/octet-stream"

/* The pattern, long enough that FIXTURE_CHUNK bytes can start at any phase;
 * written once, before the first streamed body (pattern_once), then only read,
 * by every loop. */
static char pattern[FIXTURE_CHUNK + FIXTURE_PATTERN_PERIOD];
static pthread_once_t pattern_once = PTHREAD_ONCE_INIT;

static void fill_pattern(void)
{
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (char)(i % FIXTURE_PATTERN_PERIOD);
}

/* A request's state (r->state), whichever of the routes it is. */
typedef struct fixture_req {
    notesd_req_t *r;           /* the request it belongs to */
    h2o_generator_t generator; /* h2o calls its proceed for the next chunk */
    uint64_t sent, total;      /* body bytes handed to h2o, and the body's length */
    uint32_t chunks;           /* /drip: instants the body is cut at; 0: all at once */
    uint32_t duration_ms;      /* /drip: from the first chunk to the last */
    uint8_t action;            /* /fault: enum fault_action */
    int status;                /* /fault: the status this request answers */
} fixture_req_t;

/* One counter per (status, every) pair on each loop, so concurrent schedules
 * keep their own exact fractions. */
typedef struct fault_counter {
    int status;
    uint64_t every;
    uint64_t seen; /* requests so far; the Nth, 2Nth, ... get the fault */
} fault_counter_t;

/* The loop's state (r->loop_state), used by its own thread only: the /fault
 * counters, and the one /stall schedule: stall k (k = 1, 2, ...) starts at
 * start + k * every while k * every <= for, and blocks the loop for `stall`;
 * its entry is on the loop's timers while a stall is due. */
typedef struct fixture_loop {
    fault_counter_t counters[FIXTURE_FAULT_MAX_SCHEDULES];
    size_t ncounters;
    struct stall {
        timer_entry_t entry; /* the next stall */
        timers_t *timers;    /* the loop's, and its counters */
        stats_loop_t *stats;
        uint64_t start_ns, every_ns, stall_ns, for_ns;
        uint64_t next; /* k of the next stall; 0: no schedule */
    } stall;
} fixture_loop_t;

static void on_stall_due(timer_entry_t *entry);

static void fixture_loop_init(void *state, const request_loop_t *loop)
{
    fixture_loop_t *l = state;
    l->stall.timers = loop->timers;
    l->stall.stats = loop->stats;
    l->stall.entry.cb = on_stall_due;
}

static void fixture_loop_dispose(void *state)
{
    fixture_loop_t *l = state;
    timers_unlink(l->stall.timers, &l->stall.entry);
}

const route_state_t fixture_state = {.request_size = sizeof(fixture_req_t),
                                     .loop_size = sizeof(fixture_loop_t),
                                     .loop_init = fixture_loop_init,
                                     .loop_dispose = fixture_loop_dispose};

/* The request's state, tied to the request (generators are handed the state alone). */
static fixture_req_t *fixture_of(notesd_req_t *r)
{
    fixture_req_t *f = (fixture_req_t *)r->state;
    f->r = r;
    return f;
}

/* ---- streamed bodies: /bytes/:n and /drip --------------------------------------------------- */

static void stream_pump(notesd_req_t *r);

/* A drip instant: the next chunk goes out, unless the client has gone while it
 * waited (HALF_CLOSE decides for a half-closed one); then the body ends short,
 * as a broken stream, and the request keeps the status its headers carried. */
static void on_drip_due(notesd_req_t *r)
{
    if (request_client_gone(r)) {
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    }
    stream_pump(r);
}

/* Hands h2o the next chunk that is due, or arms the timer for the next drip
 * instant. Runs when the response starts, when h2o has written the previous
 * chunk (proceed), and when a drip instant comes; never while a chunk is in
 * h2o's hands, which is h2o's rule for h2o_send. */
static void stream_pump(notesd_req_t *r)
{
    fixture_req_t *f = fixture_of(r);
    uint64_t due = f->total;

    if (f->chunks > 1) {
        /* Chunk k of `chunks` is due at k * duration / (chunks - 1): the first
         * with the headers, the last at the end of the duration. */
        uint64_t span_ns = (uint64_t)f->duration_ms * 1000000;
        uint64_t passed = (stats_now_ns() - r->start_ns) * (f->chunks - 1) / span_ns + 1;
        if (passed < f->chunks)
            due = f->total * passed / f->chunks;
        if (due <= f->sent) {
            uint64_t at = r->start_ns + span_ns * passed / (f->chunks - 1);
            if (request_timer_arm(r, at, on_drip_due) != 0) {
                /* No timer left: end the response short, as a broken stream. */
                h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
            }
            return;
        }
    }
    size_t len = due - f->sent < FIXTURE_CHUNK ? (size_t)(due - f->sent) : FIXTURE_CHUNK;
    h2o_iovec_t buf = h2o_iovec_init(pattern + f->sent % FIXTURE_PATTERN_PERIOD, len);
    f->sent += len;
    h2o_send(r->req, &buf, 1,
             f->sent == f->total ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void on_stream_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
    stream_pump(H2O_STRUCT_FROM_MEMBER(fixture_req_t, generator, generator)->r);
}

/* Starts a 200 of `total` pattern bytes, cut into `chunks` pieces spread over
 * `duration_ms` (chunks 0 or 1: as fast as the client reads). */
static void stream_start(notesd_req_t *r, uint64_t total, uint32_t chunks, uint32_t duration_ms)
{
    fixture_req_t *f = fixture_of(r);
    h2o_req_t *req = r->req;

    f->total = total;
    f->chunks = chunks;
    f->duration_ms = duration_ms;
    f->generator.proceed = on_stream_proceed;
    /* A drip's timer refers to the request until it fires. */
    r->on_dispose = request_timer_cancel;
    pthread_once(&pattern_once, fill_pattern);
    respond_start(r, 200, CT_OCTETS, total);
    h2o_start_response(req, &f->generator);
    if (req_is_head(req))
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    else
        stream_pump(r);
}

/* GET /bytes/:n */
int fixture_bytes(notesd_req_t *r)
{
    uint64_t n;
    if (knob_path(r, "n", 0, FIXTURE_MAX_BYTES, &n) == 0)
        stream_start(r, n, 0, 0);
    return 0;
}

/* GET /drip?bytes=B&duration_ms=D: B bytes (default 10) evenly over D ms
 * (default 2000), the first chunk with the headers and the last at D. */
int fixture_drip(notesd_req_t *r)
{
    uint64_t bytes = 10, duration_ms = 2000;
    if (knob_query(r, "bytes", 1, FIXTURE_DRIP_MAX_BYTES, &bytes) < 0 ||
        knob_query(r, "duration_ms", 0, FIXTURE_DRIP_MAX_MS, &duration_ms) < 0)
        return 0;
    /* One chunk per FIXTURE_DRIP_TICK_MS at most, and never an empty one. */
    uint64_t chunks = duration_ms / FIXTURE_DRIP_TICK_MS + 1;
    if (chunks > bytes)
        chunks = bytes;
    stream_start(r, bytes, (uint32_t)chunks, (uint32_t)duration_ms);
    return 0;
}

/* ---- /fault/:status ------------------------------------------------------------------------- */

enum fault_action {
    FAULT_ANSWER,        /* the status with {"status":S} */
    FAULT_RESET,         /* a TCP reset instead of an answer */
    FAULT_CLOSE_HEADERS, /* the headers (with Content-Length), then the connection closes */
};

static fault_counter_t *fault_counter(fixture_loop_t *l, int status, uint64_t every)
{
    for (size_t i = 0; i < l->ncounters; i++)
        if (l->counters[i].status == status && l->counters[i].every == every)
            return &l->counters[i];
    if (l->ncounters == FIXTURE_FAULT_MAX_SCHEDULES)
        return NULL;
    fault_counter_t *c = &l->counters[l->ncounters++];
    *c = (fault_counter_t){status, every, 0};
    return c;
}

static void fault_answer(notesd_req_t *r)
{
    fixture_req_t *f = fixture_of(r);
    h2o_req_t *req = r->req;
    static h2o_generator_t generator = {NULL, NULL};
    char *body = h2o_mem_alloc_pool(&req->pool, 24);
    int len = snprintf(body, 24, "{\"status\":%d}", f->status);

    switch ((enum fault_action)f->action) {
    case FAULT_ANSWER:
        respond(r, f->status, CT_JSON, body, (size_t)len);
        return;
    case FAULT_CLOSE_HEADERS:
        /* An error state after the headers: HTTP/1 closes the connection
         * without the body; HTTP/2 follows the HEADERS with RST_STREAM. */
        respond_start(r, f->status, CT_JSON, (size_t)len);
        h2o_start_response(req, &generator);
        h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    case FAULT_RESET: {
        /* What SO_LINGER 0 + close does, but the descriptor stays h2o's, which
         * closes it later: connect() to AF_UNSPEC dissolves the TCP connection,
         * and the kernel sends RST now (with SO_LINGER 0, also for data still
         * queued). Nothing of an answer leaves. SO_LINGER 0 also marks the
         * socket as reset by notesd: the other streams of an HTTP/2
         * connection are not counted as clients gone (request.c). */
        int fd = h2o_socket_get_fd(request_socket(req));
        struct linger linger = {1, 0};
        struct sockaddr unspec = {.sa_family = AF_UNSPEC};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, sizeof(linger));
        if (connect(fd, &unspec, sizeof(unspec)) != 0) {
            /* Not TCP: nothing else to do; the write below fails or closes. */
        }
        /* HTTP/2 reads all the time and sees the dead socket at once; HTTP/1
         * does not read while a handler runs, so a final write, which fails,
         * makes it close the connection. */
        if (req->version < 0x200) {
            respond_start(r, f->status, CT_JSON, 0);
            h2o_start_response(req, &generator);
            h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
        }
        return;
    }
    }
}

/* A delayed fault's deadline: a client that left meanwhile is recorded as 0. */
static void on_fault_due(notesd_req_t *r)
{
    request_client_gone(r);
    fault_answer(r);
}

/* Clean-up: a pending delay leaves the heap; a reset is counted as status 0,
 * since no response reached the client. */
static void on_fault_dispose(notesd_req_t *r)
{
    request_timer_cancel(r);
    if (fixture_of(r)->action == FAULT_RESET) {
        r->req->res.status = 0;
        r->own_reset = 1; /* not a client gone */
    }
}

/* GET /fault/:status[?every=N][&delay_ms=D][&action=reset|close_after_headers] */
int fixture_fault(notesd_req_t *r)
{
    fixture_req_t *f = fixture_of(r);
    uint64_t status, every = 1, delay_ms = 0;
    enum fault_action action = FAULT_ANSWER;
    const char *v;
    size_t vlen;

    if (knob_path(r, "status", 200, 599, &status) < 0 ||
        knob_query(r, "every", 1, FIXTURE_FAULT_MAX_EVERY, &every) < 0 ||
        knob_query(r, "delay_ms", 0, REQUEST_WAIT_MAX_MS, &delay_ms) < 0)
        return 0;
    h2o_iovec_t query = request_query(r);
    if (validate_query_param(query.base, query.len, "action", &v, &vlen) > 0) {
        if (v != NULL && h2o_memis(v, vlen, H2O_STRLIT("reset"))) {
            action = FAULT_RESET;
        } else if (v != NULL && h2o_memis(v, vlen, H2O_STRLIT("close_after_headers"))) {
            action = FAULT_CLOSE_HEADERS;
        } else {
            respond_error(r, 400, "action must be reset or close_after_headers");
            return 0;
        }
    }

    /* The fault goes to every Nth request of this (status, every) on this
     * loop, counted on arrival; the others are a plain 200. */
    int hit = 1;
    if (every > 1) {
        fault_counter_t *c = fault_counter(r->loop_state, (int)status, every);
        if (c == NULL) {
            respond_unavailable(r, "too many distinct /fault every= schedules on this loop");
            return 0;
        }
        hit = ++c->seen % every == 0;
    }
    f->status = hit ? (int)status : 200;
    f->action = hit ? (uint8_t)action : FAULT_ANSWER;
    r->on_dispose = on_fault_dispose;
    if (delay_ms == 0) {
        fault_answer(r);
    } else if (request_timer_arm(r, r->start_ns + delay_ms * 1000000, on_fault_due) != 0) {
        f->action = FAULT_ANSWER;
        respond_unavailable(r, "too many pending delayed requests");
    }
    return 0;
}

/* ---- /stall --------------------------------------------------------------------------------- */

/* Blocks the loop until `until_ns`, on purpose: this is the stall. */
static void pause_loop(uint64_t until_ns)
{
    struct timespec ts = {(time_t)(until_ns / 1000000000u), (long)(until_ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void on_stall_due(timer_entry_t *entry)
{
    struct stall *stall = H2O_STRUCT_FROM_MEMBER(struct stall, entry, entry);
    uint64_t begin = stats_now_ns();
    pause_loop(begin + stall->stall_ns);
    uint64_t end = stats_now_ns();
    STAT_ADD(stall->stats->stalls, 1);
    STAT_ADD(stall->stats->stall_ns, end - begin);
    stall->next++;
    if (stall->next * stall->every_ns <= stall->for_ns)
        timers_link(stall->timers, &stall->entry, stall->start_ns + stall->next * stall->every_ns);
    else
        stall->next = 0;
}

/* GET /stall?ms=S&every_ms=P&for_ms=T: answers at once and replaces this
 * loop's schedule; for_ms=0 cancels it (ms and every_ms may then be left out). */
int fixture_stall(notesd_req_t *r)
{
    uint64_t ms = 0, every_ms = 0, for_ms = 0;
    int found_for = knob_query(r, "for_ms", 0, FIXTURE_STALL_MAX_FOR_MS, &for_ms);
    if (found_for < 0)
        return 0;
    if (found_for == 0) {
        respond_error(r, 400, "for_ms is required (0 to 60000; 0 cancels)");
        return 0;
    }
    int found_ms = knob_query(r, "ms", 1, FIXTURE_STALL_MAX_MS, &ms);
    if (found_ms < 0)
        return 0;
    int found_every = knob_query(r, "every_ms", 2, FIXTURE_STALL_MAX_EVERY_MS, &every_ms);
    if (found_every < 0)
        return 0;
    if (for_ms > 0 && (found_ms == 0 || found_every == 0)) {
        respond_error(r, 400,
                      found_ms == 0 ? "ms is required (1 to 1000)"
                                    : "every_ms is required (at least 2 * ms)");
        return 0;
    }
    if (found_every == 1 && every_ms < 2 * ms) {
        respond_error(r, 400, "every_ms must be at least 2 * ms");
        return 0;
    }
    struct stall *stall = &((fixture_loop_t *)r->loop_state)->stall;
    timers_unlink(stall->timers, &stall->entry);
    stall->next = 0;
    if (for_ms > 0 && every_ms <= for_ms) {
        stall->start_ns = r->start_ns;
        stall->every_ns = every_ms * 1000000;
        stall->stall_ns = ms * 1000000;
        stall->for_ns = for_ms * 1000000;
        stall->next = 1;
        timers_link(stall->timers, &stall->entry, stall->start_ns + stall->every_ns);
    }
    char *body = h2o_mem_alloc_pool(&r->req->pool, 80);
    int len =
        snprintf(body, 80, "{\"stall_ms\":%llu,\"every_ms\":%llu,\"for_ms\":%llu}",
                 (unsigned long long)ms, (unsigned long long)every_ms, (unsigned long long)for_ms);
    respond(r, 200, CT_JSON, body, (size_t)len);
    return 0;
}
