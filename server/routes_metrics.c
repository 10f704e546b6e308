/*
 * routes_metrics.c - the metrics port: GET /metrics (the Prometheus text page,
 * or OpenMetrics), /healthz and /readyz. A route module like the others: the
 * router hands it every loop (request_settings_t.loops), each module writes
 * its own families of the page (request_report_write for the HTTP series,
 * listen_, ws_, pool_, lag_ and journal_report_write), and this file puts the
 * page together from a table of rows, one per module, with the process's own
 * figures (/proc) and the build's. docs/metrics.md's table lists every family.
 */
#include <dirent.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <libpq-fe.h>
#include <h2o/version.h>
#include "exposition.h"
#include "journal.h"
#include "knob.h"
#include "openmetrics.h"
#include "respond.h"
#include "routes.h"
#include "statements.h"
#include "ws.h"

static double start_time_seconds; /* wall clock, set once at start-up by metrics_setup */

/* The `path` label of each route index: the route's template. */
static const char *route_labels[ROUTE__COUNT];

/* Reads "Key:   123 kB" from /proc/self/status; returns bytes (or the number for Threads). */
static long long proc_status_value(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (p == NULL)
        return -1;
    long long v = strtoll(p + strlen(key), NULL, 10);
    return strstr(key, "Vm") == key ? v * 1024 : v;
}

static void process_metrics(exposition_t *o)
{
    char status[4096] = "";
    FILE *f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        size_t n = fread(status, 1, sizeof(status) - 1, f);
        status[n] = '\0';
        fclose(f);
    }
    exposition_family(o, "process_resident_memory_bytes", "gauge",
                      "Resident set size (VmRSS) in bytes.");
    exposition_printf(o, "process_resident_memory_bytes %lld\n",
                      proc_status_value(status, "VmRSS:"));
    exposition_family(o, "process_virtual_memory_bytes", "gauge",
                      "Virtual memory size (VmSize) in bytes.");
    exposition_printf(o, "process_virtual_memory_bytes %lld\n",
                      proc_status_value(status, "VmSize:"));
    exposition_family(o, "process_heap_bytes", "gauge",
                      "Data segment size (VmData) in bytes, as prom-client reports on Linux.");
    exposition_printf(o, "process_heap_bytes %lld\n", proc_status_value(status, "VmData:"));
    exposition_family(o, "process_threads", "gauge", "Number of OS threads.");
    exposition_printf(o, "process_threads %lld\n", proc_status_value(status, "Threads:"));

    struct mallinfo2 mi = mallinfo2();
    exposition_family(
        o, "notes_malloc_heap_used_bytes", "gauge",
        "Bytes in use in glibc malloc (mallinfo2 uordblks + hblkhd), the native used heap.");
    exposition_printf(o, "notes_malloc_heap_used_bytes %zu\n", mi.uordblks + mi.hblkhd);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    exposition_family(o, "process_cpu_seconds_total", "counter",
                      "User and system CPU time in seconds.");
    exposition_printf(o, "process_cpu_seconds_total %.6f\n",
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
    exposition_family(o, "process_open_fds", "gauge", "Number of open file descriptors.");
    exposition_printf(o, "process_open_fds %d\n", fds);
    exposition_family(o, "process_max_fds", "gauge", "Limit on open file descriptors.");
    exposition_printf(o, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    exposition_family(o, "process_start_time_seconds", "gauge",
                      "Start time since the Unix epoch in seconds.");
    exposition_printf(o, "process_start_time_seconds %.3f\n", start_time_seconds);
}

static void build_metrics(exposition_t *o)
{
    int v = PQlibVersion();
    exposition_family(o, "notes_build_info", "gauge", "Build information; the value is always 1.");
    exposition_printf(o,
                      "notes_build_info{version=\"%s\",runtime=\"notesd\",h2o_version=\"%s\","
                      "libpq_version=\"%d.%d\"} 1\n",
                      NOTESD_VERSION, H2O_VERSION, v / 10000, v % 10000);
}

/* Set-up of the /metrics row: the process's start time, and the routes' labels. */
void metrics_setup(h2o_pathconf_t *pathconf, const request_settings_t *settings)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    start_time_seconds = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    for (size_t i = 0; i < ROUTE__COUNT; i++)
        route_labels[i] = routes[i].label;
}

/* 1 if the scraper's Accept header asks for OpenMetrics (Prometheus does, first). */
static int wants_openmetrics(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT, -1);
    return i >= 0 && openmetrics_wanted(req->headers.entries[i].value.base,
                                        req->headers.entries[i].value.len);
}

/* Who is scraping, for the lag window (lag.h): the client's address and User-Agent. */
static uint64_t reader_key(h2o_req_t *req)
{
    struct sockaddr_storage ss;
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    const void *addr = &ss;
    size_t addr_len = 0;
    if (len != 0 && ss.ss_family == AF_INET)
        addr = &((struct sockaddr_in *)&ss)->sin_addr, addr_len = 4;
    else if (len != 0 && ss.ss_family == AF_INET6)
        addr = &((struct sockaddr_in6 *)&ss)->sin6_addr, addr_len = 16;
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_USER_AGENT, -1);
    h2o_iovec_t agent = i >= 0 ? req->headers.entries[i].value : h2o_iovec_init("", 0);
    return lag_reader_key(addr, addr_len, agent.base, agent.len);
}

/* ---- the page: one row per module ----------------------------------------------------------
 *
 * Each module that reports has a report type, made once per scrape, to which
 * every loop's figures are added, and which the module then writes. The rows
 * below adapt each module's functions to one shape; the page is the rows in
 * order, then the process's and the build's figures. A new module's figures
 * are a row here (and its families in docs/metrics.md). */

