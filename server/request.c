/*
 * request.c - the request context's life: begin, timer, Server-Timing,
 * dispose; and the loops' requests added up for the metrics page (see request.h).
 */
#include <assert.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <cJSON.h>
#include "log.h"
#include "request.h"

const char *const request_method_labels[REQUEST_NUM_METHODS] = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other"};

static uint8_t method_index(h2o_iovec_t m)
{
    for (uint8_t i = 0; i < REQUEST_NUM_METHODS - 1; i++)
        if (h2o_memis(m.base, m.len, request_method_labels[i], strlen(request_method_labels[i])))
            return i;
    return REQUEST_NUM_METHODS - 1;
}

/* The debug log's line for one measured request: method, target, status,
 * duration, and the trace id when it came with one. */
static void log_request(notesd_req_t *r, double seconds, const traceparent_t *trace)
{
    h2o_req_t *req = r->req;
    char id[TRACEPARENT_TRACE_ID_HEX];
    if (trace != NULL)
        traceparent_trace_id_hex(trace->trace_hi, trace->trace_lo, id);
    log_debug("%.*s %.*s %d %.3f ms%s%.*s", (int)req->method.len, req->method.base,
              req->path.len > 256 ? 256 : (int)req->path.len, req->path.base, r->status,
              seconds * 1e3, trace != NULL ? " trace=" : "", trace != NULL ? (int)sizeof(id) : 0,
              id);
}

enum client_state {
    CLIENT_THERE,       /* the connection is established */
    CLIENT_HALF_CLOSED, /* the client sent FIN: it sends no more, it may still read */
    CLIENT_RESET,       /* the connection was reset, or is closing */
};

/* The request's client, as its TCP connection stands: one getsockopt, which
 * copies out only tcp_info's first byte, the state. Pipelined requests the
 * client sent before its FIN are already in h2o's buffer. */
static enum client_state client_state(notesd_req_t *r)
{
    h2o_socket_t *sock = request_socket(r->req);
    uint8_t state;
    socklen_t len = sizeof(state);

    if (sock == NULL ||
        getsockopt(h2o_socket_get_fd(sock), IPPROTO_TCP, TCP_INFO, &state, &len) != 0 || len < 1)
        return CLIENT_THERE;
    if (state == TCP_ESTABLISHED)
        return CLIENT_THERE;
    return state == TCP_CLOSE_WAIT ? CLIENT_HALF_CLOSED : CLIENT_RESET;
}

/* 1 if notesd itself reset the request's connection (/fault's reset, which
 * marks the socket with SO_LINGER 0: no other socket of notesd has it): the
 * other streams of an HTTP/2 connection end with it, and their clients did
 * not leave. Asked only of a request ending without an answer. */
static int reset_by_notesd(notesd_req_t *r)
{
    h2o_socket_t *sock = request_socket(r->req);
    struct linger linger;
    socklen_t len = sizeof(linger);

    return sock != NULL &&
           getsockopt(h2o_socket_get_fd(sock), SOL_SOCKET, SO_LINGER, &linger, &len) == 0 &&
           linger.l_onoff && linger.l_linger == 0;
}

static int64_t timeval_us(const struct timeval *tv)
{
    return (int64_t)tv->tv_sec * 1000000 + tv->tv_usec;
}

/* The wall clock is read once, now; the start is that less the monotonic
 * time the request took, so both are microseconds of the same clock. h2o's
 * own timestamps (the connection's accept, the head's first bytes) come from
 * the loop's cached clock, refreshed when the loop's millisecond moves. */
