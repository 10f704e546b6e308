/*
 * loop.h - the state of each event loop, and the server that holds them.
 *
 * Owns notesd_loop_t: one per thread, each with its h2o context, listeners,
 * slice of the database pool, HTTP counters, timer service and lag probe. All of them are
 * allocated and initialised by loops_init, in main, before any thread starts,
 * so no thread ever publishes a pointer another one reads. Only a loop's own
 * thread changes its state, except the counters and the lag window, which the
 * metrics page reads (atomic loads; the window has a mutex).
 */
#ifndef NOTESD_LOOP_H
#define NOTESD_LOOP_H

#include <pthread.h>
#include <h2o.h>
#include "lag.h"
#include "listen.h"
#include "pool.h"
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
    h2o_context_t ctx;
    listeners_t listen; /* API, TLS and metrics sockets, with their budgets */
    pool_t pool;        /* this loop's slice of POOL_MAX */
    stats_loop_t stats; /* HTTP series, in flight, connections */
    timers_t timers;    /* the loop's timer service: one timerfd */
    lag_probe_t lag;    /* the event-loop lag probe */
    ws_loop_t ws;       /* its WebSocket connections and their counters */
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
    SSL_CTX *ssl_ctx; /* the TLS port's certificate and ALPN; NULL: no TLS port */
    notesd_loop_t *loops;
    int nloops;
    conn_budget_t api_budget; /* MAX_CONNECTIONS: every loop's API and TLS listeners draw on it */
    int api_port, tls_port, metrics_port; /* as bound: PORT=0, TLS_PORT=auto and
                                             METRICS_PORT=auto resolved; 0: none */
} notesd_server_t;

extern notesd_server_t server;

/* The loop of the calling thread; set by http_start_loop. */
extern __thread notesd_loop_t *this_loop;

/* Allocates `n` loops and initialises what they own that needs no event loop
 * yet (counters, lag probes); in main, before any thread starts. */
void loops_init(int n, int lag_interval_ms);

#endif
