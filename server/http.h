/*
 * http.h - the server: h2o configuration, one event loop per thread, listeners, routes.
 *
 * Owns the h2o globalconf (two hosts: the API and the metrics port), shared and
 * read-only once the loops run, and one notesd_loop_t per thread: its context,
 * its listener on the API port (SO_REUSEPORT, so the kernel spreads
 * connections), and its slice of the database pool. Loop 0 runs on the main
 * thread and also serves the metrics port. Route handlers live in routes_*.c
 * and metrics.c; this file only says which path goes where.
 */
#ifndef NOTESD_HTTP_H
#define NOTESD_HTTP_H

#include <pthread.h>
#include <h2o.h>
#include "pool.h"

#define NOTESD_MAX_LOOPS 64

enum loop_state {
    LOOP_RUNNING,
    LOOP_DRAINING, /* not accepting; finishing in-flight requests */
    LOOP_STOPPED,
};

/* Everything one event loop has of its own. Only its thread touches it, except
 * the counters that metrics.c reads with atomic loads. */
typedef struct notesd_loop {
    int index;
    pthread_t thread;
    h2o_context_t ctx;
    h2o_accept_ctx_t api_accept, metrics_accept;
    int api_fd, metrics_fd;                        /* listening sockets, opened by main */
    h2o_socket_t *api_listener, *metrics_listener; /* metrics: loop 0 only */
    pool_t pool;                                   /* this loop's slice of POOL_MAX */
    size_t open_connections;                       /* accepted and not yet closed */
    enum loop_state state;
    int wakeup_fd;        /* an eventfd: "begin shutdown" */
    h2o_socket_t *wakeup; /* watches wakeup_fd */
    uint64_t drain_deadline_ns;
    h2o_timeout_t drain_timeout;
    h2o_timeout_entry_t drain_entry;
} notesd_loop_t;

typedef struct notesd_server {
    h2o_globalconf_t conf;
    h2o_hostconf_t *api_hosts[2], *metrics_hosts[2]; /* NULL-terminated, for accept */
    notesd_loop_t *loops;
    int nloops;
} notesd_server_t;

extern notesd_server_t server;

/* The loop of the calling thread. */
extern __thread notesd_loop_t *this_loop;

/* Registers every route; call once, before http_open_listeners. */
void http_configure(void);

/* Opens the listening sockets of every loop (one per loop on the API port,
 * one metrics socket); returns 0, or -1 after logging why. */
int http_open_listeners(void);

/* On the loop's own thread: creates its event loop and context and starts
 * accepting on its listeners. */
void http_start_loop(notesd_loop_t *loop);

/* Stops accepting new connections on the calling thread's loop. */
void http_stop_accepting(notesd_loop_t *loop);

/* Registration helper shared by the routes files. */
h2o_pathconf_t *http_register(h2o_hostconf_t *host, const char *path,
                              int (*on_req)(h2o_handler_t *, h2o_req_t *));

void routes_notes_register(h2o_hostconf_t *host);
void routes_misc_register(h2o_hostconf_t *host);

#endif
