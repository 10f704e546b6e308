/*
 * metrics.c - request counters, Prometheus rendering, /metrics, /healthz, /readyz
 * (see metrics.h). The README's metrics table lists every family written here.
 */
#include <dirent.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <libpq-fe.h>
#include <h2o/version.h>
#include "config.h"
#include "http.h"
#include "lag.h"
#include "metrics.h"
#include "respond.h"

/* express-prom-bundle's and Prometheus's default bounds, plus sub-millisecond
 * ones that a native server needs: the same `le` values exist on every runtime. */
const double metrics_http_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.003, 0.005, 0.01,
                                      0.025,  0.03,    0.05,   0.1,   0.25,  0.3,   0.5,
                                      1,      1.5,     2.5,    5,     10};
const size_t metrics_http_nbounds = sizeof(metrics_http_bounds) / sizeof(double);
const double metrics_fine_bounds[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
const size_t metrics_fine_nbounds = sizeof(metrics_fine_bounds) / sizeof(double);

static const char *route_labels[] = {
    [ROUTE_NOTE_BY_ID] = "/notes/:id",
    [ROUTE_NOTES] = "/notes",
    [ROUTE_JSON] = "/json",
    [ROUTE_ROOT] = "/",
    [ROUTE_STATUS] = "/status",
    [ROUTE_PRIMES] = "/primes",
    [ROUTE_STATIC] = "/static",
    [ROUTE_DELAY] = "/delay/:ms",
    [ROUTE_OTHER] = "other",
};
_Static_assert(sizeof(route_labels) / sizeof(route_labels[0]) == ROUTE__COUNT,
               "every route needs a label");
static const char *method_labels[] = {"GET",    "HEAD",  "POST",    "PUT",
                                      "DELETE", "PATCH", "OPTIONS", "other"};
#define NUM_METHODS (sizeof(method_labels) / sizeof(method_labels[0]))

/* One series of http_requests_total / http_request_duration_seconds. The table
 * is fixed: routes x methods x the status codes seen; when it is full, further
 * combinations are counted under status_code="other". */
#define MAX_HTTP_SERIES 256
typedef struct http_series {
    uint8_t route, method;
    int status; /* 0: the client left before a response; -1: "other" */
    histogram_t duration;
} http_series_t;

typedef struct request_stamp request_stamp_t;
#define STAMP_BUCKETS 1024

/* The counters of one loop; only its thread writes them. */
typedef struct metrics_loop {
    http_series_t series[MAX_HTTP_SERIES];
    size_t nseries; /* published with a release store after the entry is ready */
    int64_t in_flight;
    request_stamp_t *stamp_buckets[STAMP_BUCKETS];
} metrics_loop_t;

static metrics_loop_t *all_loops[NOTESD_MAX_LOOPS];
static __thread metrics_loop_t *mine;

void metrics_loop_init(int index)
{
    mine = calloc(1, sizeof(*mine));
    if (mine == NULL)
        abort();
    all_loops[index] = mine;
}

void histogram_init(histogram_t *h, const double *bounds, size_t nbounds)
{
    memset(h, 0, sizeof(*h));
    h->bounds = bounds;
    h->nbounds = nbounds;
}

void histogram_observe(histogram_t *h, double value)
{
    size_t i = 0;
    while (i < h->nbounds && value > h->bounds[i])
        i++;
    STAT_ADD(h->counts[i], 1);
    STAT_ADD(h->count, 1);
    double sum = h->sum + value;
    __atomic_store(&h->sum, &sum, __ATOMIC_RELAXED);
}

void histogram_accumulate(histogram_t *dst, const histogram_t *src)
{
    double sum;
    for (size_t i = 0; i <= src->nbounds; i++) {
        uint64_t n = STAT_READ(src->counts[i]);
        dst->counts[i] += n;
        dst->count += n;
    }
    __atomic_load(&src->sum, &sum, __ATOMIC_RELAXED);
    dst->sum += sum;
}

uint64_t metrics_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static http_series_t *find_series(int route, int method, int status)
{
    for (size_t i = 0; i < mine->nseries; i++) {
        http_series_t *s = &mine->series[i];
        if (s->route == route && s->method == method && s->status == status)
            return s;
    }
    if (mine->nseries == MAX_HTTP_SERIES - 1 && status != -1)
        return find_series(route, method, -1);
    http_series_t *s = &mine->series[mine->nseries];
    s->route = (uint8_t)route;
    s->method = (uint8_t)method;
    s->status = status;
    histogram_init(&s->duration, metrics_http_bounds, metrics_http_nbounds);
    __atomic_store_n(&mine->nseries, mine->nseries + 1, __ATOMIC_RELEASE);
    return s;
}

/* A request being measured. Found by the request's address in a small
 * intrusive hash table, so responders need no extra argument to reach it. */
struct request_stamp {
    h2o_req_t *req;
    uint64_t start_ns;
    uint64_t db_ns; /* time spent in database queries, for Server-Timing */
    enum route_id route;
    struct request_stamp *next; /* in its hash bucket */
};

static request_stamp_t **bucket_of(h2o_req_t *req)
{
    return &mine->stamp_buckets[((uintptr_t)req >> 4) % STAMP_BUCKETS];
}

static request_stamp_t *stamp_of(h2o_req_t *req)
{
    for (request_stamp_t *s = *bucket_of(req); s != NULL; s = s->next)
        if (s->req == req)
            return s;
    return NULL;
}

/* Runs when h2o disposes of the request: after its response was written, or
 * when the connection closed first (status 0). */
static void on_request_disposed(void *p)
{
    request_stamp_t *stamp = p;
    h2o_req_t *req = stamp->req;
    int method = NUM_METHODS - 1;

    for (request_stamp_t **s = bucket_of(req); *s != NULL; s = &(*s)->next)
        if (*s == stamp) {
            *s = stamp->next;
            break;
        }
    for (size_t i = 0; i < NUM_METHODS - 1; i++)
        if (h2o_memis(req->method.base, req->method.len, method_labels[i],
                      strlen(method_labels[i])))
            method = (int)i;
    http_series_t *series = find_series(stamp->route, method, req->res.status);
    histogram_observe(&series->duration, (double)(metrics_now_ns() - stamp->start_ns) / 1e9);
    STAT_SUB(mine->in_flight, 1);
}

int64_t metrics_requests_in_flight(void)
{
    return mine->in_flight;
}

void metrics_request_begin(h2o_req_t *req, enum route_id route)
{
    request_stamp_t *stamp = h2o_mem_alloc_shared(&req->pool, sizeof(*stamp), on_request_disposed);
    stamp->req = req;
    stamp->start_ns = metrics_now_ns();
    stamp->db_ns = 0;
    stamp->route = route;
    stamp->next = *bucket_of(req);
    *bucket_of(req) = stamp;
    STAT_ADD(mine->in_flight, 1);
}

void metrics_request_add_db_time(h2o_req_t *req, uint64_t ns)
{
    request_stamp_t *stamp = stamp_of(req);
    if (stamp != NULL)
        stamp->db_ns += ns;
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

void metrics_add_server_timing(h2o_req_t *req)
{
    request_stamp_t *stamp;

    if (!config.server_timing || (stamp = stamp_of(req)) == NULL)
        return;
    uint64_t total_ns = metrics_now_ns() - stamp->start_ns;
    char *value = h2o_mem_alloc_pool(&req->pool, 96), *p = value;
    if (stamp->db_ns > 0) {
        memcpy(p, "db;dur=", 7), p += 7;
        p = put_ms(p, stamp->db_ns);
        memcpy(p, ", ", 2), p += 2;
    }
    memcpy(p, "total;dur=", 10), p += 10;
    p = put_ms(p, total_ns);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("server-timing"), 0, NULL,
                          value, (size_t)(p - value));
}

/* ---- rendering --------------------------------------------------------------------------- */

typedef struct out {
    char *p, *end;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p, (size_t)(o->end - o->p), fmt, ap);
    va_end(ap);
    /* The buffer is sized for the worst case; never run past it. */
    o->p += n < 0 ? 0 : (n < o->end - o->p ? n : o->end - o->p - 1);
}

