/*
 * pool.h - a pool of database connections with the semantics of node-postgres's pg.Pool.
 *
 * At most `max` connections, opened on demand and closed after an idle period;
 * requests that find no idle connection wait in a FIFO queue. Every connection
 * is on exactly one list (connecting, idle, busy), so total, idle and waiting
 * are list lengths at any moment. A connection that breaks is discarded and the
 * requests on it get an error; the pool opens a replacement when work waits.
 *
 * With a pipeline depth N > 0 (--pipeline) every connection runs in libpq's
 * pipeline mode and carries up to N queries at once: a busy connection with
 * room takes new queries, and one that gets room back takes as many waiters
 * as fit, oldest first. Results come back in the order the queries were sent.
 *
 * Batches (N > 1): the queries a connection takes during one turn of the loop
 * go out as one segment, under one sync and in one write at the end of the
 * turn (timers_after_turn), or, while its previous segment is still out and
 * it has room, once that one is answered (pgconn.c); a turn fills the
 * connection it started on before it takes another. The server runs a segment as one implicit
 * transaction, so its writes commit together, and an answer is given only
 * once its segment's sync came back. When a statement fails, the segment's
 * other queries did not run or were rolled back: each is sent again, alone
 * (a segment of its own), and answered by what it does then; the failed one
 * gets its own error, as it would alone. A write is thus applied once or not
 * at all, never twice, and never reported done when it was rolled back.
 *
 * Every connection opens with the parameters pgparams.c built once at
 * start-up: numeric host addresses (no DNS on the loop) and the session
 * settings the result parsing relies on, in the startup packet.
 *
 * One pool per event loop; nothing here is thread-safe.
 */
#ifndef NOTESD_POOL_H
#define NOTESD_POOL_H

#include <h2o.h>
#include <libpq-fe.h>
#include "compiler.h"
#include "exposition.h"
#include "pgconn.h"
#include "stats.h"
#include "timers.h"

/* A statement the pool can run; `name` is also the metrics label and, with
 * --prepared, the prepared statement's name. */
typedef pgconn_statement_t pool_statement_t;

/* Why a query failed, so the handler can pick the status code. */
enum pool_error {
    POOL_OK = 0,
    POOL_ERR_UNAVAILABLE,     /* connection broke or could not be opened: 503 */
    POOL_ERR_ACQUIRE_TIMEOUT, /* waited longer than the acquire timeout: 503 */
    POOL_ERR_QUERY_TIMEOUT,   /* ran longer than the query deadline: 504 */
    POOL_ERR_SHUTDOWN,        /* the server is draining and runs no new query: 503 */
    POOL_ERR_CANCELED, /* cancelled on the server (pg_cancel_backend), not by a deadline: 503 */
};

typedef struct pool_query pool_query_t;

/* Most queries in flight on one connection (--pipeline's upper bound). */
#define POOL_DEPTH_MAX 256

/* Most statements a pool's table may hold (each has a histogram in pool_stats_t). */
#define POOL_STATEMENTS_MAX 8

/* Called exactly once per accepted query. On success `res` is the command's
 * result, which may itself be an error result (PQresultStatus), though never
 * SQLSTATE 57014: a cancelled statement arrives as POOL_ERR_QUERY_TIMEOUT or
 * POOL_ERR_CANCELED. On failure `res` is NULL and `err` says why. Ownership: the pool PQclears
 * `res` after the callback returns, and never touches `q` again. */
typedef void (*pool_query_cb)(pool_query_t *q, PGresult *res, enum pool_error err);

enum pool_query_state {
    POOL_QUERY_NEW,      /* the caller's zeroed memory, before pool_query */
    POOL_QUERY_WAITING,  /* on pool->waiting */
    POOL_QUERY_RUNNING,  /* sent on conn, in its FIFO of queries in flight */
    POOL_QUERY_ORPHANED, /* off its connection (discarded, or its pipeline deadline
                            passed): on a list of queries about to be answered (q->link) */
    POOL_QUERY_DONE,     /* callback called, or cancelled */
};

