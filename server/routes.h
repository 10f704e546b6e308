/*
 * routes.h - the route table: every path notesd answers, as data.
 *
 * One row per route: its id, its template (also the `path` label of the HTTP
 * metrics), the port it is on, how its path is matched, and its handler for
 * each method. The route enum and the labels are generated from the same rows,
 * so they cannot disagree. dispatch.c registers the rows with h2o and dispatches
 * each request: it creates the request's context, answers 404 (route "other")
 * when no row matches and 405 (with Allow) when the row has no handler for the
 * method, and otherwise calls the handler. Adding a route: one row here, its
 * handler in a routes_*.c file, and its test.
 */
#ifndef NOTESD_ROUTES_H
#define NOTESD_ROUTES_H

#include <h2o.h>
#include "request.h"

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

/* id, template and `path` label, port, match, GET and HEAD, POST, PUT, any
 * other method (only where none of the three is given), and a set-up hook
 * called at start-up with the port's h2o path configuration (its one path,
 * "/") and the port's request settings. The rows of a port are tried in this
 * order; the first match wins. */
#define ROUTES(X)                                                                                  \
    X(ROUTE_NOTE_BY_ID, "/notes/:id", PORT_API, MATCH_PARAM, notes_get, NULL, notes_update, NULL,  \
      NULL)                                                                                        \
    X(ROUTE_NOTES, "/notes", PORT_API, MATCH_EXACT, notes_list, notes_insert, NULL, NULL, NULL)    \
    X(ROUTE_JSON, "/json", PORT_API, MATCH_EXACT, misc_json, NULL, NULL, NULL, NULL)               \
    X(ROUTE_ROOT, "/", PORT_API, MATCH_EXACT, misc_root, NULL, NULL, NULL, NULL)                   \
    X(ROUTE_STATUS, "/status", PORT_API, MATCH_EXACT, misc_status, NULL, NULL, NULL, NULL)         \
    X(ROUTE_PRIMES, "/primes", PORT_API, MATCH_EXACT, misc_primes, NULL, NULL, NULL, NULL)         \
    X(ROUTE_STATIC, "/static", PORT_API, MATCH_PREFIX, misc_static, NULL, NULL, NULL,              \
      misc_static_setup)                                                                           \
    X(ROUTE_DELAY, "/delay/:ms", PORT_API, MATCH_PARAM, delay_get, NULL, NULL, NULL, NULL)         \
    X(ROUTE_FAULT, "/fault/:status", PORT_API, MATCH_PARAM, fixture_fault, NULL, NULL, NULL, NULL) \
    X(ROUTE_BYTES, "/bytes/:n", PORT_API, MATCH_PARAM, fixture_bytes, NULL, NULL, NULL, NULL)      \
    X(ROUTE_DRIP, "/drip", PORT_API, MATCH_EXACT, fixture_drip, NULL, NULL, NULL, NULL)            \
    X(ROUTE_STALL, "/stall", PORT_API, MATCH_EXACT, fixture_stall, NULL, NULL, NULL, NULL)         \
    X(ROUTE_WS_ECHO, "/ws/echo", PORT_API, MATCH_EXACT, ws_echo_get, NULL, NULL, NULL, NULL)       \
    X(ROUTE_WS_FEED, "/ws/feed", PORT_API, MATCH_EXACT, ws_feed_get, NULL, NULL, NULL, NULL)       \
    X(ROUTE_SSE, "/sse", PORT_API, MATCH_EXACT, stream_sse, NULL, NULL, NULL, NULL)                \
    X(ROUTE_STREAM, "/stream/:n", PORT_API, MATCH_PARAM, stream_lines, NULL, NULL, NULL, NULL)     \
    X(ROUTE_OTHER, "other", PORT_API, MATCH_NONE, NULL, NULL, NULL, NULL, NULL)                    \
    X(ROUTE_METRICS, "/metrics", PORT_METRICS, MATCH_PREFIX, metrics_get, NULL, NULL, NULL,        \
      metrics_setup)                                                                               \
    X(ROUTE_HEALTHZ, "/healthz", PORT_METRICS, MATCH_PREFIX, NULL, NULL, NULL, metrics_healthz,    \
      NULL)                                                                                        \
    X(ROUTE_READYZ, "/readyz", PORT_METRICS, MATCH_PREFIX, NULL, NULL, NULL, metrics_readyz, NULL)

#define ROUTE_ENUM(id, ...) id,
enum route_id { ROUTES(ROUTE_ENUM) ROUTE__COUNT };
#undef ROUTE_ENUM

typedef struct route {
    enum route_id id;
    const char *label; /* the template; the `path` label */
    enum route_port port;
    enum route_match match;
    route_handler_t get, post, put, any;
    void (*setup)(h2o_pathconf_t *pathconf, const request_settings_t *settings);
} route_t;

/* The rows, indexed by route id. */
extern const route_t routes[ROUTE__COUNT];

/* The handlers the rows name (routes_notes.c, routes_misc.c, delay.c, routes_fixture.c,
 * routes_ws.c, routes_stream.c, routes_metrics.c). */
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

#endif
