/*
 * request.h - one request's context: everything notesd keeps about a request.
 *
 * Owns notesd_req_t: the route, the port's settings, the timings (start,
 * database time), the status recorded when the request ends, a timer on the
 * loop's timer service, and room for what the route's module keeps while it
 * answers (r->state: its own type, route_state_t's request_size bytes; and
 * r->loop_state, the module's state on this loop). It is allocated once per
 * request, as a shared allocation in req->pool whose dispose callback runs
 * when h2o disposes of the request (after the last byte was written, or when
 * the client went away): it calls the handler's clean-up, then records the
 * request's duration and status in the loop's stats. Nothing else keeps a
 * pointer to a request, so there is nothing to look up and nothing to leak.
 *
 * A request carries its loop (r->loop, a request_loop_t): what the loop it
 * runs on owns that a handler may use, its timers, its pool, its counters.
 * The router hands it over with every request; no handler looks a loop up.
 *
 * Also owns what the loops' requests add up to on the metrics page
 * (request_report): the HTTP series of every loop merged, and the counters
 * kept beside them.
 */
#ifndef NOTESD_REQUEST_H
#define NOTESD_REQUEST_H

#include <h2o.h>
#include "compiler.h"
#include "exposition.h"
#include "journal.h"
#include "lag.h"
#include "listen.h"
#include "pool.h"
#include "stats.h"
#include "timers.h"
#include "traceparent.h"
#include "validate.h"

typedef struct notesd_req notesd_req_t;

/* One event loop as its requests see it: the parts of the loop a handler may
 * use, each the loop's own (one thread uses them; the metrics page only reads
 * their counters). Set up once, before the loop's thread starts, and handed to
 * every request by the router (r->loop). */
typedef struct request_loop {
    unsigned index;      /* 0 .. THREADS-1 */
    timers_t *timers;    /* answers that come later, schedules */
    pool_t *pool;        /* its slice of the database pool */
    stats_loop_t *stats; /* its HTTP series and request counters */
    struct ws_loop *ws;  /* its WebSocket connections (ws.h) */
    lag_probe_t *lag;    /* its lag probe (the metrics page drains it) */
    listeners_t *listen; /* its listeners (the metrics page reads their figures) */
    journal_t *journal;  /* its request journal; NULL: JOURNAL is off */
} request_loop_t;

/* The limits of a WebSocket connection (the WS_* settings); a request may
 * lower them for its own connection (routes_ws.c). */
typedef struct request_ws_limits {
    uint64_t max_message_bytes;  /* a longer message from the client: close 1009 */
    uint64_t max_fragment_bytes; /* a longer frame: close 1009 */
    uint64_t max_messages;       /* data messages a client may send; past them, 1008; 0: any */
    uint64_t idle_timeout_ms;    /* nothing received or written for this long: close 1001 */
} request_ws_limits_t;

/* The settings a port's requests are handled with: set once at start-up from
 * the configuration (main.c), then read-only and shared by every loop. Each
 * request's context points at its port's; the route handlers read theirs here. */
typedef struct request_settings {
    int server_timing;         /* SERVER_TIMING: send Server-Timing on measured responses */
    int answer_half_closed;    /* HALF_CLOSE=answer: a client that shut down its sending side
                                  still gets its answer (request_client_gone) */
    int primes_max;            /* PRIMES_MAX: the largest ?below= of /primes */
    size_t max_body_bytes;     /* MAX_BODY_BYTES: a larger request body gets 413 */
    const char *static_dir;    /* STATIC_DIR: served under /static/ (read by its set-up hook) */
    request_ws_limits_t ws;    /* WS_*: the WebSocket routes' limits */
    const char *journal_token; /* JOURNAL_TOKEN; NULL: the journal is read from loopback only */
    uint64_t journal_epoch;    /* random, drawn at start-up: names this process's journal */
    /* Every loop, for the metrics port's pages, which speak for all of them. */
    const request_loop_t *const *loops;
    int nloops;
} request_settings_t;

/* What a route's module keeps, declared by the module and named by its rows
 * (routes.h); the router makes it. Per request: `request_size` bytes, zeroed,
 * allocated with the request (r->state). Per loop: `loop_size` bytes, zeroed,
 * given to `loop_init` when the loop's h2o context starts and to
 * `loop_dispose` when it ends, and handed to each of its requests
 * (r->loop_state); the rows of one module share it. Any part may be 0 or NULL. */
typedef struct route_state {
    size_t request_size;
    size_t loop_size;
    void (*loop_init)(void *state, const request_loop_t *loop);
    void (*loop_dispose)(void *state);
} route_state_t;

/* The state of requests that run one statement on the pool (request_db). */
extern const route_state_t request_db_state;