/* One query. Ownership: the caller's memory (usually part of a request's
 * context); the pool uses it from pool_query until the callback has returned
 * or pool_query_cancel has been called. `params` must stay valid until then. */
struct pool_query {
    int statement;         /* index into the pool's statement table */
    const char *params[4]; /* text parameters */
    pool_query_cb cb;
    void *data;           /* for the caller */
    uint64_t duration_ns; /* set before the callback: from send to result */
    uint64_t wait_ns;     /* set when it is sent: from entering the pool to a connection */
    /* private to the pool */
    enum pool_query_state state;
    h2o_linklist_t link;    /* in pool->waiting, or a list of queries about to be answered */
    struct pool *pool;      /* while waiting or running */
    struct pool_conn *conn; /* while running */
    uint64_t enqueued_ns;   /* entered the pool; its acquire deadline runs from here */
};

/* A list with its length: the pool's state lists. */
typedef struct pool_list {
    h2o_linklist_t head;
    size_t len;
} pool_list_t;

enum pool_admit {
    POOL_ADMITTED = 0, /* the callback will come */
    POOL_QUEUE_FULL,   /* too many waiting already; no callback */
    POOL_DOWN,         /* the database is unreachable right now; no callback */
};

/* Cumulative figures; they only ever increase. Written by the pool's own loop
 * only (STAT_ADD), read by the metrics thread (STAT_READ). */
typedef struct pool_stats {
    uint64_t connects;          /* connections opened successfully */
    uint64_t connection_errors; /* connects that failed, and connections that broke */
    uint64_t rejected;          /* POOL_QUEUE_FULL, POOL_DOWN, and POOL_ERR_SHUTDOWN at once */
    uint64_t acquire_timeouts;
    uint64_t query_timeouts; /* statement_timeout, the pipeline deadline and the backstop,
                                once per query; not a user's cancel */
    uint64_t syncs;          /* sync points sent: one per query, or per batch (--pipeline) */
    uint64_t resent;         /* queries sent again: their segment failed on another one */
    histogram_t acquire;     /* seconds from enqueue to connection handed over */
    histogram_t query[POOL_STATEMENTS_MAX]; /* seconds from send to result, per statement */
} pool_stats_t;

/* What one pool is configured with: computed once at start-up from the
 * configuration (main.c), where each loop's pool gets its share of POOL_MAX.
 * The pool keeps a copy and reads nothing else. */
typedef struct pool_settings {
    int max;                /* most connections open at once (this pool's share of POOL_MAX) */
    int queue_max;          /* most queries waiting for a connection; 0 = no bound */
    int idle_timeout_ms;    /* an idle connection is closed after this long */
    int acquire_timeout_ms; /* longest wait for a connection; 0 = wait forever */
    int connect_timeout_ms; /* longest time to open a connection */
    int query_timeout_ms;   /* the server's statement_timeout, and in pipeline mode (depth > 0)
                               each query's deadline from being sent; the loop's backstop
                               comes a second after the oldest query started; 0 = none */
    int prepared;           /* 1: named prepared statements; 0: unnamed, like node-postgres */
    int depth;              /* --pipeline: queries in flight per connection; 0 = no pipeline */
} pool_settings_t;

