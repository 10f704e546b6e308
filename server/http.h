/*
 * http.h - h2o set-up: the shared configuration with its two hosts (API and
 * metrics), TLS and h2c, the listening sockets, one h2o context per loop.
 *
 * Owns the h2o globalconf (shared and read-only once the loops run) and the
 * TLS context (loaded once, kept for the process's life). Each host gets one
 * dispatcher (dispatch.h), which routes every request; HTTP/2 (ALPN h2 on the
 * TLS port, h2c with --h2c) reaches it as HTTP/1.1 does. Accepting
 * connections, and how many, is listen.h's.
 */
#ifndef NOTESD_HTTP_H
#define NOTESD_HTTP_H

#include "compiler.h"
#include "config.h"
#include "loop.h"
#include "request.h"

/* Sets up h2o from the configuration and registers every row of the route
 * table, each port's requests handled with `settings` (which must outlive
 * the server); call once, before http_open_listeners. */
void http_configure(const notesd_config_t *cfg, const request_settings_t *settings);

/* With a TLS port: loads TLS_CERT and TLS_KEY and offers h2 and http/1.1 by
 * ALPN. Returns 0, or -1 with a one-line reason in `err` (a bad setting). */
NOTESD_MUSTCHECK int http_tls_configure(const notesd_config_t *cfg, char *err, size_t len);

/* Opens the listening sockets of every loop (one per loop on the API port and
 * on the TLS port, one metrics socket); PORT=0, TLS_PORT=auto and
 * METRICS_PORT=auto take free ports, recorded in server.api_port,
 * server.tls_port and server.metrics_port. Returns 0, or -1 after logging why. */
int http_open_listeners(const notesd_config_t *cfg);

/* On the loop's own thread, once its event loop and timers exist: creates
 * its h2o context and starts accepting on its listeners (listen_start). What
 * loop.c calls through server.start_http. */
void http_start_loop(notesd_loop_t *loop, h2o_loop_t *evloop);

/* On the loop's own thread, once it has stopped: frees what the routes keep
 * on it (dispatch.c's per-loop state). */
void http_stop_loop(notesd_loop_t *loop);

#endif
