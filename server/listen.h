/*
 * listen.h - admission: one loop's listening sockets and how many connections
 * each may hold open.
 *
 * Owns listener_t and its state machine (only an ACCEPTING listener is
 * watched by epoll, so clients past the limit wait in the kernel's backlog),
 * the connection budgets the listeners draw on (one, MAX_CONNECTIONS, for
 * every loop's API and TLS listeners; a small one of the metrics port's own,
 * with its budget of held answers), the accept callback, and the descriptor
 * budget MAX_CONNECTIONS is derived from when it is not set (listen_admit).
 * Why admission works this way, and how the metrics port keeps its readers
 * from locking it out: "Admission" and "The metrics port" in
 * docs/decisions.md. What h2o does with an accepted socket (TLS, HTTP/1,
 * HTTP/2) is h2o's; which hosts it serves is http.c's.
 *
 * Each loop's listeners_t is used by that loop's thread only, but for its
 * counters, which the metrics page reads (listen_report_add), and its
 * wake-up eventfd, which a loop that frees a place of a shared budget writes
 * to. A budget's counts are atomic.
 */
#ifndef NOTESD_LISTEN_H
#define NOTESD_LISTEN_H

#include <h2o.h>
#include "compiler.h"
#include "exposition.h"
#include "stats.h"
#include "timers.h"

/* Connections the metrics port accepts at once: its own small budget. */
#define LISTEN_METRICS_MAX_CONNECTIONS 8

/* Bytes of answers the metrics port holds at once, every connection's together:
 * a page that would take more is cut short (listen_metrics_hold). */
#define LISTEN_METRICS_HOLD_MAX (16u << 20)

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
    timer_entry_t backoff; /* ends LISTENER_BACKOFF, on the loop's timers */
} listener_t;

/* One loop's figures; they only ever increase, but for the gauge. Written by
 * the loop's thread (STAT_ADD), read by the metrics page (listen_report_add). */
typedef struct listen_stats {
    size_t open;               /* connections accepted and not yet closed, both ports (a gauge) */
    uint64_t accepted;         /* connections accepted on the API ports (plain and TLS) */
    uint64_t paused_full;      /* times a listener stopped at its connection limit */
    uint64_t paused_fds;       /* times accept failed for want of descriptors (EMFILE...) */
    uint64_t metrics_evicted;  /* metrics connections closed to make room for a waiting client */
    uint64_t metrics_too_slow; /* metrics connections closed: an answer not taken in time */
    size_t metrics_held;       /* bytes of answers the metrics port holds (a gauge) */
} listen_stats_t;

/* A loop's listeners and their budgets. */
struct listeners {
    listener_t api, tls, metrics; /* tls: with TLS_PORT only; metrics: loop 0 only */
    conn_budget_t *api_budget;    /* MAX_CONNECTIONS, for api and tls: every loop's */
    conn_budget_t metrics_budget; /* LISTEN_METRICS_MAX_CONNECTIONS, for metrics */
    listen_stats_t stats;         /* open connections, accepted, pauses */
    unsigned index;               /* the loop's: its bit in a budget's `paused` */
    int wake_fd;                  /* an eventfd: "a place may be free", from any loop */
    h2o_socket_t *wake;           /* watches wake_fd, from listen_start on */
    timers_t *timers;             /* the loop's, from listen_start on: the back-offs */
    h2o_linklist_t metrics_conns; /* the metrics port's connections, oldest first */
    uint64_t answer_timeout_ns;   /* CLIENT_TIMEOUT_MS: a metrics answer's deadline */
};

/* ---- admission: the descriptors MAX_CONNECTIONS comes from ------------------------------ */

/* What the process holds besides its clients' connections. */
typedef struct listen_admission {
    int max_connections; /* MAX_CONNECTIONS as set; 0: derive it from the descriptor limit */
    int loops;           /* THREADS */
    int tls;             /* 1 with a TLS port */
    int metrics;         /* 1 with a metrics port */
    int db_connections;  /* POOL_MAX: two descriptors each (libpq's socket and the loop's dup) */
} listen_admission_t;

