/*
 * routes.h - the route table: every path notesd answers, as data.
 *
 * One row per route: its id, its template (also the `path` label of the HTTP
 * metrics), the port it is on, how its path is matched, and its handler for
 * each method, as data. The route enum and the labels are generated from the
 * same rows, so they cannot disagree. dispatch.c registers the rows with h2o
 * and dispatches each request: it creates the request's context, answers 404
 * (route "other") when no row matches and 405 (with an Allow header made
 * from the row's methods) when the row has no handler for the method, and
 * otherwise calls the handler. The route tables of the docs and of
 * docs/openapi.json are checked against these rows (tests/route_table.py).
 * Adding a route: one row here, its handler in a routes_*.c file, and its
 * test (docs/contributing.md).
 */
#ifndef NOTESD_ROUTES_H
#define NOTESD_ROUTES_H

#include <h2o.h>
#include "request.h"
#include "ws_report.h"

enum route_port {
    PORT_API,     /* measured: http_requests_total, Server-Timing */
    PORT_METRICS, /* not measured */
};

/* How a row matches the path the client sent (without the query, before any
 * decoding or dot-segment removal), as Express's router matches: letters in
 * any case, and one trailing slash ignored, so "/NOTES/3/" is "/notes/:id". */
enum route_match {
    MATCH_EXACT,  /* the template, or the template and "/" */
    MATCH_PARAM,  /* "/base/:param": one non-empty segment after the base, then maybe "/" */
    MATCH_PREFIX, /* the template, or the template, "/" and anything after it */
    MATCH_NONE,   /* never matched: the route of the 404 */
};

/* A handler answers (now or later) and returns 0, or returns -1 to let the next
 * h2o handler on the port's path answer. On the API port that is h2o's file
 * handler, which serves req->path_normalized from STATIC_DIR: only misc_static
 * returns -1, after pointing path_normalized at the file it checked. */
typedef int (*route_handler_t)(notesd_req_t *r);

/* One row per route: its id, its template (the `path` label), its port, how
 * its path matches, a set-up hook (or NULL) called at start-up with the
 * port's h2o path configuration (its one path, "/") and the port's request
 * settings, what its module keeps per request and per loop (a route_state_t
 * of request.h, or NULL: nothing), then its methods, each `{"METHOD", handler}`: any method h2o
 * parses, by its exact name; "GET" answers HEAD too, and "*" every method
 * the row names no handler for; `{NULL, NULL}` is none. The rows of a port
 * are tried in this order; the first match wins. Adding a method to a route
 * is one more pair here. */
#define ROUTES(X)                                                                                  \
    X(ROUTE_NOTE_BY_ID, "/notes/:id", PORT_API, MATCH_PARAM, NULL, &request_db_state,              \
      {"GET", notes_get}, {"PUT", notes_update})                                                   \
    X(ROUTE_NOTES, "/notes", PORT_API, MATCH_EXACT, NULL, &request_db_state, {"GET", notes_list},  \
      {"POST", notes_insert})                                                                      \
    X(ROUTE_JSON, "/json", PORT_API, MATCH_EXACT, NULL, NULL, {"GET", misc_json})                  \
    X(ROUTE_ROOT, "/", PORT_API, MATCH_EXACT, NULL, NULL, {"GET", misc_root})                      \
    X(ROUTE_STATUS, "/status", PORT_API, MATCH_EXACT, NULL, NULL, {"GET", misc_status})            \
    X(ROUTE_PRIMES, "/primes", PORT_API, MATCH_EXACT, NULL, NULL, {"GET", misc_primes})            \
    X(ROUTE_STATIC, "/static", PORT_API, MATCH_PREFIX, misc_static_setup, NULL,                    \
      {"GET", misc_static})                                                                        \
    X(ROUTE_DELAY, "/delay/:ms", PORT_API, MATCH_PARAM, NULL, &delay_state, {"GET", delay_get})    \
    X(ROUTE_FAULT, "/fault/:status", PORT_API, MATCH_PARAM, NULL, &fixture_state,                  \
      {"GET", fixture_fault})                                                                      \
    X(ROUTE_BYTES, "/bytes/:n", PORT_API, MATCH_PARAM, NULL, &fixture_state,                       \
      {"GET", fixture_bytes})                                                                      \
    X(ROUTE_DRIP, "/drip", PORT_API, MATCH_EXACT, NULL, &fixture_state, {"GET", fixture_drip})     \
    X(ROUTE_STALL, "/stall", PORT_API, MATCH_EXACT, NULL, &fixture_state, {"GET", fixture_stall})  \
    X(ROUTE_WS_ECHO, "/ws/echo", PORT_API, MATCH_EXACT, NULL, NULL, {"GET", ws_echo_get})          \
    X(ROUTE_WS_FEED, "/ws/feed", PORT_API, MATCH_EXACT, NULL, NULL, {"GET", ws_feed_get})          \
    X(ROUTE_SSE, "/sse", PORT_API, MATCH_EXACT, NULL, &stream_state, {"GET", stream_sse})          \
    X(ROUTE_STREAM, "/stream/:n", PORT_API, MATCH_PARAM, NULL, &stream_state,                      \
      {"GET", stream_lines})                                                                       \
    X(ROUTE_OTHER, "other", PORT_API, MATCH_NONE, NULL, NULL, {NULL, NULL})                        \
    X(ROUTE_METRICS, "/metrics", PORT_METRICS, MATCH_PREFIX, metrics_setup, NULL,                  \
      {"GET", metrics_get})                                                                        \
    X(ROUTE_HEALTHZ, "/healthz", PORT_METRICS, MATCH_PREFIX, NULL, NULL, {"*", metrics_healthz})   \
    X(ROUTE_READYZ, "/readyz", PORT_METRICS, MATCH_PREFIX, NULL, &request_db_state,                \
      {"*", metrics_readyz})                                                                       \
    X(ROUTE_JOURNAL, "/journal", PORT_METRICS, MATCH_EXACT, NULL, NULL, {"GET", journal_route})    \
    X(ROUTE_OPENAPI, "/openapi.json", PORT_METRICS, MATCH_EXACT, NULL, NULL,                       \
      {"GET", assets_openapi})                                                                     \
    X(ROUTE_DASHBOARD, "/dashboard", PORT_METRICS, MATCH_EXACT, NULL, NULL,                        \
      {"GET", assets_dashboard})

