/*
 * http.h - the server object: h2o configuration, context, listeners, routes.
 *
 * Owns the h2o globalconf (two hosts: the API and the metrics port), the one
 * event loop's context, and the listening sockets. Route handlers live in
 * routes_*.c and metrics.c; this file only says which path goes where.
 */
#ifndef NOTESD_HTTP_H
#define NOTESD_HTTP_H

#include <h2o.h>
#include "pool.h"

typedef struct notesd_server {
    h2o_globalconf_t conf;
    h2o_context_t ctx;
    h2o_hostconf_t *api_hosts[2], *metrics_hosts[2]; /* NULL-terminated, for accept */
    h2o_accept_ctx_t api_accept, metrics_accept;
    h2o_socket_t *api_listener, *metrics_listener;
    pool_t pool;
    size_t open_connections; /* accepted HTTP connections not yet closed */
    uint64_t started_ns;
} notesd_server_t;

/* One server per process (one event loop). */
extern notesd_server_t server;

/* Registers every route; call before http_start. */
void http_configure(void);

/* Creates the loop and context and opens both listeners; returns 0, or -1
 * after printing why (address in use, bad address). */
int http_start(void);

/* Stops accepting new connections (closes the listeners). */
void http_stop_accepting(void);

/* Registration helpers shared by the routes files. */
h2o_pathconf_t *http_register(h2o_hostconf_t *host, const char *path,
                              int (*on_req)(h2o_handler_t *, h2o_req_t *));

void routes_notes_register(h2o_hostconf_t *host);
void routes_misc_register(h2o_hostconf_t *host);

#endif
