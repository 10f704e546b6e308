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
#include "openmetrics.h"
#include "respond.h"
#include "routes.h"
#include "statements.h"

static double start_time_seconds; /* wall clock, set once at start-up by metrics_setup */

/* ---- rendering --------------------------------------------------------------------------- */

typedef struct out {
    char *p, *end;
    int openmetrics; /* 1: the OpenMetrics format (the scraper asked for it); 0: Prometheus text */
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

/* A family's HELP and TYPE lines. OpenMetrics names a counter's family
 * without the `_total` its sample carries; the text format names it with it. */
static void family(out_t *o, const char *name, const char *type, const char *help)
{
    int len = (int)strlen(name);
    if (o->openmetrics && strcmp(type, "counter") == 0 && len > 6 &&
        strcmp(name + len - 6, "_total") == 0)
        len -= 6;
    put(o, "# HELP %.*s %s\n# TYPE %.*s %s\n", len, name, help, len, name, type);
}

/* Ends a bucket's line: with its exemplar first, in OpenMetrics, when a traced
 * request landed in it. */
static void bucket_end(out_t *o, const stats_exemplar_t *exemplars, size_t bucket)
{
    if (o->openmetrics && exemplars != NULL && exemplars[bucket].seq != 0 &&
        o->end - o->p > OPENMETRICS_EXEMPLAR_MAX) {
        const stats_exemplar_t *e = &exemplars[bucket];
        o->p += openmetrics_exemplar(o->p, e->trace_hi, e->trace_lo, e->value, e->unix_ms);
    }
    put(o, "\n");
}

/* Writes the samples of one histogram; `labels` is "" or `a="b",` (trailing comma);
 * `exemplars` (one per bucket, read whole) or NULL. */
static void histogram_samples(out_t *o, const char *name, const char *labels, const histogram_t *h,
                              const stats_exemplar_t *exemplars)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h->nbounds; i++) {
        cumulative += h->counts[i];
        put(o, "%s_bucket{%sle=\"%g\"} %llu", name, labels, h->bounds[i],
            (unsigned long long)cumulative);
        bucket_end(o, exemplars, i);
    }
    put(o, "%s_bucket{%sle=\"+Inf\"} %llu", name, labels, (unsigned long long)h->count);
    bucket_end(o, exemplars, h->nbounds);
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
    histogram_samples(o, "notes_eventloop_delay_seconds", "", &all, NULL);
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
    histogram_samples(o, "notes_db_pool_acquire_duration_seconds", "", &acquire, NULL);
    family(o, "notes_db_query_duration_seconds", "histogram",
           "Seconds from sending a statement to its complete result, per statement.");
    for (size_t i = 0; i < STMT_NUM_LABELLED; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "statement=\"%s\",", statements[i].name);
        histogram_samples(o, "notes_db_query_duration_seconds", labels, &query[i], NULL);
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

/* Keeps, per bucket, the newest of `src`'s exemplars and those already in
 * out->exemplars (allocated from `pool` at the first one). */
static void merge_exemplars(http_series_t *out, const http_series_t *src, h2o_mem_pool_t *pool)
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
            out->exemplars = memset(h2o_mem_alloc_pool(pool, size), 0, size);
        }
        if (out->exemplars[b].seq == 0 || e.unix_ms >= out->exemplars[b].unix_ms) {
            out->exemplars[b] = e;
            out->exemplars[b].seq = 2; /* whole */
        }
    }
}

/* The HTTP series of every loop, merged by (route, method, status); with
 * `pool`, their exemplars too (the newest per bucket). */
static size_t merge_http_series(http_series_t *out, size_t cap, h2o_mem_pool_t *pool)
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
                out[n].exemplars = NULL;
                histogram_init(&out[n].duration, stats_http_bounds, stats_http_nbounds);
                n++;
            }
            histogram_accumulate(&out[j].duration, &src->duration);
            if (pool != NULL)
                merge_exemplars(&out[j], src, pool);
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
        histogram_samples(o, "http_request_duration_seconds", labels, &s->duration, s->exemplars);
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