struct notesd_req {
    h2o_req_t *req;
    const request_settings_t *settings; /* the port's */
    const request_loop_t *loop;         /* the loop it runs on */
    stats_loop_t *stats;                /* loop->stats; NULL: not measured (the metrics port) */
    uint64_t start_ns;                  /* when the handler received the request (stats_now_ns) */
    uint64_t db_ns;                     /* time spent in database queries, for Server-Timing */
    uint64_t answered_ns;               /* respond_start's time, journal on (0: not yet) */
    uint64_t wait_ns;    /* time its query waited for a database connection (the journal) */
    int status;          /* the status recorded when the request ended (0: no answer sent) */
    uint8_t route;       /* enum route_id (routes.h) */
    uint8_t timing_sent; /* 1 once the Server-Timing header was added */
    uint8_t started;     /* 1 once the response has started (respond_start) */
    uint8_t gone;        /* enum request_gone: how the client was found gone, if it was */
    uint8_t unanswered;  /* 1: gone before its response started; recorded as status 0 */
    uint8_t half_closed; /* HALF_CLOSE=answer: answered a client that had half-closed */
    uint8_t own_reset;   /* the handler reset the connection itself (/fault): not a client's */
    uint8_t trace_state; /* enum request_trace_state: what request_trace found so far */
    h2o_iovec_t param;   /* MATCH_PARAM: the `:param` segment, percent-decoded; MATCH_PREFIX:
                            the rest of the path after the prefix and its "/", as sent */
    /* The handler's clean-up, run first when the request is disposed of; it
     * takes back whatever still refers to the request (a query, a timer). */
    void (*on_dispose)(notesd_req_t *r);
    /* A deadline on the loop's timers (request_timer_arm), for handlers that
     * answer later; armed while `entry` is linked. */
    struct request_timer {
        timer_entry_t entry;
        timers_t *timers; /* the loop's, once armed */
        void (*on_due)(notesd_req_t *r);
    } timer;
    void *loop_state;                      /* the route module's state on this loop, or NULL */
    _Alignas(max_align_t) uint8_t state[]; /* the route module's, request_size bytes */
};

/* A request that runs one statement on the pool: its state (request_db_state). */
struct request_db {
    pool_query_t query; /* query.data points back to the notesd_req_t */
    note_input_t input; /* parsed body of POST/PUT; owns the param strings */
    char id[21];        /* canonical id text, a parameter */
};

/* The socket of the request's connection (HTTP/2: the connection's, which its
 * streams share), or NULL when h2o has none to give. Every look at a
 * request's socket goes through here. */
static inline h2o_socket_t *request_socket(h2o_req_t *req)
{
    h2o_conn_t *conn = req->conn;
    return conn->callbacks->get_socket != NULL ? conn->callbacks->get_socket(conn) : NULL;
}

/* What request_trace knows of a request's traceparent. Only "none" is kept:
 * a request without one (nearly all of them) is searched once; one with a
 * valid one is parsed again when asked, which costs nothing per request in
 * the context's size. */
enum request_trace_state {
    REQUEST_TRACE_UNKNOWN, /* not searched yet */
    REQUEST_TRACE_NONE,    /* no traceparent, or not a valid one */
    REQUEST_TRACE_FOUND,   /* a valid one */
};

/* How a request's client was found gone; each is counted in the loop's
 * stats (clients_gone[gone - 1]). Only GONE_HALF_CLOSED depends on HALF_CLOSE. */
enum request_gone {
    REQUEST_PRESENT = 0,
    REQUEST_GONE_HALF_CLOSED, /* it had shut down its sending side (FIN), with HALF_CLOSE=abort */
    REQUEST_GONE_RESET,       /* its connection was reset (RST), or its answer was reset */
    REQUEST_GONE_ABORTED,     /* h2o ended the connection or the stream first (an HTTP/2
                                 RST_STREAM, a connection closed): no answer was started */
};

/* The `method` label values; a request's method is one of the first seven or "other". */
extern const char *const request_method_labels[];
#define REQUEST_NUM_METHODS 8

/* Creates the request's context in req->pool, the one allocation of request
 * state, with `state_size` zeroed bytes for its route's module (r->state), on
 * `loop`. A `measured` request is counted in flight and its duration recorded
 * in loop->stats when it ends; the metrics port's are not. `loop` and
 * `settings` must outlive every request (they are the process's). Ownership:
 * the context belongs to req->pool and dies with the request. */
notesd_req_t *request_begin(h2o_req_t *req, uint8_t route, size_t state_size,
                            const request_loop_t *loop, int measured,
                            const request_settings_t *settings);