/* What a scrape is: the page's pool, its format, its reader (the lag window). */
typedef struct scrape {
    h2o_mem_pool_t *pool;
    int nloops, openmetrics;
    uint64_t reader;
} scrape_t;

typedef struct report_row {
    void *(*make)(const scrape_t *s);
    void (*add)(void *report, const request_loop_t *loop, const scrape_t *s);
    void (*write)(void *report, exposition_t *o);
} report_row_t;

static void *zeroed(const scrape_t *s, size_t size)
{
    return memset(h2o_mem_alloc_pool(s->pool, size), 0, size);
}

static void *http_row_make(const scrape_t *s)
{
    return request_report_new(s->pool, s->nloops, s->openmetrics);
}
static void http_row_add(void *r, const request_loop_t *loop, const scrape_t *s)
{
    request_report_add(r, loop->stats);
}
static void http_row_write(void *r, exposition_t *o)
{
    request_report_write(r, o, route_labels, ROUTE__COUNT);
}

static void *listen_row_make(const scrape_t *s)
{
    return zeroed(s, sizeof(listen_report_t));
}
static void listen_row_add(void *r, const request_loop_t *loop, const scrape_t *s)
{
    listen_report_add(r, loop->listen);
}
static void listen_row_write(void *r, exposition_t *o)
{
    listen_report_write(r, o);
}

static void *ws_row_make(const scrape_t *s)
{
    ws_report_t *r = h2o_mem_alloc_pool(s->pool, sizeof(*r));
    ws_report_init(r);
    return r;
}
static void ws_row_add(void *r, const request_loop_t *loop, const scrape_t *s)
{
    ws_report_add(r, &loop->ws->stats);
}
static void ws_row_write(void *r, exposition_t *o)
{
    ws_report_write(r, o, ws_routes, WS_NROUTES);
}

static void *pool_row_make(const scrape_t *s)
{
    pool_report_t *r = h2o_mem_alloc_pool(s->pool, sizeof(*r));
    pool_report_init(r);
    return r;
}
static void pool_row_add(void *r, const request_loop_t *loop, const scrape_t *s)
{
    pool_report_add(r, loop->pool);
}
static void pool_row_write(void *r, exposition_t *o)
{
    pool_report_write(r, o);
}

static void *lag_row_make(const scrape_t *s)
{
    lag_report_t *r = h2o_mem_alloc_pool(s->pool, sizeof(*r));
    lag_report_init(r);
    return r;
}
static void lag_row_add(void *r, const request_loop_t *loop, const scrape_t *s)
{
    lag_report_add(r, loop->lag, s->reader);
}
static void lag_row_write(void *r, exposition_t *o)
{
    lag_report_write(r, o);
}

static void *journal_row_make(const scrape_t *s)
{
    return zeroed(s, sizeof(journal_report_t));
}
static void journal_row_add(void *r, const request_loop_t *loop, const scrape_t *s)
{
    if (loop->journal != NULL)
        journal_report_add(r, loop->journal);
}
static void journal_row_write(void *r, exposition_t *o)
{
    journal_report_write(r, o);
}

/* The page's families, in this order. */
static const report_row_t reports[] = {
    {http_row_make, http_row_add, http_row_write},
    {listen_row_make, listen_row_add, listen_row_write},
    {ws_row_make, ws_row_add, ws_row_write},
    {pool_row_make, pool_row_add, pool_row_write},
    {lag_row_make, lag_row_add, lag_row_write},
    {journal_row_make, journal_row_add, journal_row_write},
};
#define NUM_REPORTS (sizeof(reports) / sizeof(reports[0]))

/* GET /metrics: the Prometheus text format, or OpenMetrics (with the HTTP
 * durations' exemplars) for a scraper that asks for it. Each module's figures
 * are read from every loop, then written by the module; the page lives in the
 * request's pool. */
int metrics_get(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    const request_settings_t *settings = r->settings;
    scrape_t s = {.pool = &req->pool,
                  .nloops = settings->nloops,
                  .openmetrics = wants_openmetrics(req),
                  .reader = reader_key(req)};
    void *made[NUM_REPORTS];

    for (size_t i = 0; i < NUM_REPORTS; i++)
        made[i] = reports[i].make(&s);
    for (int l = 0; l < s.nloops; l++)
        for (size_t i = 0; i < NUM_REPORTS; i++)
            reports[i].add(made[i], settings->loops[l], &s);

    exposition_t o;
    exposition_init(&o, &req->pool, 65536, s.openmetrics);
    for (size_t i = 0; i < NUM_REPORTS; i++)
        reports[i].write(made[i], &o);
    process_metrics(&o);
    build_metrics(&o);
    if (s.openmetrics)
        exposition_printf(&o, "# EOF\n");
    respond(r, 200,
            s.openmetrics ? OPENMETRICS_CONTENT_TYPE : "text/plain; version=0.0.4; charset=utf-8",
            o.start, exposition_len(&o));
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
    for (int l = 0; l < r->settings->nloops; l++)
        if (pool_has_live_connection(r->settings->loops[l]->pool)) {
            respond(r, 200, CT_JSON, "{\"status\":\"ready\"}", 18);
            return 0;
        }
    struct request_db *db = request_db(r, STMT_PING, on_ping_done);
    if (pool_query(r->loop->pool, &db->query) != POOL_ADMITTED)
        respond_error(r, 503, "database unreachable");
    return 0;
}