/* The WebSocket routes' figures (ws.h), every loop's added up; and /sse's events. */
static void ws_metrics(out_t *o)
{
    ws_stats_t all[WS_KIND__COUNT];
    size_t open[WS_KIND__COUNT] = {0};
    uint64_t sse_events = 0;

    memset(all, 0, sizeof(all));
    for (size_t k = 0; k < WS_KIND__COUNT; k++) {
        const histogram_t *h = &server.loops[0].ws.stats[k].lifetime;
        histogram_init(&all[k].lifetime, h->bounds, h->nbounds);
    }
    for (int l = 0; l < server.nloops; l++) {
        const ws_loop_t *w = &server.loops[l].ws;
        sse_events += STAT_READ(server.loops[l].stats.sse_events);
        for (size_t k = 0; k < WS_KIND__COUNT; k++) {
            const ws_stats_t *st = &w->stats[k];
            open[k] += STAT_READ(w->open[k]);
            all[k].opened += STAT_READ(st->opened);
            all[k].messages_in += STAT_READ(st->messages_in);
            all[k].bytes_in += STAT_READ(st->bytes_in);
            all[k].messages_out += STAT_READ(st->messages_out);
            all[k].bytes_out += STAT_READ(st->bytes_out);
            all[k].skipped += STAT_READ(st->skipped);
            for (size_t r = 0; r < WS_CLOSE__COUNT; r++)
                all[k].closes[r] += STAT_READ(st->closes[r]);
            histogram_accumulate(&all[k].lifetime, &st->lifetime);
        }
    }
    family(o, "notes_ws_connections", "gauge",
           "WebSocket connections open now (past the 101, not yet closed), by route.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        put(o, "notes_ws_connections{path=\"%s\"} %zu\n", ws_kind_labels[k], open[k]);
    family(o, "notes_ws_connections_opened_total", "counter",
           "WebSocket connections opened (101 written), by route.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        put(o, "notes_ws_connections_opened_total{path=\"%s\"} %llu\n", ws_kind_labels[k],
            (unsigned long long)all[k].opened);
    family(o, "notes_ws_messages_total", "counter",
           "WebSocket data messages: received whole from clients, and queued to be sent.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        put(o,
            "notes_ws_messages_total{path=\"%s\",direction=\"received\"} %llu\n"
            "notes_ws_messages_total{path=\"%s\",direction=\"sent\"} %llu\n",
            ws_kind_labels[k], (unsigned long long)all[k].messages_in, ws_kind_labels[k],
            (unsigned long long)all[k].messages_out);
    family(o, "notes_ws_message_bytes_total", "counter",
           "Payload bytes of those WebSocket messages (frame headers not counted).");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        put(o,
            "notes_ws_message_bytes_total{path=\"%s\",direction=\"received\"} %llu\n"
            "notes_ws_message_bytes_total{path=\"%s\",direction=\"sent\"} %llu\n",
            ws_kind_labels[k], (unsigned long long)all[k].bytes_in, ws_kind_labels[k],
            (unsigned long long)all[k].bytes_out);
    family(o, "notes_ws_messages_skipped_total", "counter",
           "Messages a route left out because the client was not reading (the feed's gaps).");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        put(o, "notes_ws_messages_skipped_total{path=\"%s\"} %llu\n", ws_kind_labels[k],
            (unsigned long long)all[k].skipped);
    family(o, "notes_ws_closes_total", "counter", "WebSocket connections ended, by reason.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        for (size_t r = 0; r < WS_CLOSE__COUNT; r++)
            put(o, "notes_ws_closes_total{path=\"%s\",reason=\"%s\"} %llu\n", ws_kind_labels[k],
                ws_close_labels[r], (unsigned long long)all[k].closes[r]);
    family(o, "notes_ws_connection_duration_seconds", "histogram",
           "Seconds from the 101 being written to the WebSocket's socket closing.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++) {
        char labels[48];
        snprintf(labels, sizeof(labels), "path=\"%s\",", ws_kind_labels[k]);
        histogram_samples(o, "notes_ws_connection_duration_seconds", labels, &all[k].lifetime,
                          NULL);
    }
    family(o, "notes_sse_events_total", "counter", "Server-Sent Events handed to h2o by GET /sse.");
    put(o, "notes_sse_events_total %llu\n", (unsigned long long)sse_events);
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

/* 1 if the scraper's Accept header asks for OpenMetrics (Prometheus does, first). */
static int wants_openmetrics(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT, -1);
    return i >= 0 && openmetrics_wanted(req->headers.entries[i].value.base,
                                        req->headers.entries[i].value.len);
}

/* GET /metrics: the Prometheus text format, or OpenMetrics (with the HTTP
 * durations' exemplars) for a scraper that asks for it. */
int metrics_get(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    int openmetrics = wants_openmetrics(req);
    /* Worst case: every HTTP series (and each reserved one), every statement, fixed families;
     * in OpenMetrics, an exemplar on every bucket. */
    size_t cap_series = (STATS_HTTP_SERIES_MAX + 1) * (size_t)server.nloops;
    http_series_t *series = h2o_mem_alloc_pool(&req->pool, cap_series * sizeof(*series));
    size_t nseries = merge_http_series(series, cap_series, openmetrics ? &req->pool : NULL);
    size_t cap =
        16384 + (nseries + 16) * (openmetrics ? 3072 + 24 * OPENMETRICS_EXEMPLAR_MAX : 3072);
    out_t o = {h2o_mem_alloc_pool(&req->pool, cap), NULL, openmetrics};
    char *start = o.p;
    o.end = o.p + cap;
    http_metrics(&o, series, nseries);
    ws_metrics(&o);
    pool_metrics(&o);
    lag_metrics(&o);
    process_metrics(&o);
    build_metrics(&o);
    if (openmetrics)
        put(&o, "# EOF\n");
    respond(r, 200,
            openmetrics ? OPENMETRICS_CONTENT_TYPE : "text/plain; version=0.0.4; charset=utf-8",
            start, (size_t)(o.p - start));
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