void request_journal_fill(notesd_req_t *r, uint64_t now_ns, journal_record_t *rec)
{
    h2o_req_t *req = r->req;
    h2o_conn_t *conn = req->conn;
    struct timespec wall;
    traceparent_t trace;
    int traced = request_trace(r, &trace);

    /* every field set below; request_id's bytes past its length unused */
    clock_gettime(CLOCK_REALTIME, &wall);
    rec->seq = 0;
    rec->kind = JOURNAL_HTTP;
    rec->loop = (uint8_t)r->loop->index;
    rec->conn_id = conn->id;
    rec->conn_at_us = timeval_us(&conn->connected_at);
    rec->arrived_us = timeval_us(&req->timestamps.request_begin_at);
    rec->ended_us = (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000;
    rec->started_us = rec->ended_us - (int64_t)((now_ns - r->start_ns) / 1000);
    h2o_socket_t *sock = request_socket(req);
    rec->proto = (uint8_t)((req->version >= 0x200 ? JOURNAL_H2 : JOURNAL_H1) |
                           (sock != NULL && sock->ssl != NULL ? JOURNAL_TLS : 0));
    rec->stream_id = 0;
    if (req->version >= 0x200 && conn->callbacks->log_.http2.stream_id != NULL) {
        /* h2o's access-log callback: the id as text, in the request's pool */
        h2o_iovec_t id = conn->callbacks->log_.http2.stream_id(req);
        for (size_t k = 0; k < id.len && id.base[k] >= '0' && id.base[k] <= '9'; k++)
            rec->stream_id = rec->stream_id * 10 + (uint32_t)(id.base[k] - '0');
    }
    rec->method = method_index(req->method);
    rec->route = r->route;
    rec->status = (uint16_t)r->status;
    rec->bytes_in = req->entity.base != NULL ? (uint32_t)req->entity.len : 0;
    rec->bytes_out = (uint32_t)req->bytes_sent;
    rec->query_us = (uint32_t)(r->db_ns / 1000);
    rec->wait_us = (uint32_t)(r->wait_ns / 1000);
    rec->answer_us =
        r->answered_ns > r->start_ns ? (uint32_t)((r->answered_ns - r->start_ns) / 1000) : 0;
    rec->trace_hi = traced ? trace.trace_hi : 0;
    rec->trace_lo = traced ? trace.trace_lo : 0;
    rec->request_id_len = rec->request_id_cut = 0;
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
    if (i >= 0)
        journal_set_request_id(rec, req->headers.entries[i].value.base,
                               req->headers.entries[i].value.len);
}

/* Runs when h2o disposes of the request: after its response was written, or
 * when the connection closed first (status 0). */
static void on_request_disposed(void *p)
{
    notesd_req_t *r = p;
    traceparent_t trace;

    if (r->on_dispose != NULL)
        r->on_dispose(r);
    if (r->stats == NULL)
        return;
    /* A half-closed client that closed entirely resets the connection when the
     * answer reaches it: on loopback, before h2o disposes of the request. */
    if (r->half_closed && r->gone == REQUEST_PRESENT && client_state(r) == CLIENT_RESET) {
        r->gone = REQUEST_GONE_RESET;
        r->unanswered = 1;
    }
    r->status = r->unanswered ? 0 : r->req->res.status;
    if (r->status == 0 && r->gone == REQUEST_PRESENT && !r->own_reset && !reset_by_notesd(r))
        r->gone = REQUEST_GONE_ABORTED;
    if (r->gone != REQUEST_PRESENT)
        STAT_ADD(r->stats->clients_gone[r->gone - 1], 1);
    uint64_t now = stats_now_ns();
    double seconds = (double)(now - r->start_ns) / 1e9;
    uint8_t method = method_index(r->req->method);
    int traced = request_trace(r, &trace);
    if (!traced)
        stats_http_observe(r->stats, r->route, method, r->status, seconds);
    else
        stats_http_observe_traced(r->stats, r->route, method, r->status, seconds, trace.trace_hi,
                                  trace.trace_lo);
    if (log_level_current >= LOG_DEBUG)
        log_request(r, seconds, traced ? &trace : NULL);
    if (r->loop->journal != NULL) {
        journal_record_t rec;
        request_journal_fill(r, now, &rec);
        journal_add(r->loop->journal, &rec);
    }
    STAT_SUB(r->stats->in_flight, 1);
}

int request_trace(notesd_req_t *r, traceparent_t *out)
{
    if (r->trace_state == REQUEST_TRACE_NONE)
        return 0;
    const h2o_headers_t *headers = &r->req->headers;
    for (size_t i = 0; i != headers->size; i++) {
        const h2o_iovec_t *name = headers->entries[i].name;
        if (name->len == 11 && memcmp(name->base, "traceparent", 11) == 0) {
            const h2o_iovec_t *v = &headers->entries[i].value;
            if (traceparent_parse(v->base, v->len, out) != 0)
                break;
            r->trace_state = REQUEST_TRACE_FOUND;
            return 1;
        }
    }
    r->trace_state = REQUEST_TRACE_NONE;
    return 0;
}

notesd_req_t *request_begin(h2o_req_t *req, uint8_t route, size_t state_size,
                            const request_loop_t *loop, int measured,
                            const request_settings_t *settings)
{
    notesd_req_t *r =
        h2o_mem_alloc_shared(&req->pool, sizeof(*r) + state_size, on_request_disposed);
    memset(r, 0, sizeof(*r) + state_size);
    r->req = req;
    r->settings = settings;
    r->loop = loop;
    r->stats = measured ? loop->stats : NULL;
    r->route = route;
    r->start_ns = stats_now_ns();
    if (measured)
        STAT_ADD(r->stats->in_flight, 1);
    return r;
}

const route_state_t request_db_state = {.request_size = sizeof(struct request_db)};

/* request_db's clean-up. A query the pool never took has no pool yet. */
static void on_db_dispose(notesd_req_t *r)
{
    struct request_db *db = (struct request_db *)r->state;
    r->wait_ns = db->query.wait_ns;
    if (db->query.pool != NULL)
        pool_query_cancel(db->query.pool, &db->query);
    cJSON_Delete(db->input.json);
}

struct request_db *request_db(notesd_req_t *r, int statement, pool_query_cb cb)
{
    struct request_db *db = (struct request_db *)r->state;
    r->on_dispose = on_db_dispose;
    db->query.statement = statement;
    db->query.cb = cb;
    db->query.data = r;
    return db;
}

h2o_iovec_t request_query(const notesd_req_t *r)
{
    const h2o_req_t *req = r->req;
    if (req->query_at == SIZE_MAX)
        return h2o_iovec_init("", 0);
    return h2o_iovec_init(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1);
}

static void on_request_timer(timer_entry_t *entry)
{
    notesd_req_t *r = H2O_STRUCT_FROM_MEMBER(notesd_req_t, timer.entry, entry);
    r->timer.on_due(r);
}

int request_timer_arm(notesd_req_t *r, uint64_t due_ns, void (*on_due)(notesd_req_t *r))
{
    timers_t *timers = r->loop->timers;
    assert(!timers_is_linked(&r->timer.entry));
    if (timers_pending(timers) >= REQUEST_TIMERS_MAX)
        return -1;
    r->timer.entry.cb = on_request_timer;
    r->timer.timers = timers;
    r->timer.on_due = on_due;
    timers_link(timers, &r->timer.entry, due_ns);
    return 0;
}

void request_timer_cancel(notesd_req_t *r)
{
    if (r->timer.timers != NULL)
        timers_unlink(r->timer.timers, &r->timer.entry);
}

int request_client_gone(notesd_req_t *r)
{
    switch (client_state(r)) {
    case CLIENT_THERE:
        return 0;
    case CLIENT_HALF_CLOSED:
        if (r->settings->answer_half_closed) {
            r->half_closed = 1;
            return 0;
        }
        r->gone = REQUEST_GONE_HALF_CLOSED;
        break;
    case CLIENT_RESET:
        r->gone = REQUEST_GONE_RESET;
        break;
    }
    /* Requests pipelined behind this one are dropped unread, not run for nobody. */
    r->req->http1_is_persistent = 0;
    r->unanswered = !r->started;
    h2o_socket_t *sock = request_socket(r->req);
    if (sock != NULL)
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
    return 1;
}

/* Writes a duration as milliseconds with three decimals (microseconds,
 * truncated): integer formatting, since this runs on every response and
 * printf's floating point is the costly kind. Returns the end. */
static char *put_ms(char *p, uint64_t ns)
{
    uint64_t us = ns / 1000;
    char digits[24], *d = digits + sizeof(digits);
    uint64_t ms = us / 1000;
    do {
        *--d = (char)('0' + ms % 10);
        ms /= 10;
    } while (ms != 0);
    memcpy(p, d, (size_t)(digits + sizeof(digits) - d));
    p += digits + sizeof(digits) - d;
    *p++ = '.';
    *p++ = (char)('0' + us % 1000 / 100);
    *p++ = (char)('0' + us % 100 / 10);
    *p++ = (char)('0' + us % 10);
    return p;
}

void request_add_server_timing(notesd_req_t *r)
{
    if (r->timing_sent || r->stats == NULL || !r->settings->server_timing)
        return;
    r->timing_sent = 1;
    h2o_req_t *req = r->req;
    uint64_t total_ns = stats_now_ns() - r->start_ns;
    traceparent_t trace;
    int traced = request_trace(r, &trace);
    char *value = h2o_mem_alloc_pool(&req->pool, traced ? 176 : 96), *p = value;
    if (r->db_ns > 0) {
        memcpy(p, "db;dur=", 7), p += 7;
        p = put_ms(p, r->db_ns);
        memcpy(p, ", ", 2), p += 2;
    }
    memcpy(p, "total;dur=", 10), p += 10;
    p = put_ms(p, total_ns);
    if (traced) {
        memcpy(p, ", traceparent;desc=\"", 20), p += 20;
        traceparent_format(&trace, p), p += TRACEPARENT_LEN;
        *p++ = '"';
    }
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("server-timing"), 0, NULL,
                          value, (size_t)(p - value));
}