/* Raises the soft RLIMIT_NOFILE to the hard one (as a server should: the soft
 * default of 1024 is for interactive shells), then returns MAX_CONNECTIONS:
 * as set (with a warning when the limit leaves less room than that), or what
 * the limit leaves after the descriptors notesd holds besides connections
 * (see "Admission" in docs/decisions.md). Returns -1, with a one-line reason
 * in `err`, when the limit leaves no room at all. On the main thread, before
 * any loop runs. */
NOTESD_MUSTCHECK int listen_admit(const listen_admission_t *a, char *err, size_t len);

/* ---- one loop's listeners ---------------------------------------------------------------- */

/* In main, before any thread starts: no socket yet, every listener CLOSED,
 * the budgets wired (api and tls draw on `api_budget`, which every loop
 * shares; its max is set by the caller); `index` is the loop's. Creates the
 * wake-up eventfd; returns 0, or -1 (errno) if it cannot. */
NOTESD_MUSTCHECK int listen_init(listeners_t *set, unsigned index, conn_budget_t *api_budget);

/* Binds and listens on host:port (an IP address); with `reuseport`, several
 * loops can each have a socket on the same port and the kernel spreads new
 * connections among them. Port 0 takes a free port; *bound gets the port
 * bound. Returns the descriptor, or -1 after logging why. */
int listen_bind(const char *host, int port, int reuseport, int *bound);

/* On the loop's own thread, once its h2o contexts and timers exist: watches
 * every listener that has a socket, handing what it accepts to h2o (the API
 * and TLS listeners to `ctx` with api_hosts, the TLS one with ssl_ctx; the
 * metrics listener to `metrics_ctx`, the metrics port's own configuration,
 * with metrics_hosts). A metrics answer must be written whole within
 * `answer_timeout_ms`. */
void listen_start(listeners_t *set, h2o_context_t *ctx, h2o_context_t *metrics_ctx,
                  timers_t *timers, h2o_hostconf_t **api_hosts, h2o_hostconf_t **metrics_hosts,
                  SSL_CTX *ssl_ctx, uint64_t answer_timeout_ms);

/* Closes every listener: no new connection from now on. */
void listen_stop(listeners_t *set);

/* Frees what listen_start created; after listen_stop, when the loop ends. */
void listen_dispose(listeners_t *set);

/* ---- the metrics port's connections and what they hold ----------------------------------- */

/* A request of the metrics port begins (the router calls it for every one):
 * its connection is busy, so not closed to make room, until h2o disposes of
 * the request; its answer must be written by the deadline. */
void listen_metrics_request(listeners_t *set, h2o_req_t *req);

/* Holds `bytes` more of the metrics port's budget (LISTEN_METRICS_HOLD_MAX)
 * until the request whose pool this is is disposed of. Returns 0, or -1 when
 * the budget has not that much left (nothing held). */
NOTESD_MUSTCHECK int listen_metrics_hold(listeners_t *set, h2o_mem_pool_t *pool, size_t bytes);

/* Connections open on the loop's listeners, both ports. */
static inline size_t listen_open_connections(const listeners_t *set)
{
    return STAT_READ(set->stats.open);
}

/* ---- the metrics page's figures ---------------------------------------------------------- */

/* Every loop's connection figures, added up (listen_report_add on each), and
 * the API budget. */
typedef struct listen_report {
    listen_stats_t sum;
    size_t max; /* MAX_CONNECTIONS */
} listen_report_t;

/* Adds one loop's figures; from any thread. `r` starts zeroed. */
void listen_report_add(listen_report_t *r, const listeners_t *set);

/* Writes the notes_http_connections* and notes_http_accept_paused_total
 * families, and the metrics port's notes_metrics_port_* ones. */
void listen_report_write(const listen_report_t *r, exposition_t *o);

#endif
