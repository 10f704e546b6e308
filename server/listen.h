/*
 * listen.h - admission: one loop's listening sockets and how many connections
 * each may hold open.
 *
 * Owns listener_t and its state machine, the connection budgets the
 * listeners draw on, and the accept callback. Admission is a listener state,
 * not a check per connection: only an ACCEPTING listener is watched by epoll,
 * so clients past the limit wait in the kernel's backlog and cost the loop
 * nothing. Every loop's API and TLS listeners draw on one budget,
 * MAX_CONNECTIONS for the whole process: a TLS client takes a place like a
 * plain one, and a loop whose SO_REUSEPORT socket the kernel happens to give
 * more clients is not full while another has room. The metrics listener has
 * a small budget of its own, so a full API port never locks Prometheus out.
 * What h2o does with an accepted socket (TLS, HTTP/1, HTTP/2) is h2o's; which
 * hosts it serves is http.c's.
 *
 * Each loop's listeners_t is used by that loop's thread only, but for the
 * counters in its stats, which the metrics page reads, and its wake-up
 * eventfd, which a loop that frees a place of a shared budget writes to. A
 * budget's counts are atomic.
 */
#ifndef NOTESD_LISTEN_H
#define NOTESD_LISTEN_H

#include <h2o.h>
#include "compiler.h"
#include "stats.h"

/* Connections the metrics port accepts at once: its own small budget. */
#define LISTEN_METRICS_MAX_CONNECTIONS 8

/* Most loops a budget can be shared by (THREADS' upper bound). */
#define LISTEN_MAX_LOOPS 64

/* How a listening socket stands; listener_set_state (listen.c) is the only writer. */
enum listener_state {
    LISTENER_ACCEPTING, /* watched: a new connection is accepted at once */
    LISTENER_FULL,      /* at its connection limit: not watched until one closes */
    LISTENER_BACKOFF,   /* accept failed for want of descriptors: not watched for 100 ms */
    LISTENER_CLOSED,    /* shut down, or never opened */
};

/* Connections that listeners, of one loop or of several, may hold open
 * together. A loop that finds it spent sets its bit in `paused` and stops
 * reading its listeners; the loop that frees a place wakes every paused one
 * (listeners_t's wake_fd), and each takes what is free again. */
typedef struct conn_budget {
    size_t open;     /* accepted on its listeners and not yet closed (atomic) */
    size_t max;      /* its listeners stop being read at this many; set before threads start */
    uint64_t paused; /* bit i: loop i's listeners on it wait for a place (atomic) */
    int wake_fd[LISTEN_MAX_LOOPS]; /* loop i's wake-up eventfd (listeners_t.wake_fd) */
} conn_budget_t;

typedef struct listeners listeners_t;

/* One listening socket of a loop. New clients that find it FULL or in BACKOFF
 * wait in the kernel's backlog, not in notesd. */
typedef struct listener {
    int fd;             /* opened by main (listen_bind, through http_open_listeners); -1 = none */
    h2o_socket_t *sock; /* wraps fd on the loop; closing it closes fd */
    h2o_accept_ctx_t accept;
    enum listener_state state;
    conn_budget_t *budget; /* the connections it may accept, shared with other listeners */
    listeners_t *set;      /* the loop's listeners, this one among them */
    int starved;           /* accept failed for want of descriptors since the last success */
    h2o_timeout_entry_t backoff_entry; /* ends LISTENER_BACKOFF */
} listener_t;

/* A loop's listeners and their budgets. */
struct listeners {
    listener_t api, tls, metrics; /* tls: with TLS_PORT only; metrics: loop 0 only */
    conn_budget_t *api_budget;    /* MAX_CONNECTIONS, for api and tls: every loop's */
    conn_budget_t metrics_budget; /* LISTEN_METRICS_MAX_CONNECTIONS, for metrics */
    stats_loop_t *stats;          /* the loop's: open connections, accepted, pauses */
    unsigned index;               /* the loop's: its bit in a budget's `paused` */
    int wake_fd;                  /* an eventfd: "a place may be free", from any loop */
    h2o_socket_t *wake;           /* watches wake_fd, from listen_start on */
    h2o_loop_t *loop;             /* from listen_start on */
    h2o_timeout_t backoff;        /* 100 ms, for listener_t.backoff_entry */
};

/* In main, before any thread starts: no socket yet, every listener CLOSED,
 * the budgets wired (api and tls draw on `api_budget`, which every loop
 * shares; its max is set by the caller), counted in `stats`; `index` is the
 * loop's. Creates the wake-up eventfd; returns 0, or -1 (errno) if it cannot. */
NOTESD_MUSTCHECK int listen_init(listeners_t *set, stats_loop_t *stats, unsigned index,
                                 conn_budget_t *api_budget);

/* Binds and listens on host:port (an IP address); with `reuseport`, several
 * loops can each have a socket on the same port and the kernel spreads new
 * connections among them. Port 0 takes a free port; *bound gets the port
 * bound. Returns the descriptor, or -1 after logging why. */
int listen_bind(const char *host, int port, int reuseport, int *bound);

/* On the loop's own thread, once its h2o context exists: watches every
 * listener that has a socket, handing what it accepts to h2o for `ctx` (the
 * API and TLS listeners with api_hosts, the TLS one with ssl_ctx; the metrics
 * listener with metrics_hosts). */
void listen_start(listeners_t *set, h2o_context_t *ctx, h2o_hostconf_t **api_hosts,
                  h2o_hostconf_t **metrics_hosts, SSL_CTX *ssl_ctx);

/* Closes every listener: no new connection from now on. */
void listen_stop(listeners_t *set);

/* Frees what listen_start created; after listen_stop, when the loop ends. */
void listen_dispose(listeners_t *set);

/* Descriptors a loop's listeners hold: the API listener, the TLS one (with
 * `tls`), and the wake-up eventfd. The metrics listener is counted apart. */
#define LISTEN_FDS_PER_LOOP(tls) (2 + ((tls) ? 1 : 0))

#endif
