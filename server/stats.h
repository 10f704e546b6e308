/*
 * stats.h - counters and histograms: the bottom layer, with no includes of ours.
 *
 * Owns the STAT_ macros, histogram_t and its bucket sets, the monotonic clock
 * every duration is measured with, and one loop's table of HTTP series
 * (route x method x status). It knows numbers, not meanings: a route or method
 * is a small index that the layers above give a name; adding the loops' tables
 * up and writing them on the metrics page is request.c's (request_report).
 * Anything may include this file.
 */
#ifndef NOTESD_STATS_H
#define NOTESD_STATS_H

#include <stddef.h>
#include <stdint.h>

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

extern const double stats_http_bounds[]; /* 0.1 ms .. 10 s: HTTP request durations */
extern const size_t stats_http_nbounds;
extern const double stats_fine_bounds[]; /* 50 us .. 1 s: lag, pool acquire, queries */
extern const size_t stats_fine_nbounds;

void histogram_init(histogram_t *h, const double *bounds, size_t nbounds);
/* Only from the thread that owns `h`. Returns the index of the bucket `value` went into. */
size_t histogram_observe(histogram_t *h, double value);
/* Adds `src` (owned by any thread) into `dst` (the caller's); `dst` must have
 * the same bounds. `count` is recomputed from the buckets, so a histogram read
 * while it changes is still consistent. */
void histogram_accumulate(histogram_t *dst, const histogram_t *src);

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC), the clock of every duration here. */
uint64_t stats_now_ns(void);

/* ---- one loop's HTTP series ------------------------------------------------------------- */

/* Most series one loop keeps. The table never grows past it: once it is full,
 * a new (route, method, status) is counted under status "other" for its route
 * and method, and when even that series cannot be added, under the reserved
 * overflow series (route and method STATS_OTHER, status "other"). */
#define STATS_HTTP_SERIES_MAX 256
#define STATS_OTHER UINT8_MAX   /* route or method index of the overflow series */
#define STATS_STATUS_OTHER (-1) /* status of a series that stands for several */
#define STATS_GONE_REASONS 3    /* ways a client is found gone (request.h's enum request_gone) */

/* The last traced request that landed in one bucket: an OpenMetrics exemplar.
 * Written by the loop's thread and read by the metrics page's, with a sequence
 * number around the write (odd while it is under way), every field an atomic
 * access, so a reader either gets a whole exemplar or tries again. */
typedef struct stats_exemplar {
    uint32_t seq;                /* even: complete; odd: being written */
    uint64_t trace_hi, trace_lo; /* the request's trace id; both 0: none yet */
    double value;                /* the request's duration, in seconds */
    int64_t unix_ms;             /* when it was recorded, wall clock */
} stats_exemplar_t;

typedef struct http_series {
    uint8_t route, method; /* indices the layers above name; STATS_OTHER: "other" */
    int status;            /* 0: the client left before a response; STATS_STATUS_OTHER */
    histogram_t duration;  /* its count is the series' request count */
    /* One per bucket of `duration`, allocated by the series' first traced
     * request (published with a release store; NULL until then), so a server
     * that sees no trace ids keeps no room for them. */
    stats_exemplar_t *exemplars;
} http_series_t;

/* The HTTP counters of one loop. Allocated with the loop, before any thread
 * starts; only the loop's own thread writes it, the metrics page reads it. */
typedef struct stats_loop {
    http_series_t series[STATS_HTTP_SERIES_MAX];
    size_t nseries;            /* published with a release store after the entry is ready */
    http_series_t overflow;    /* the reserved series; read when its count is not 0 */
    int64_t in_flight;         /* requests received and not yet disposed of */
    uint64_t stalls, stall_ns; /* /stall's pauses of this loop, and their total length */
    uint64_t sse_events;       /* /sse's events handed to h2o */
    uint64_t clients_gone[STATS_GONE_REASONS]; /* requests whose client was found gone, by
                                                  how (named above: request.h) */
} stats_loop_t;

void stats_loop_init(stats_loop_t *m);

/* Records one request's duration in seconds under (route, method, status);
 * only from the loop's own thread. */
void stats_http_observe(stats_loop_t *m, uint8_t route, uint8_t method, int status, double seconds);

/* stats_http_observe for a request that came with a trace id (traceparent.h):
 * the trace id also becomes the exemplar of the bucket the duration lands in,
 * replacing the one before, stamped with the wall clock. */
void stats_http_observe_traced(stats_loop_t *m, uint8_t route, uint8_t method, int status,
                               double seconds, uint64_t trace_hi, uint64_t trace_lo);

/* Copies an exemplar another thread may be writing: 1 with a whole one in
 * *out, 0 when there is none (or it kept changing while being read). */
int stats_exemplar_read(const stats_exemplar_t *e, stats_exemplar_t *out);

/* Series published so far, for readers on other threads. */
size_t stats_http_nseries(const stats_loop_t *m);

#endif