/* ---- the metrics page's figures ---------------------------------------------------------- */

struct request_report {
    http_series_t *series; /* merged, in the order first seen */
    size_t n, cap;
    h2o_mem_pool_t *pool; /* the exemplars' room, with `exemplars` */
    int exemplars;
    int64_t in_flight;
    uint64_t stalls, stall_ns, sse_events;
    uint64_t gone[STATS_GONE_REASONS];
};

request_report_t *request_report_new(h2o_mem_pool_t *pool, int nloops, int exemplars)
{
    request_report_t *r = h2o_mem_alloc_pool(pool, sizeof(*r));
    memset(r, 0, sizeof(*r));
    /* every series of every loop, and each loop's reserved one, at most */
    r->cap = (STATS_HTTP_SERIES_MAX + 1) * (size_t)nloops;
    r->series = h2o_mem_alloc_pool(pool, r->cap * sizeof(*r->series));
    r->pool = pool;
    r->exemplars = exemplars;
    return r;
}

/* Keeps, per bucket, the newest of `src`'s exemplars and those already in
 * out->exemplars (allocated at the first one). */
static void merge_exemplars(request_report_t *r, http_series_t *out, const http_series_t *src)
{
    const stats_exemplar_t *from = __atomic_load_n(&src->exemplars, __ATOMIC_ACQUIRE);
    if (from == NULL)
        return;
    for (size_t b = 0; b <= src->duration.nbounds; b++) {
        stats_exemplar_t e;
        if (!stats_exemplar_read(&from[b], &e))
            continue;
        if (out->exemplars == NULL) {
            size_t size = (HISTOGRAM_MAX_BUCKETS + 1) * sizeof(*out->exemplars);
            out->exemplars = memset(h2o_mem_alloc_pool(r->pool, size), 0, size);
        }
        if (out->exemplars[b].seq == 0 || e.unix_ms >= out->exemplars[b].unix_ms) {
            out->exemplars[b] = e;
            out->exemplars[b].seq = 2; /* whole */
        }
    }
}

