/*
 * routes_misc.c - the seeds' other workloads, no database: GET / (hello world),
 * GET /status, GET /json, GET /primes?below=N, GET /static/..., and the JSON
 * 404 for every path nothing else claims.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "config.h"
#include "delay.h"
#include "http.h"
#include "metrics.h"
#include "render.h"
#include "respond.h"

/* xorshift64*: /json needs a cheap random id, not a cryptographic one. One
 * state per loop thread, seeded on first use. */
static __thread uint64_t rng_state;

static uint64_t rng_next(void)
{
    if (rng_state == 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        rng_state =
            ((uint64_t)now.tv_nsec << 20 ^ (uint64_t)now.tv_sec ^ (uint64_t)(uintptr_t)&rng_state) |
            1;
    }
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* h2o matches registered paths as prefixes ("/json" also gets "/json/x");
 * Express matches "/json" and "/json/" only. Answers the 404 when the path is
 * longer, and says so. */
static int is_exact(h2o_req_t *req, const char *route, size_t len)
{
    h2o_iovec_t p = req->path_normalized;
    if (h2o_memis(p.base, p.len, route, len) ||
        (p.len == len + 1 && memcmp(p.base, route, len) == 0 && p.base[len] == '/'))
        return 1;
    metrics_request_begin(req, ROUTE_OTHER);
    respond_error(req, 404, "not found");
    return 0;
}

/* GET / - seed 002's Express hello world (res.send of a string: text/html). */
static int on_root(h2o_handler_t *self, h2o_req_t *req)
{
    if (!h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/"))) {
        metrics_request_begin(req, ROUTE_OTHER);
        respond_error(req, 404, "not found");
        return 0;
    }
    metrics_request_begin(req, ROUTE_ROOT);
    if (!req_is_get(req))
        respond_method_not_allowed(req, "GET, HEAD");
    else
        respond(req, 200, CT_HTML, "Hello World!", 12);
    return 0;
}

/* GET /status - seed 001 round 1. */
static int on_status(h2o_handler_t *self, h2o_req_t *req)
{
    if (!is_exact(req, H2O_STRLIT("/status")))
        return 0;
    metrics_request_begin(req, ROUTE_STATUS);
    if (!req_is_get(req))
        respond_method_not_allowed(req, "GET, HEAD");
    else
        respond(req, 200, CT_JSON, "{\"status\":\"ok\"}", 15);
    return 0;
}

/* GET /json - one note-shaped object, as the seed's no-database test. */
static int on_json(h2o_handler_t *self, h2o_req_t *req)
{
    if (!is_exact(req, H2O_STRLIT("/json")))
        return 0;
    metrics_request_begin(req, ROUTE_JSON);
    if (!req_is_get(req)) {
        respond_method_not_allowed(req, "GET, HEAD");
        return 0;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long id = 1 + (long)(rng_next() % 200000);
    char *body = h2o_mem_alloc_pool(&req->pool, 512);
    size_t len =
        render_json_sample(body, 512, id, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    respond(req, 200, CT_JSON, body, len);
    return 0;
}

/* Counts primes below n by trial division, the seed's deliberately naive way. */
static long count_primes(long n)
{
    long count = 0;
    for (long i = 2; i < n; i++) {
        int prime = 1;
        for (long d = 2; d * d <= i; d++)
            if (i % d == 0) {
                prime = 0;
                break;
            }
        count += prime;
    }
    return count;
}

/* Reads ?below=N; returns -1 when it is given but not a whole number. */
static long parse_below(h2o_req_t *req)
{
    if (req->query_at == SIZE_MAX)
        return 100000;
    const char *q = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
    while (q < end) {
        const char *amp = memchr(q, '&', end - q);
        const char *stop = amp != NULL ? amp : end;
        if (stop - q > 6 && memcmp(q, "below=", 6) == 0) {
            long v = 0;
            for (const char *p = q + 6; p < stop; p++) {
                if (*p < '0' || *p > '9' || v > (LONG_MAX - 9) / 10)
                    return -1;
                v = v * 10 + (*p - '0');
            }
            return v;
        }
        if (stop - q == 6 && memcmp(q, "below=", 6) == 0)
            return -1;
        q = stop + 1;
    }
    return 100000;
}

/* GET /primes?below=N - seed 001 rounds 2 and 3: CPU work on the loop, on purpose. */
static int on_primes(h2o_handler_t *self, h2o_req_t *req)
{
    if (!is_exact(req, H2O_STRLIT("/primes")))
        return 0;
    metrics_request_begin(req, ROUTE_PRIMES);
    if (!req_is_get(req)) {
        respond_method_not_allowed(req, "GET, HEAD");
        return 0;
    }
    long below = parse_below(req);
    if (below < 0 || below > config.primes_max) {
        char msg[96];
        snprintf(msg, sizeof(msg), "below must be a whole number from 0 to %d", config.primes_max);
        respond_error(req, 400, msg);
        return 0;
    }
    char *body = h2o_mem_alloc_pool(&req->pool, 64);
    int len = snprintf(body, 64, "{\"below\":%ld,\"count\":%ld}", below, count_primes(below));
    respond(req, 200, CT_JSON, body, (size_t)len);
    return 0;
}

static char static_root[PATH_MAX]; /* realpath of STATIC_DIR, without trailing slash */

/* Runs before h2o's file handler on /static: measures the request, and answers
 * 404 unless the path resolves (symlinks included) to a file inside the
 * directory. h2o has already resolved "." and ".." segments. */
static int on_static(h2o_handler_t *self, h2o_req_t *req)
{
    char wanted[PATH_MAX], real[PATH_MAX];
    h2o_iovec_t rest = h2o_iovec_init(req->path_normalized.base + 7, req->path_normalized.len - 7);

    metrics_request_begin(req, ROUTE_STATIC);
    if (!req_is_get(req)) {
        respond_method_not_allowed(req, "GET, HEAD");
        return 0;
    }
    if (static_root[0] == '\0' || rest.len == 0 || memchr(rest.base, '\0', rest.len) != NULL ||
        (size_t)snprintf(wanted, sizeof(wanted), "%s/%.*s", static_root, (int)rest.len,
                         rest.base) >= sizeof(wanted) ||
        realpath(wanted, real) == NULL || strncmp(real, static_root, strlen(static_root)) != 0 ||
        real[strlen(static_root)] != '/') {
        respond_error(req, 404, "not found");
        return 0;
    }
    return -1; /* h2o's file handler serves it */
}

/* h2o's file handler writes the response itself; this filter adds Server-Timing to it. */
static void on_static_response(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    metrics_add_server_timing(req);
    h2o_setup_next_ostream(req, slot);
}

void routes_misc_register(h2o_hostconf_t *host)
{
    http_register(host, "/status", on_status);
    http_register(host, "/json", on_json);
    http_register(host, "/primes", on_primes);
    delay_register(host);

    h2o_pathconf_t *pathconf = http_register(host, "/static", on_static);
    h2o_filter_t *timing = h2o_create_filter(pathconf, sizeof(*timing));
    timing->on_setup_ostream = on_static_response;
    if (realpath(config.static_dir, static_root) == NULL)
        static_root[0] = '\0'; /* no directory: every /static path is a 404 */
    else
        h2o_file_register(pathconf, static_root, NULL, NULL, 0);

    http_register(host, "/", on_root);
}