static void family(out_t *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Writes the samples of one histogram; `labels` is "" or `a="b",` (trailing comma). */
static void histogram_samples(out_t *o, const char *name, const char *labels, const histogram_t *h)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h->nbounds; i++) {
        cumulative += h->counts[i];
        put(o, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, h->bounds[i],
            (unsigned long long)cumulative);
    }
    put(o, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
    size_t len = strlen(labels);
    if (len > 0) /* drop the trailing comma for _sum and _count */
        put(o, "%s_sum{%.*s} %.9g\n%s_count{%.*s} %llu\n", name, (int)len - 1, labels, h->sum, name,
            (int)len - 1, labels, (unsigned long long)h->count);
    else
        put(o, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
}

/* Reads "Key:   123 kB" from /proc/self/status; returns bytes (or the number for Threads). */
static long long proc_status_value(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (p == NULL)
        return -1;
    long long v = strtoll(p + strlen(key), NULL, 10);
    return strstr(key, "Vm") == key ? v * 1024 : v;
}

static void process_metrics(out_t *o)
{
    char status[4096] = "";
    FILE *f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        size_t n = fread(status, 1, sizeof(status) - 1, f);
        status[n] = '\0';
        fclose(f);
    }
    family(o, "process_resident_memory_bytes", "gauge", "Resident set size (VmRSS) in bytes.");
    put(o, "process_resident_memory_bytes %lld\n", proc_status_value(status, "VmRSS:"));
    family(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size (VmSize) in bytes.");
    put(o, "process_virtual_memory_bytes %lld\n", proc_status_value(status, "VmSize:"));
    family(o, "process_heap_bytes", "gauge",
           "Data segment size (VmData) in bytes, as prom-client reports on Linux.");
    put(o, "process_heap_bytes %lld\n", proc_status_value(status, "VmData:"));
    family(o, "process_threads", "gauge", "Number of OS threads.");
    put(o, "process_threads %lld\n", proc_status_value(status, "Threads:"));

    struct mallinfo2 mi = mallinfo2();
    family(o, "notes_malloc_heap_used_bytes", "gauge",
           "Bytes in use in glibc malloc (mallinfo2 uordblks + hblkhd), the native used heap.");
    put(o, "notes_malloc_heap_used_bytes %zu\n", mi.uordblks + mi.hblkhd);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    family(o, "process_cpu_seconds_total", "counter", "User and system CPU time in seconds.");
    put(o, "process_cpu_seconds_total %.6f\n",
        (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);

    int fds = 0;
    DIR *dir = opendir("/proc/self/fd");
    if (dir != NULL) {
        struct dirent *e;
        while ((e = readdir(dir)) != NULL)
            if (e->d_name[0] != '.')
                fds++;
        closedir(dir);
        fds--; /* the directory handle itself */
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    family(o, "process_open_fds", "gauge", "Number of open file descriptors.");
    put(o, "process_open_fds %d\n", fds);
    family(o, "process_max_fds", "gauge", "Limit on open file descriptors.");
    put(o, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    family(o, "process_start_time_seconds", "gauge", "Start time since the Unix epoch in seconds.");
    put(o, "process_start_time_seconds %.3f\n", metrics_start_time);
}

static void lag_metrics(out_t *o)
{
    lag_window_t w;
    lag_take_window(&w);

    family(o, "notes_eventloop_delay_seconds", "histogram",
           "How late the event-loop probe timer fired, in seconds (the seed's lag probe).");
    histogram_t all;
    histogram_init(&all, metrics_fine_bounds, metrics_fine_nbounds);
    lag_accumulate_histograms(&all);
    histogram_samples(o, "notes_eventloop_delay_seconds", "", &all);
    static const char *names[] = {"min", "max", "mean", "p50", "p90", "p99"};
    double values[] = {w.min, w.max, w.mean, w.p50, w.p90, w.p99};
    for (size_t i = 0; i < 6; i++) {
        char name[64], help[128];
        snprintf(name, sizeof(name), "notes_eventloop_lag_%s_seconds", names[i]);
        snprintf(help, sizeof(help),
                 "The %s of the lag probe's samples since the previous scrape, in seconds.",
                 names[i]);
        family(o, name, "gauge", help);
        put(o, "%s %.9g\n", name, values[i]);
    }
}

static void pool_metrics(out_t *o)
{
    size_t connections = 0, idle = 0, waiting = 0;
    uint64_t errors = 0, opened = 0, rejected = 0, acquire_timeouts = 0, query_timeouts = 0;
    int max = 0;
    histogram_t acquire, query[8];
    const pool_statement_t *statements = server.loops[0].pool.statements;

    histogram_init(&acquire, metrics_fine_bounds, metrics_fine_nbounds);
    for (size_t i = 0; i < notes_num_labelled_statements; i++)
        histogram_init(&query[i], metrics_fine_bounds, metrics_fine_nbounds);
    /* Read from each pool's lists now, not kept as separate counters. */
    for (int l = 0; l < server.nloops; l++) {
        pool_t *pool = &server.loops[l].pool;
        connections +=
            STAT_READ(pool->connecting.len) + STAT_READ(pool->idle.len) + STAT_READ(pool->busy.len);
        idle += STAT_READ(pool->idle.len);
        waiting += STAT_READ(pool->waiting.len);
        max += pool->max;
        errors += STAT_READ(pool->stats.connection_errors);
        opened += STAT_READ(pool->stats.connects);
        rejected += STAT_READ(pool->stats.rejected);
        acquire_timeouts += STAT_READ(pool->stats.acquire_timeouts);
        query_timeouts += STAT_READ(pool->stats.query_timeouts);
        histogram_accumulate(&acquire, &pool->stats.acquire);
        for (size_t i = 0; i < notes_num_labelled_statements; i++)
            histogram_accumulate(&query[i], &pool->stats.query[i]);
    }

    family(o, "notes_db_pool_connections", "gauge",
           "Open database connections, including those still connecting (pg.Pool totalCount).");
    put(o, "notes_db_pool_connections %zu\n", connections);
    family(o, "notes_db_pool_idle_connections", "gauge",
           "Connections ready for a query (pg.Pool idleCount).");
    put(o, "notes_db_pool_idle_connections %zu\n", idle);
    family(o, "notes_db_pool_waiting_requests", "gauge",
           "Queries waiting for a connection (pg.Pool waitingCount).");
    put(o, "notes_db_pool_waiting_requests %zu\n", waiting);
    family(o, "notes_db_pool_max_connections", "gauge", "The pool's connection limit (POOL_MAX).");
    put(o, "notes_db_pool_max_connections %d\n", max);
    family(o, "notes_db_pool_acquire_duration_seconds", "histogram",
           "Seconds from a query entering the pool to a connection being handed to it.");
    histogram_samples(o, "notes_db_pool_acquire_duration_seconds", "", &acquire);
    family(o, "notes_db_query_duration_seconds", "histogram",
           "Seconds from sending a statement to its complete result, per statement.");
    for (size_t i = 0; i < notes_num_labelled_statements; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "statement=\"%s\",", statements[i].name);
        histogram_samples(o, "notes_db_query_duration_seconds", labels, &query[i]);
    }
    family(o, "notes_db_connection_errors_total", "counter",
           "Connection attempts that failed and connections that broke.");
    put(o, "notes_db_connection_errors_total %llu\n", (unsigned long long)errors);
    family(o, "notes_db_connections_opened_total", "counter", "Connections opened successfully.");
    put(o, "notes_db_connections_opened_total %llu\n", (unsigned long long)opened);
    family(o, "notes_db_pool_rejected_total", "counter",
           "Queries answered 503 at once: queue full, database down or shutting down.");
    put(o, "notes_db_pool_rejected_total %llu\n", (unsigned long long)rejected);
    family(o, "notes_db_pool_acquire_timeouts_total", "counter",
           "Queries that waited longer than POOL_ACQUIRE_TIMEOUT_MS (503).");
    put(o, "notes_db_pool_acquire_timeouts_total %llu\n", (unsigned long long)acquire_timeouts);
    family(
        o, "notes_db_query_timeouts_total", "counter",
        "Queries that ran past QUERY_TIMEOUT_MS (504): statement_timeout, or the loop's backstop.");
    put(o, "notes_db_query_timeouts_total %llu\n", (unsigned long long)query_timeouts);
}

/* The HTTP series of every loop, merged by (route, method, status). */
static size_t merge_http_series(http_series_t *out, size_t cap)
{
    size_t n = 0;
    for (int l = 0; l < server.nloops; l++) {
        metrics_loop_t *m = all_loops[l];
        size_t count = m == NULL ? 0 : __atomic_load_n(&m->nseries, __ATOMIC_ACQUIRE);
        for (size_t i = 0; i < count; i++) {
            const http_series_t *src = &m->series[i];
            size_t j = 0;
            while (j < n && (out[j].route != src->route || out[j].method != src->method ||
                             out[j].status != src->status))
                j++;
            if (j == n) {
                if (n == cap)
                    continue;
                out[n].route = src->route, out[n].method = src->method, out[n].status = src->status;
                histogram_init(&out[n].duration, metrics_http_bounds, metrics_http_nbounds);
                n++;
            }
            histogram_accumulate(&out[j].duration, &src->duration);
        }
    }
    return n;
}

static void http_metrics(out_t *o, http_series_t *series, size_t nseries)
{
    char labels[128];
    int64_t in_flight = 0;
    size_t connections = 0;

    family(o, "http_requests_total", "counter",
           "Requests answered, by method, route template and status (0: client left first).");
    for (size_t i = 0; i < nseries; i++) {
        http_series_t *s = &series[i];
        put(o, "http_requests_total{method=\"%s\",path=\"%s\",status_code=\"",
            method_labels[s->method], route_labels[s->route]);
        if (s->status < 0)
            put(o, "other\"} %llu\n", (unsigned long long)s->duration.count);
        else
            put(o, "%d\"} %llu\n", s->status, (unsigned long long)s->duration.count);
    }
    family(o, "http_request_duration_seconds", "histogram",
           "Seconds from the handler receiving the request to h2o disposing of it "
           "(response written).");
    for (size_t i = 0; i < nseries; i++) {
        http_series_t *s = &series[i];
        char status[16];
        if (s->status < 0)
            snprintf(status, sizeof(status), "other");
        else
            snprintf(status, sizeof(status), "%d", s->status);
        snprintf(labels, sizeof(labels), "method=\"%s\",path=\"%s\",status_code=\"%s\",",
                 method_labels[s->method], route_labels[s->route], status);
        histogram_samples(o, "http_request_duration_seconds", labels, &s->duration);
    }
    for (int l = 0; l < server.nloops; l++) {
        if (all_loops[l] != NULL)
            in_flight += STAT_READ(all_loops[l]->in_flight);
        connections += STAT_READ(server.loops[l].open_connections);
    }
    family(o, "http_requests_in_flight", "gauge", "Requests received and not yet disposed of.");
    put(o, "http_requests_in_flight %lld\n", (long long)in_flight);
    family(o, "notes_http_connections", "gauge", "Open HTTP connections on both ports.");
    put(o, "notes_http_connections %zu\n", connections);
}

static void build_metrics(out_t *o)
{
    int v = PQlibVersion();
    family(o, "notes_build_info", "gauge", "Build information; the value is always 1.");
    put(o,
        "notes_build_info{version=\"%s\",runtime=\"native\",h2o_version=\"%s\","
        "libpq_version=\"%d.%d\"} 1\n",
        NOTESD_VERSION, H2O_VERSION, v / 10000, v % 10000);
}

double metrics_start_time;

/* GET /metrics */
static int on_metrics(h2o_handler_t *self, h2o_req_t *req)
{
    if (!req_is_get(req)) {
        respond_method_not_allowed(req, "GET, HEAD");
        return 0;
    }
    /* Worst case: every HTTP series, every statement, fixed families. */
    size_t cap_series = MAX_HTTP_SERIES * (size_t)server.nloops;
    http_series_t *series = h2o_mem_alloc_pool(&req->pool, cap_series * sizeof(*series));
    size_t nseries = merge_http_series(series, cap_series);
    size_t cap = 16384 + (nseries + 16) * 3072;
    out_t o = {h2o_mem_alloc_pool(&req->pool, cap), NULL};
    char *start = o.p;
    o.end = o.p + cap;
    http_metrics(&o, series, nseries);
    pool_metrics(&o);
    lag_metrics(&o);
    process_metrics(&o);
    build_metrics(&o);
    respond(req, 200, "text/plain; version=0.0.4; charset=utf-8", start, (size_t)(o.p - start));
    return 0;
}

/* GET /healthz: the process is alive and its loop turns. */
static int on_healthz(h2o_handler_t *self, h2o_req_t *req)
{
    respond(req, 200, CT_JSON, "{\"status\":\"ok\"}", 15);
    return 0;
}

/* /readyz: 200 when the pool can reach the database. With a connection open
 * that is known; otherwise a `select 1` goes through the pool. */
typedef struct ready_ctx {
    pool_query_t query;
    h2o_req_t *req;
} ready_ctx_t;

static void on_ready_ctx_dispose(void *p)
{
    pool_query_cancel(&this_loop->pool, &((ready_ctx_t *)p)->query);
}

static void on_ping_done(pool_query_t *q, PGresult *res, enum pool_error err)
{
    ready_ctx_t *ctx = q->data;
    if (err == POOL_OK && PQresultStatus(res) == PGRES_TUPLES_OK)
        respond(ctx->req, 200, CT_JSON, "{\"status\":\"ready\"}", 18);
    else
        respond_error(ctx->req, 503, "database unreachable");
}

static int on_readyz(h2o_handler_t *self, h2o_req_t *req)
{
    if (pool_has_live_connection(&this_loop->pool)) {
        respond(req, 200, CT_JSON, "{\"status\":\"ready\"}", 18);
        return 0;
    }
    ready_ctx_t *ctx = h2o_mem_alloc_shared(&req->pool, sizeof(*ctx), on_ready_ctx_dispose);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = req;
    ctx->query.statement = (int)notes_ping_statement;
    ctx->query.cb = on_ping_done;
    ctx->query.data = ctx;
    if (pool_query(&this_loop->pool, &ctx->query) != POOL_ADMITTED)
        respond_error(req, 503, "database unreachable");
    return 0;
}

void metrics_register_routes(h2o_hostconf_t *host)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    metrics_start_time = (double)now.tv_sec + (double)now.tv_nsec / 1e9;

    http_register(host, "/metrics", on_metrics);
    http_register(host, "/healthz", on_healthz);
    http_register(host, "/readyz", on_readyz);
}
