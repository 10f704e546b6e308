/*
 * metrics.h - the numbers behind GET /metrics, and the metrics listener.
 *
 * Owns the HTTP request counters and histograms, the fixed bucket sets, the
 * Prometheus text rendering and the /metrics, /healthz and /readyz routes.
 * Pool figures are read from the pool at scrape time; event-loop lag comes from
 * lag.c; process figures from /proc at scrape time. Everything is fixed-size:
 * a scrape allocates one buffer from its request's pool and nothing grows.
 */
#ifndef NOTESD_METRICS_H
#define NOTESD_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <h2o.h>

/* Counters are written only by their own loop's thread and read by the thread
 * that renders /metrics. Relaxed atomic stores and loads make that well
 * defined, and cost a plain move on x86: no lock, no fence. */
#define STAT_ADD(var, n) __atomic_store_n(&(var), (var) + (n), __ATOMIC_RELAXED)
#define STAT_SUB(var, n) __atomic_store_n(&(var), (var) - (n), __ATOMIC_RELAXED)
#define STAT_READ(var) __atomic_load_n(&(var), __ATOMIC_RELAXED)

/* A classic Prometheus histogram with bounds chosen at compile time. */
#define HISTOGRAM_MAX_BUCKETS 24
typedef struct histogram {
    const double *bounds; /* upper bounds (le), ascending, without +Inf */
    size_t nbounds;
    uint64_t counts[HISTOGRAM_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last is +Inf */
    uint64_t count;
    double sum;
} histogram_t;

extern const double metrics_http_bounds[];
extern const size_t metrics_http_nbounds;
extern const double metrics_fine_bounds[]; /* 50 us .. 1 s: lag, pool acquire, queries */
extern const size_t metrics_fine_nbounds;

void histogram_init(histogram_t *h, const double *bounds, size_t nbounds);
/* Only from the thread that owns `h`. */
void histogram_observe(histogram_t *h, double value);
/* Adds `src` (owned by any thread) into `dst` (the caller's); `dst` must have
 * the same bounds. `count` is recomputed from the buckets, so a histogram read
 * while it changes is still consistent. */
void histogram_accumulate(histogram_t *dst, const histogram_t *src);

/* Prepares the calling thread's counters; each loop calls it once, first. */
void metrics_loop_init(int index);

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC), the clock of every duration here. */
uint64_t metrics_now_ns(void);

/* The route templates used as the `path` label; never the raw URL. */
enum route_id {
    ROUTE_NOTE_BY_ID, /* /notes/:id */
    ROUTE_NOTES,      /* /notes */
    ROUTE_JSON,       /* /json */
    ROUTE_ROOT,       /* / */
    ROUTE_STATUS,     /* /status */
    ROUTE_PRIMES,     /* /primes */
    ROUTE_STATIC,     /* /static */
    ROUTE_DELAY,      /* /delay/:ms */
    ROUTE_OTHER,      /* anything else (404s) */
    ROUTE__COUNT
};

/* Starts the request's measurement: counts it in flight, and arranges (through
 * a shared allocation in req->pool) that when h2o disposes of the request,
 * i.e. after the response's last byte was written or the client went away,
 * its duration and status are recorded. Call first thing in every handler. */
void metrics_request_begin(h2o_req_t *req, enum route_id route);

/* Adds time spent in the database to the request's Server-Timing `db` figure. */
void metrics_request_add_db_time(h2o_req_t *req, uint64_t ns);

/* Adds `Server-Timing: db;dur=X, total;dur=Y` (milliseconds with microsecond
 * digits, total up to now) to a response about to start, if it was measured and
 * the header is on. */
void metrics_add_server_timing(h2o_req_t *req);

/* Requests received on the calling thread's loop and not yet disposed of. */
int64_t metrics_requests_in_flight(void);

/* Wall-clock start time of the process, for process_start_time_seconds. */
extern double metrics_start_time;

/* The statement table (routes_notes.c): the first notes_num_labelled_statements
 * are the `statement` label values; notes_ping_statement is /readyz's select 1. */
struct pool_statement;
extern const struct pool_statement *const notes_statement_table;
extern const size_t notes_num_statements, notes_num_labelled_statements, notes_ping_statement;

/* Registers /metrics, /healthz and /readyz on the metrics host. */
void metrics_register_routes(h2o_hostconf_t *host);

#endif
