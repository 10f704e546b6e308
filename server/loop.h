/*
 * loop.h - the event loops and the server that holds them: their memory,
 * their threads, signals and shutdown.
 *
 * Owns notesd_loop_t: one per thread, each with its h2o context, listeners,
 * slice of the database pool, HTTP counters, timer service, lag probe and
 * WebSockets, and what its requests see of it (`view`, a request_loop_t).
 * All of them are allocated and initialised by loops_init, in main, before any
 * thread starts, so no thread ever publishes a pointer another one reads. Only
 * a loop's own thread changes its state, except the counters and the lag
 * window, which the metrics page reads (atomic loads; the window has a mutex).
 *
 * Also owns the loops' lives: one thread each (loop 0 on the main thread),
 * the stop signals, which arrive on loop 0 through a signalfd (systemd hears
 * STOPPING=1), and the drain:
 * every loop stops accepting, lets its in-flight requests (and their queued
 * queries) finish for up to SHUTDOWN_TIMEOUT_MS, closes its pool and its
 * WebSockets, and stops. A second signal exits at once.
 *
 * Only main.c, http.c and this file name `server`; everything else is handed
 * what it needs (a request its loop, a pool its settings).
 */
#ifndef NOTESD_LOOP_H
#define NOTESD_LOOP_H

#include <pthread.h>
#include <h2o.h>
#include "journal.h"
#include "lag.h"
#include "listen.h"
#include "pool.h"
#include "request.h"
#include "stats.h"
#include "timers.h"
#include "ws.h"

#define NOTESD_MAX_LOOPS LISTEN_MAX_LOOPS

enum loop_state {
    LOOP_RUNNING,
    LOOP_DRAINING, /* not accepting; finishing in-flight requests */
    LOOP_STOPPED,
};

typedef struct notesd_loop {
    int index;
    pthread_t thread;
    h2o_context_t ctx;         /* the API port's (server.conf) */
    h2o_context_t metrics_ctx; /* loop 0 with a metrics port: that port's (server.metrics_conf) */
    listeners_t listen;        /* API, TLS and metrics sockets, with their budgets */
    pool_t pool;               /* this loop's slice of POOL_MAX */
    stats_loop_t stats;        /* HTTP series and request counters */
    timers_t timers;           /* the loop's timer service: one timerfd */
    lag_probe_t lag;           /* the event-loop lag probe */
    ws_loop_t ws;              /* its WebSocket connections and their counters */
    journal_t journal;         /* its request journal (JOURNAL records; none when off) */
    request_loop_t view;       /* the above, as its requests see them (r->loop) */
    enum loop_state state;
    int wakeup_fd;        /* an eventfd: "begin shutdown", written by loop 0 */
    h2o_socket_t *wakeup; /* watches wakeup_fd */
    uint64_t drain_deadline_ns;
    timer_entry_t drain_check; /* while draining: is the loop done yet? */
} notesd_loop_t;

typedef struct notesd_server {
    h2o_globalconf_t conf;                           /* the API port's h2o configuration */
    h2o_globalconf_t metrics_conf;                   /* the metrics port's: HTTP/1.1 only */
    h2o_hostconf_t *api_hosts[2], *metrics_hosts[2]; /* NULL-terminated, for accept */
    SSL_CTX *ssl_ctx; /* the TLS port's certificate and ALPN; NULL: no TLS port */
    notesd_loop_t *loops;
    int nloops;
    const request_loop_t *views[NOTESD_MAX_LOOPS]; /* every loop's view, for the metrics port */
    conn_budget_t api_budget; /* MAX_CONNECTIONS: every loop's API and TLS listeners draw on it */
    int api_port, tls_port, metrics_port; /* as bound: PORT=0, TLS_PORT=auto and
                                             METRICS_PORT=auto resolved; 0: none */
    int shutdown_timeout_ms;              /* SHUTDOWN_TIMEOUT_MS: the drain's limit */
    /* On each loop's own thread, once its event loop and timers exist: its
     * h2o context and listeners (http_start_loop). */
    void (*start_http)(notesd_loop_t *loop, h2o_loop_t *evloop);
    /* On the loop's own thread, when it is done: what start_http made for the
     * routes goes (http_stop_loop). */
    void (*stop_http)(notesd_loop_t *loop);
} notesd_server_t;

extern notesd_server_t server;

/* Allocates `n` loops and initialises what they own that needs no event loop
 * yet (counters, lag probes, listeners without sockets, the views); in main,
 * before any thread starts. Exits after printing why when an eventfd cannot
 * be made. */
void loops_init(int n, int lag_interval_ms, int shutdown_timeout_ms, int journal);

/* The loop whose h2o context is `ctx` (either of its two): how a request
 * finds the loop it runs on. */
static inline notesd_loop_t *loop_of(h2o_context_t *ctx)
{
    if (ctx->globalconf == &server.metrics_conf)
        return H2O_STRUCT_FROM_MEMBER(notesd_loop_t, metrics_ctx, ctx);
    return H2O_STRUCT_FROM_MEMBER(notesd_loop_t, ctx, ctx);
}

/* Blocks the stop signals (so only loop 0's signalfd sees them), starts a
 * thread for every loop but 0, and starts loop 0 on this thread with the
 * signals watched. Returns 0, or -1 after printing why. */
int loops_start(void);

/* Runs loop 0 until the shutdown is done, then waits for the other loops'
 * threads and frees what the loops own. */
void loops_run(void);

#endif