void request_report_add(request_report_t *r, const stats_loop_t *m)
{
    size_t count = stats_http_nseries(m);
    for (size_t i = 0; i <= count; i++) {
        const http_series_t *src = i < count ? &m->series[i] : &m->overflow;
        if (i == count && STAT_READ(src->duration.count) == 0)
            break; /* the reserved series, unused */
        size_t j = 0;
        while (j < r->n &&
               (r->series[j].route != src->route || r->series[j].method != src->method ||
                r->series[j].status != src->status))
            j++;
        if (j == r->n) {
            if (r->n == r->cap)
                continue;
            http_series_t *s = &r->series[r->n++];
            s->route = src->route, s->method = src->method, s->status = src->status;
            s->exemplars = NULL;
            histogram_init(&s->duration, stats_http_bounds, stats_http_nbounds);
        }
        histogram_accumulate(&r->series[j].duration, &src->duration);
        if (r->exemplars)
            merge_exemplars(r, &r->series[j], src);
    }
    r->in_flight += STAT_READ(m->in_flight);
    r->stalls += STAT_READ(m->stalls);
    r->stall_ns += STAT_READ(m->stall_ns);
    r->sse_events += STAT_READ(m->sse_events);
    for (size_t i = 0; i < STATS_GONE_REASONS; i++)
        r->gone[i] += STAT_READ(m->clients_gone[i]);
}

