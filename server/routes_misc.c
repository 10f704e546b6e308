/*
 * routes_misc.c - the seeds' other workloads, no database: GET / (hello world),
 * GET /status, GET /json, GET /primes?below=N and GET /static/... The route
 * table (routes.h) has already checked the path and the method.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "knob.h"
#include "render.h"
#include "respond.h"
#include "rng.h"
#include "static_files.h"
#include "routes.h"
#include "validate.h"

/* GET / - seed 002's Express hello world (res.send of a string: text/html). */
int misc_root(notesd_req_t *r)
{
    respond(r, 200, CT_HTML, "Hello World!", 12);
    return 0;
}

/* GET /status - seed 001 round 1. */
int misc_status(notesd_req_t *r)
{
    respond(r, 200, CT_JSON, "{\"status\":\"ok\"}", 15);
    return 0;
}

/* GET /json - one note-shaped object, as the seed's no-database test. */
int misc_json(notesd_req_t *r)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long id = 1 + (long)(rng_next() % 200000);
    char *body = h2o_mem_alloc_pool(&r->req->pool, 512);
    size_t len =
        render_json_sample(body, 512, id, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    respond(r, 200, CT_JSON, body, len);
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

/* GET /primes?below=N - seed 001 rounds 2 and 3: CPU work on the loop, on purpose. */
int misc_primes(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    uint64_t below = 100000;
    if (knob_query(r, "below", 0, (uint64_t)r->settings->primes_max, &below) < 0)
        return 0;
    char *body = h2o_mem_alloc_pool(&req->pool, 64);
    int len = snprintf(body, 64, "{\"below\":%llu,\"count\":%ld}", (unsigned long long)below,
                       count_primes((long)below));
    respond(r, 200, CT_JSON, body, (size_t)len);
    return 0;
}

/* STATIC_DIR's files, read once by misc_static_setup; read-only afterwards. */
static static_files_t static_files;

/* A per-request filter in front of h2o's file handler: it adds Server-Timing to
 * the response that handler writes. Only requests handed to the file handler
 * get it, so an answer of our own (404, 405) carries the header once. */
typedef struct static_timing {
    h2o_req_prefilter_t super;
    notesd_req_t *r;
} static_timing_t;

static void on_static_response(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    request_add_server_timing(((static_timing_t *)self)->r);
    h2o_setup_next_prefilter(self, req, slot);
}

/* GET /static/...: answers 404 unless the path, percent-decoded, names a
 * file of the directory as it was at start-up (static_files.h: dot segments
 * resolved by name, links followed inside the directory), then lets h2o's
 * file handler serve that file. A directory named without its trailing slash
 * is redirected to it, as Express's static middleware does; a directory is
 * never listed. No system call here: the index is in memory. */
int misc_static(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    char *rest = h2o_mem_alloc_pool(&req->pool, r->param.len + 1);
    size_t rest_len = validate_decode_path(r->param.base, r->param.len, rest);
    const char *real;

    switch (static_files_find(&static_files, rest, rest_len, &real)) {
    case STATIC_NONE:
        respond_error(r, 404, "not found");
        return 0;
    case STATIC_DIRECTORY: {
        h2o_iovec_t path = h2o_iovec_init(
            req->path.base, req->query_at != SIZE_MAX ? req->query_at : req->path.len);
        if (path.base[path.len - 1] == '/') {
            respond_error(r, 404, "not found");
            return 0;
        }
        h2o_iovec_t location = h2o_concat(&req->pool, path, h2o_iovec_init(H2O_STRLIT("/")));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL, location.base,
                       location.len);
        respond(r, 301, CT_HTML, "", 0);
        return 0;
    }
    case STATIC_FILE:
        break;
    }
    /* The file handler is registered on "/" and reads path_normalized: give it
     * the file's path under the directory, as resolved above. */
    req->path_normalized = h2o_iovec_init((char *)real, strlen(real));
    static_timing_t *timing = (static_timing_t *)h2o_add_prefilter(req, sizeof(*timing));
    timing->super.on_setup_ostream = on_static_response;
    timing->r = r;
    return -1; /* h2o's file handler serves it */
}

/* Reads STATIC_DIR's tree, and adds h2o's file handler behind the
 * dispatcher, on the API port's path "/", rooted at the directory. */
void misc_static_setup(h2o_pathconf_t *pathconf, const request_settings_t *settings)
{
    char root[PATH_MAX];
    if (static_files_load(&static_files, settings->static_dir) == 0 &&
        realpath(settings->static_dir, root) != NULL)
        h2o_file_register(pathconf, root, NULL, NULL, 0);
    /* else no directory: every /static path is a 404 */
}