#define ROUTE_ENUM(id, ...) id,
enum route_id { ROUTES(ROUTE_ENUM) ROUTE__COUNT };
#undef ROUTE_ENUM

/* A method a route answers, and its handler. */
typedef struct route_method {
    const char *name; /* "GET" (HEAD too), "POST", ...; "*": any other; NULL ends a list */
    route_handler_t handler;
} route_method_t;

typedef struct route {
    enum route_id id;
    const char *label; /* the template; the `path` label */
    enum route_port port;
    enum route_match match;
    void (*setup)(h2o_pathconf_t *pathconf, const request_settings_t *settings);
    const route_state_t *state;    /* the module's state; NULL: none */
    const route_method_t *methods; /* ends with a NULL name */
} route_t;

/* The rows, indexed by route id. */
extern const route_t routes[ROUTE__COUNT];

/* The handlers the rows name (routes_notes.c, routes_misc.c, delay.c, routes_fixture.c,
 * routes_ws.c, routes_stream.c, routes_metrics.c, routes_assets.c). */
/* The state the rows name (delay.c, routes_fixture.c, routes_stream.c; request_db_state:
 * request.h). */
extern const route_state_t delay_state, fixture_state, stream_state;

/* The WebSocket routes (routes_ws.c) as ws.c counts them, each with its row's
 * label; the metrics page writes their series in this order. */
#define WS_NROUTES 2
extern const ws_route_t ws_routes[WS_NROUTES];

int notes_get(notesd_req_t *r);
int notes_update(notesd_req_t *r);
int notes_list(notesd_req_t *r);
int notes_insert(notesd_req_t *r);
int misc_json(notesd_req_t *r);
int misc_root(notesd_req_t *r);
int misc_status(notesd_req_t *r);
int misc_primes(notesd_req_t *r);
int misc_static(notesd_req_t *r);
void misc_static_setup(h2o_pathconf_t *pathconf, const request_settings_t *settings);
int delay_get(notesd_req_t *r);
int fixture_fault(notesd_req_t *r);
int fixture_bytes(notesd_req_t *r);
int fixture_drip(notesd_req_t *r);
int fixture_stall(notesd_req_t *r);
int ws_echo_get(notesd_req_t *r);
int ws_feed_get(notesd_req_t *r);
int stream_sse(notesd_req_t *r);
int stream_lines(notesd_req_t *r);
int metrics_get(notesd_req_t *r);
void metrics_setup(h2o_pathconf_t *pathconf, const request_settings_t *settings);
int metrics_healthz(notesd_req_t *r);
int metrics_readyz(notesd_req_t *r);
int journal_route(notesd_req_t *r);
int assets_openapi(notesd_req_t *r);
int assets_dashboard(notesd_req_t *r);

#endif
