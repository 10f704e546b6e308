/*
 * routes_metrics.c - the metrics port: GET /metrics (the Prometheus text page),
 * /healthz and /readyz. A route module like the others, at the top: it reads
 * every layer below (each loop's HTTP series and pool lists, the lag probes,
 * /proc) and nothing below calls it. docs/metrics.md's table lists every
 * family written here. Everything is fixed-size: a scrape allocates one buffer
 * from its request's pool and nothing grows.
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
#include "lag.h"
#include "loop.h"
#include "respond.h"
#include "routes.h"
#include "statements.h"

static double start_time_seconds; /* wall clock, set once at start-up by metrics_setup */

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
    put(o, "process_start_time_seconds %.3f\n", start_time_seconds);
}

static void lag_metrics(out_t *o)
{
    /* Only the thread that renders /metrics uses this. */
    static double samples[LAG_WINDOW_MAX];
    size_t n = 0;
    lag_window_t w;
    histogram_t all;

    histogram_init(&all, stats_fine_bounds, stats_fine_nbounds);
    for (int l = 0; l < server.nloops; l++) {
        lag_drain(&server.loops[l].lag, samples, &n, LAG_WINDOW_MAX);
        histogram_accumulate(&all, &server.loops[l].lag.histogram);
    }
    lag_summarise(samples, n, &w);

    family(o, "notes_eventloop_delay_seconds", "histogram",
           "How late the event-loop probe timer fired, in seconds (the seed's lag probe).");
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
    size_t connections = 0, idle = 0, waiting = 0, in_flight = 0;
    uint64_t errors = 0, opened = 0, rejected = 0, acquire_timeouts = 0, query_timeouts = 0;
    int max = 0;
    histogram_t acquire, query[POOL_STATEMENTS_MAX];

    histogram_init(&acquire, stats_fine_bounds, stats_fine_nbounds);
    for (size_t i = 0; i < STMT_NUM_LABELLED; i++)
        histogram_init(&query[i], stats_fine_bounds, stats_fine_nbounds);
    /* Read from each pool's lists now, not kept as separate counters. */
    for (int l = 0; l < server.nloops; l++) {
        pool_t *pool = &server.loops[l].pool;
        connections +=
            STAT_READ(pool->connecting.len) + STAT_READ(pool->idle.len) + STAT_READ(pool->busy.len);
        idle += STAT_READ(pool->idle.len);
        waiting += STAT_READ(pool->waiting.len);
        in_flight += STAT_READ(pool->in_flight);
        max += pool->settings.max;
        errors += STAT_READ(pool->stats.connection_errors);
        opened += STAT_READ(pool->stats.connects);
        rejected += STAT_READ(pool->stats.rejected);
        acquire_timeouts += STAT_READ(pool->stats.acquire_timeouts);
        query_timeouts += STAT_READ(pool->stats.query_timeouts);
        histogram_accumulate(&acquire, &pool->stats.acquire);
        for (size_t i = 0; i < STMT_NUM_LABELLED; i++)
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
    family(o, "notes_db_pool_queries_in_flight", "gauge",
           "Queries sent and not yet answered, over every connection (above the busy "
           "connections only with --pipeline).");
    put(o, "notes_db_pool_queries_in_flight %zu\n", in_flight);
    family(o, "notes_db_pool_max_connections", "gauge", "The pool's connection limit (POOL_MAX).");
    put(o, "notes_db_pool_max_connections %d\n", max);
    family(o, "notes_db_pool_acquire_duration_seconds", "histogram",
           "Seconds from a query entering the pool to a connection being handed to it.");
    histogram_samples(o, "notes_db_pool_acquire_duration_seconds", "", &acquire);
    family(o, "notes_db_query_duration_seconds", "histogram",
           "Seconds from sending a statement to its complete result, per statement.");
    for (size_t i = 0; i < STMT_NUM_LABELLED; i++) {
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
    family(o, "notes_db_query_timeouts_total", "counter",
           "Queries that ran past QUERY_TIMEOUT_MS (504), each once: statement_timeout, the "
           "--pipeline deadline from sending, or the loop's backstop.");
    put(o, "notes_db_query_timeouts_total %llu\n", (unsigned long long)query_timeouts);
}

/* The HTTP series of every loop, merged by (route, method, status). */
static size_t merge_http_series(http_series_t *out, size_t cap)
{
    size_t n = 0;
    for (int l = 0; l < server.nloops; l++) {
        const stats_loop_t *m = &server.loops[l].stats;
        size_t count = stats_http_nseries(m);
        for (size_t i = 0; i <= count; i++) {
            const http_series_t *src = i < count ? &m->series[i] : &m->overflow;
            if (i == count && STAT_READ(src->duration.count) == 0)
                break; /* the reserved series, unused */
            size_t j = 0;
            while (j < n && (out[j].route != src->route || out[j].method != src->method ||
                             out[j].status != src->status))
                j++;
            if (j == n) {
                if (n == cap)
                    continue;
                out[n].route = src->route, out[n].method = src->method, out[n].status = src->status;
                histogram_init(&out[n].duration, stats_http_bounds, stats_http_nbounds);
                n++;
            }
            histogram_accumulate(&out[j].duration, &src->duration);
        }
    }
    return n;
}

static const char *route_label(uint8_t route)
{
    return route < ROUTE__COUNT ? routes[route].label : "other";
}

static const char *method_label(uint8_t method)
{
    return method < REQUEST_NUM_METHODS ? request_method_labels[method] : "other";
}

static void http_metrics(out_t *o, http_series_t *series, size_t nseries)
{
    char labels[128];
    int64_t in_flight = 0;
    size_t connections = 0;
    uint64_t accepted = 0, stalls = 0, stall_ns = 0;

    family(o, "http_requests_total", "counter",
           "Requests answered, by method, route template and status (0: no answer was sent, "
           "the client gone first or /fault's reset).");
    for (size_t i = 0; i < nseries; i++) {
        http_series_t *s = &series[i];
        put(o, "http_requests_total{method=\"%s\",path=\"%s\",status_code=\"",
            method_label(s->method), route_label(s->route));
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
                 method_label(s->method), route_label(s->route), status);
        histogram_samples(o, "http_request_duration_seconds", labels, &s->duration);
    }
    for (int l = 0; l < server.nloops; l++) {
        in_flight += STAT_READ(server.loops[l].stats.in_flight);
        connections += STAT_READ(server.loops[l].stats.open_connections);
        accepted += STAT_READ(server.loops[l].stats.accepted);
        stalls += STAT_READ(server.loops[l].stats.stalls);
        stall_ns += STAT_READ(server.loops[l].stats.stall_ns);
    }
    family(o, "http_requests_in_flight", "gauge", "Requests received and not yet disposed of.");
    put(o, "http_requests_in_flight %lld\n", (long long)in_flight);
    family(o, "notes_http_connections", "gauge", "Open HTTP connections on both ports.");
    put(o, "notes_http_connections %zu\n", connections);
    size_t max = server.api_budget.max;
    uint64_t paused_full = 0, paused_fds = 0;
    for (int l = 0; l < server.nloops; l++) {
        paused_full += STAT_READ(server.loops[l].stats.accept_paused_full);
        paused_fds += STAT_READ(server.loops[l].stats.accept_paused_fds);
    }
    family(o, "notes_http_connections_max", "gauge",
           "Most open API connections, plain and TLS, all loops together (MAX_CONNECTIONS); "
           "beyond it clients wait in the backlog.");
    put(o, "notes_http_connections_max %zu\n", max);
    family(o, "notes_http_accept_paused_total", "counter",
           "Times a listener stopped accepting: at MAX_CONNECTIONS, or out of descriptors.");
    put(o, "notes_http_accept_paused_total{reason=\"max_connections\"} %llu\n",
        (unsigned long long)paused_full);
    put(o, "notes_http_accept_paused_total{reason=\"fd_exhausted\"} %llu\n",
        (unsigned long long)paused_fds);
    family(o, "notes_http_connections_accepted_total", "counter",
           "Connections accepted on the API ports (plain and TLS), every protocol.");
    put(o, "notes_http_connections_accepted_total %llu\n", (unsigned long long)accepted);
    uint64_t gone[STATS_GONE_REASONS] = {0};
    for (int l = 0; l < server.nloops; l++)
        for (size_t i = 0; i < STATS_GONE_REASONS; i++)
            gone[i] += STAT_READ(server.loops[l].stats.clients_gone[i]);
    family(o, "notes_http_clients_gone_total", "counter",
           "Requests whose client was found gone before its answer was complete, by how: "
           "half_closed (FIN, HALF_CLOSE=abort), reset (RST), aborted (h2o ended the "
           "connection or stream first).");
    /* In the order of enum request_gone (request.h), after REQUEST_PRESENT. */
    static const char *const gone_reasons[STATS_GONE_REASONS] = {"half_closed", "reset", "aborted"};
    for (size_t i = 0; i < STATS_GONE_REASONS; i++)
        put(o, "notes_http_clients_gone_total{reason=\"%s\"} %llu\n", gone_reasons[i],
            (unsigned long long)gone[i]);
    family(o, "notes_stalls_total", "counter", "Pauses of an event loop made by GET /stall.");
    put(o, "notes_stalls_total %llu\n", (unsigned long long)stalls);
    family(o, "notes_stall_seconds_total", "counter",
           "Seconds the event loops were paused by GET /stall, measured around each pause.");
    put(o, "notes_stall_seconds_total %.9f\n", (double)stall_ns / 1e9);
}

static void build_metrics(out_t *o)
{
    int v = PQlibVersion();
    family(o, "notes_build_info", "gauge", "Build information; the value is always 1.");
    put(o,
        "notes_build_info{version=\"%s\",runtime=\"notesd\",h2o_version=\"%s\","
        "libpq_version=\"%d.%d\"} 1\n",
        NOTESD_VERSION, H2O_VERSION, v / 10000, v % 10000);
}

/* Set-up of the /metrics row: the process's start time. */
void metrics_setup(h2o_pathconf_t *pathconf, const request_settings_t *settings)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    start_time_seconds = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* GET /metrics */
int metrics_get(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    /* Worst case: every HTTP series (and each reserved one), every statement, fixed families. */
    size_t cap_series = (STATS_HTTP_SERIES_MAX + 1) * (size_t)server.nloops;
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
    respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", start, (size_t)(o.p - start));
    return 0;
}

/* /healthz, any method: the process is alive and its loop turns. */
int metrics_healthz(notesd_req_t *r)
{
    respond(r, 200, CT_JSON, "{\"status\":\"ok\"}", 15);
    return 0;
}

static void on_ping_done(pool_query_t *q, PGresult *res, enum pool_error err)
{
    notesd_req_t *r = q->data;
    if (err == POOL_OK && PQresultStatus(res) == PGRES_TUPLES_OK)
        respond(r, 200, CT_JSON, "{\"status\":\"ready\"}", 18);
    else
        respond_error(r, 503, "database unreachable");
}

/* /readyz, any method: 200 when the pools can reach the database. With a
 * connection open on any loop's pool that is known; otherwise a `select 1`
 * goes through this loop's pool (loop 0's: the metrics port's). */
int metrics_readyz(notesd_req_t *r)
{
    for (int l = 0; l < server.nloops; l++)
        if (pool_has_live_connection(&server.loops[l].pool)) {
            respond(r, 200, CT_JSON, "{\"status\":\"ready\"}", 18);
            return 0;
        }
    struct request_db *db = request_db(r, STMT_PING, on_ping_done);
    if (pool_query(&this_loop->pool, &db->query) != POOL_ADMITTED)
        respond_error(r, 503, "database unreachable");
    return 0;
}