/* The labels of one series: `method="GET",path="/notes/:id",status_code="200",`. */
static void series_labels(const http_series_t *s, const char *const *route_labels, size_t nroutes,
                          char *out, size_t len)
{
    char status[16];
    if (s->status == STATS_STATUS_OTHER)
        snprintf(status, sizeof(status), "other");
    else
        snprintf(status, sizeof(status), "%d", s->status);
    snprintf(out, len, "method=\"%s\",path=\"%s\",status_code=\"%s\",",
             s->method < REQUEST_NUM_METHODS ? request_method_labels[s->method] : "other",
             s->route < nroutes ? route_labels[s->route] : "other", status);
}

void request_report_write(const request_report_t *r, exposition_t *o,
                          const char *const *route_labels, size_t nroutes)
{
    char labels[128];

    exposition_family(o, "http_requests_total", "counter",
                      "Requests answered, by method, route template and status (0: no answer "
                      "was sent, the client gone first or /fault's reset).");
    for (size_t i = 0; i < r->n; i++) {
        series_labels(&r->series[i], route_labels, nroutes, labels, sizeof(labels));
        exposition_printf(o, "http_requests_total{%.*s} %llu\n", (int)strlen(labels) - 1, labels,
                          (unsigned long long)r->series[i].duration.count);
    }
    exposition_family(o, "http_request_duration_seconds", "histogram",
                      "Seconds from the handler receiving the request to h2o disposing of it "
                      "(response written).");
    for (size_t i = 0; i < r->n; i++) {
        series_labels(&r->series[i], route_labels, nroutes, labels, sizeof(labels));
        exposition_histogram(o, "http_request_duration_seconds", labels, &r->series[i].duration,
                             r->series[i].exemplars);
    }
    exposition_family(o, "http_requests_in_flight", "gauge",
                      "Requests received and not yet disposed of.");
    exposition_printf(o, "http_requests_in_flight %lld\n", (long long)r->in_flight);
    exposition_family(o, "notes_http_clients_gone_total", "counter",
                      "Requests whose client was found gone before its answer was complete, by "
                      "how: half_closed (FIN, HALF_CLOSE=abort), reset (RST), aborted (h2o ended "
                      "the connection or stream first).");
    /* In the order of enum request_gone, after REQUEST_PRESENT. */
    static const char *const gone_reasons[STATS_GONE_REASONS] = {"half_closed", "reset", "aborted"};
    for (size_t i = 0; i < STATS_GONE_REASONS; i++)
        exposition_printf(o, "notes_http_clients_gone_total{reason=\"%s\"} %llu\n", gone_reasons[i],
                          (unsigned long long)r->gone[i]);
    exposition_one(o, "notes_stalls_total", "counter",
                   "Pauses of an event loop made by GET /stall.", r->stalls);
    exposition_family(o, "notes_stall_seconds_total", "counter",
                      "Seconds the event loops were paused by GET /stall, measured around each "
                      "pause.");
    exposition_printf(o, "notes_stall_seconds_total %.9f\n", (double)r->stall_ns / 1e9);
    exposition_one(o, "notes_sse_events_total", "counter",
                   "Server-Sent Events handed to h2o by GET /sse.", r->sse_events);
}