/* Claims the request's state (a route whose module declares request_db_state)
 * for one statement on the pool: sets the query's statement, its callback `cb`
 * and its data (r), and the request's clean-up, which takes the query back
 * from the pool if the request goes first (its result, if it comes, is
 * dropped) and frees a parsed body (input). The handler sets the parameters,
 * then calls pool_query. */
struct request_db *request_db(notesd_req_t *r, int statement, pool_query_cb cb);

/* The raw query string: what follows the target's '?', still encoded; empty
 * (length 0, never a NULL base) when there is none, which every parser of
 * validate.h reads as "no parameters". */
h2o_iovec_t request_query(const notesd_req_t *r);

/* Longest wait a request may ask for (/delay/:ms, /fault's delay_ms); 400 beyond. */
#define REQUEST_WAIT_MAX_MS 60000

/* Most timers pending on one loop when a request asks for one (/delay, /fault's
 * delay_ms and /drip's chunks together; the loop's own few count too); beyond
 * it the request gets 503. */
#define REQUEST_TIMERS_MAX 65536

/* Calls on_due(r) on the request's loop at `due_ns` (stats_now_ns's clock),
 * unless request_timer_cancel comes first; on_due may arm the timer again.
 * Returns 0, or -1 when REQUEST_TIMERS_MAX timers are pending (the caller
 * answers 503). The timer refers to the request until it fires, so the
 * handler's clean-up (r->on_dispose) must call request_timer_cancel. */
NOTESD_MUSTCHECK int request_timer_arm(notesd_req_t *r, uint64_t due_ns,
                                       void (*on_due)(notesd_req_t *r));

/* Takes r's timer back, if armed; a clean-up (r->on_dispose) of its own. */
void request_timer_cancel(notesd_req_t *r);

/* For a handler about to answer after waiting (a query, a timer, the next
 * /drip chunk): 1 if the client has gone meanwhile. h2o 2.2.5 stops reading an
 * HTTP/1 connection while its request is handled, so it would not notice. The
 * TCP state tells: a reset connection is gone; one whose client shut down its
 * sending side (FIN: `nc -N`, a script that half-closes, or a client that
 * closed entirely, which cannot be told apart until an answer reaches it) is
 * gone with HALF_CLOSE=abort, as Node's HTTP server ends such a connection,
 * and answered with HALF_CLOSE=answer. A gone request is recorded with status 0
 * (or, when its response had started, with that status, cut short), counted
 * by how it went, and its socket is shut down so the answer the handler still
 * hands h2o is never written: h2o's write fails and it closes the connection. */
int request_client_gone(notesd_req_t *r);

/* Adds `Server-Timing: db;dur=X, total;dur=Y` (milliseconds with microsecond
 * digits, total up to now) to a response about to start: once, and only for a
 * measured request with the header on (SERVER_TIMING). A request that came
 * with a traceparent gets it back as a third entry, `traceparent;desc="…"`. */
void request_add_server_timing(notesd_req_t *r);

/* 1 with *out filled when the request came with a valid traceparent (W3C
 * Trace Context; the first `traceparent` field counts), 0 otherwise. The
 * trace id becomes the exemplar of the request's duration bucket, and goes
 * into Server-Timing and the debug log line of the request. */
int request_trace(notesd_req_t *r, traceparent_t *out);

/* Fills *rec, the request's record of the journal (journal.h), as of
 * `now_ns` (stats_now_ns's clock): its connection, protocol and HTTP/2
 * stream, method, route, the status recorded, its body bytes, database wait
 * and query, trace id and X-Request-Id; h2o's times of the connection and of
 * the head, the wall clock now as its end and that less its duration as its
 * start. The one filler of records: on_request_disposed's, and a WebSocket's
 * handshake, whose record every message's copies (ws_report_journal). */
void request_journal_fill(notesd_req_t *r, uint64_t now_ns, journal_record_t *rec);

/* ---- the metrics page's figures ---------------------------------------------------------- */

/* Every loop's HTTP series, merged by (route, method, status), and the
 * counters kept beside them, added up. */
typedef struct request_report request_report_t;

/* A report for `nloops` loops, in `pool` (a scrape's request pool); with
 * `exemplars`, the newest exemplar of each bucket is kept too (OpenMetrics). */
request_report_t *request_report_new(h2o_mem_pool_t *pool, int nloops, int exemplars);

/* Adds one loop's series and counters; from any thread. */
void request_report_add(request_report_t *r, const stats_loop_t *stats);

/* Writes http_requests_total, http_request_duration_seconds (with exemplars
 * in OpenMetrics), http_requests_in_flight, notes_http_clients_gone_total,
 * the /stall and /sse counters. `route_labels` names each route index. */
void request_report_write(const request_report_t *r, exposition_t *o,
                          const char *const *route_labels, size_t nroutes);

#endif
