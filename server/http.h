/*
 * http.h - h2o set-up: the two hosts, the route table's registration and
 * dispatch, the listeners, one h2o context per loop.
 *
 * Owns the h2o globalconf (shared and read-only once the loops run) and the
 * dispatcher that turns an h2o request into a routed notesd_req_t. Which path
 * goes where is routes.h's table; what a route answers is its handler's.
 */
#ifndef NOTESD_HTTP_H
#define NOTESD_HTTP_H

#include "loop.h"

/* Registers every row of the route table; call once, before http_open_listeners. */
void http_configure(void);

/* Opens the listening sockets of every loop (one per loop on the API port,
 * one metrics socket); returns 0, or -1 after logging why. */
int http_open_listeners(void);

/* On the loop's own thread: creates its event loop and context and starts
 * accepting on its listeners. */
void http_start_loop(notesd_loop_t *loop);

/* Stops accepting new connections on the calling thread's loop. */
void http_stop_accepting(notesd_loop_t *loop);

#endif
