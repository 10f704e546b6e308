/*
 * request.c - the request context's life: begin, timer, Server-Timing, dispose (see request.h).
 */
#include <assert.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
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
    h2o_conn_t *conn = r->req->conn;
    h2o_socket_t *sock =
        conn->callbacks->get_socket != NULL ? conn->callbacks->get_socket(conn) : NULL;
    uint8_t state;
    socklen_t len = sizeof(state);

    if (sock == NULL ||
        getsockopt(h2o_socket_get_fd(sock), IPPROTO_TCP, TCP_INFO, &state, &len) != 0 || len < 1)
        return CLIENT_THERE;
    if (state == TCP_ESTABLISHED)
        return CLIENT_THERE;
    return state == TCP_CLOSE_WAIT ? CLIENT_HALF_CLOSED : CLIENT_RESET;
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
    if (r->status == 0 && r->gone == REQUEST_PRESENT && !r->own_reset)
        r->gone = REQUEST_GONE_ABORTED;
    if (r->gone != REQUEST_PRESENT)
        STAT_ADD(r->stats->clients_gone[r->gone - 1], 1);
    double seconds = (double)(stats_now_ns() - r->start_ns) / 1e9;
    uint8_t method = method_index(r->req->method);
    int traced = request_trace(r, &trace);
    if (!traced)
        stats_http_observe(r->stats, r->route, method, r->status, seconds);
    else
        stats_http_observe_traced(r->stats, r->route, method, r->status, seconds, trace.trace_hi,
                                  trace.trace_lo);
    if (log_level_current >= LOG_DEBUG)
        log_request(r, seconds, traced ? &trace : NULL);
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

notesd_req_t *request_begin(h2o_req_t *req, uint8_t route, stats_loop_t *stats,
                            const request_settings_t *settings)
{
    notesd_req_t *r = h2o_mem_alloc_shared(&req->pool, sizeof(*r), on_request_disposed);
    memset(r, 0, sizeof(*r));
    r->req = req;
    r->settings = settings;
    r->stats = stats;
    r->route = route;
    r->start_ns = stats_now_ns();
    if (stats != NULL)
        STAT_ADD(stats->in_flight, 1);
    return r;
}

/* request_db's clean-up. A query the pool never took has no pool yet. */
static void on_db_dispose(notesd_req_t *r)
{
    pool_query_t *q = &r->u.db.query;
    if (q->pool != NULL)
        pool_query_cancel(q->pool, q);
    cJSON_Delete(r->u.db.input.json);
}

struct request_db *request_db(notesd_req_t *r, int statement, pool_query_cb cb)
{
    r->on_dispose = on_db_dispose;
    r->u.db.query.statement = statement;
    r->u.db.query.cb = cb;
    r->u.db.query.data = r;
    return &r->u.db;
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

int request_timer_arm(notesd_req_t *r, timers_t *timers, uint64_t due_ns,
                      void (*on_due)(notesd_req_t *r))
{
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
    h2o_conn_t *conn = r->req->conn;
    shutdown(h2o_socket_get_fd(conn->callbacks->get_socket(conn)), SHUT_RDWR);
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