typedef struct pool {
    h2o_loop_t *loop;
    pool_settings_t settings;
    const pool_statement_t *statements;
    size_t nstatements;
    unsigned per_conn; /* queries one connection carries at once: settings.depth, or 1 */
    const pgconn_params_t *params; /* how each connection opens (pgparams.h); shared */

    pool_list_t connecting, idle, busy; /* pool_conn_t, by state */
    pool_list_t waiting;                /* pool_query_t, FIFO */
    struct pool_conn *filling;          /* --pipeline: the connection whose segment this turn fills
                                           (synced at the turn's end), or NULL */
    size_t in_flight; /* queries sent and not yet answered, over every connection (a gauge) */

    timers_t *timers; /* the loop's: every deadline of the pool, and its deferred frees */
    uint64_t connect_timeout_ns, query_deadline_ns, query_timeout_ns;
    uint64_t idle_timeout_ns, acquire_timeout_ns;
    /* One entry each for what comes in FIFO order, so each is due for the
     * oldest only: the idle list's cold end, the wait queue's head. */
    timer_entry_t idle_reaper;    /* closes connections idle for idle_timeout_ns */
    timer_entry_t acquire_reaper; /* fails queries that waited acquire_timeout_ns */
    timer_entry_t retry;          /* opens a connection again when a back-off ends */
    int has_acquire_timeout, has_query_timeout;
    uint64_t down_until_ns; /* fail fast until then, after a failed connect */
    uint64_t backoff_ms;    /* the next back-off after a failed connect: 50 ms doubling to 1 s */
    unsigned backoff_round; /* bumped when a back-off starts; see conn_discard */
    unsigned next_conn_id;
    int shutting_down; /* draining: no new connection, no new query */
    pool_stats_t stats;
} pool_t;

/* Prepares an empty pool with `settings` (copied) whose connections open
 * with `params` (see pgparams.h; it must outlive the pool); opens no
 * connection (node-postgres connects lazily). */
void pool_configure(pool_t *pool, const pool_settings_t *settings, const pgconn_params_t *params,
                    const pool_statement_t *statements, size_t nstatements);

/* Attaches the pool to its loop and the loop's timer service (every deadline
 * of the pool); call once before the first query. */
void pool_start(pool_t *pool, h2o_loop_t *loop, timers_t *timers);

/* Runs statement q->statement with q->params; see enum pool_admit. While the
 * pool drains (after pool_shutdown) the query is admitted and answered at once
 * with POOL_ERR_SHUTDOWN, before this returns; that is the promised callback. */
NOTESD_MUSTCHECK enum pool_admit pool_query(pool_t *pool, pool_query_t *q);

/* Takes back a query whose requester went away: a waiting query leaves the
 * queue; a running one is detached and its result dropped when it comes. No
 * callback follows. Does nothing for a query that is done. */
void pool_query_cancel(pool_t *pool, pool_query_t *q);

/* 1 if at least one connection is open (idle or busy). The one function any
 * thread may call, for any loop's pool: it reads two list lengths (STAT_READ). */
int pool_has_live_connection(pool_t *pool);

/* Starts the drain: closes idle connections; running and already waiting
 * queries still complete on the connections that are open or opening, and each
 * connection is closed as soon as nothing waits for it. No new connection is
 * opened (waiters left without any connection get POOL_ERR_SHUTDOWN), and new
 * queries are refused at once with POOL_ERR_SHUTDOWN. */
void pool_shutdown(pool_t *pool);

/* 1 once no connection is left and nothing waits (after pool_shutdown). */
int pool_is_empty(pool_t *pool);

/* ---- the metrics page's figures ---------------------------------------------------------- */

/* Every loop's pool, added up: the list lengths now, the cumulative figures. */
typedef struct pool_report {
    size_t connections, idle, waiting, in_flight;
    int max;
    pool_stats_t stats;                 /* summed; its histograms merged */
    const pool_statement_t *statements; /* the statements' names, for their label */
    size_t nstatements;
} pool_report_t;

/* Starts an empty report (its histograms with the pool's bounds). */
void pool_report_init(pool_report_t *r);

/* Adds one pool's figures, read from its lists (STAT_READ); from any thread. */
void pool_report_add(pool_report_t *r, const pool_t *pool);

/* Writes the notes_db_* families; every statement gets a series of
 * notes_db_query_duration_seconds, labelled with its name. */
void pool_report_write(const pool_report_t *r, exposition_t *o);

/* Takes the pool's entries off the loop's timers; the pool must be empty.
 * The last connections' memory goes with the timers' next pass (timers_stop). */
void pool_dispose(pool_t *pool);

#endif
