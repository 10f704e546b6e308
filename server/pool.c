/*
 * pool.c - the connection pool: lists, wait queue, timers, fast-fail (see pool.h).
 *
 * Connections are pool_conn_t; each wraps a pgconn_t (pgconn.c does the I/O).
 * pool_conn_set_state() is the only writer of conn->state: it asserts the legal
 * predecessor and moves the connection to the list of its new state. Waiting
 * queries are FIFO, so nobody starves; idle connections are reused LIFO, which
 * leaves surplus connections at the cold end where the idle timeout finds them.
 *
 * Queries in flight: each connection keeps a FIFO of the queries it sent
 * (one slot, or pool->per_conn in pipeline mode), and a result belongs to the
 * oldest. The loop's backstop deadline watches the oldest; when it passes,
 * the connection is discarded, and every query still in it is answered once:
 * the oldest with POOL_ERR_QUERY_TIMEOUT, the others with
 * POOL_ERR_UNAVAILABLE. The deadline starts again for each new oldest, since
 * the server runs a connection's statements one after the other.
 *
 * Back-off: a failed connect makes new queries fail fast (503) for 50 ms,
 * doubling with each failure to 1 s, and the pool tries again when it ends
 * (pool->retry). Connections that fail together (started before the back-off
 * that their failure would start) are one round and double it once, so
 * POOL_MAX connections refused at the same moment wait 50 ms, not a second.
 *
 * Time: every deadline is an entry on the loop's timers. The idle timeout
 * and the acquire timeout are the same length for every connection and every
 * query, and come in the order of a list (the idle list's cold end, the wait
 * queue's head), so each is one entry per pool, due for the oldest; it is
 * moved only when it fires, so a query that passes through the pool costs
 * none of them. A discarded connection leaves its lists at once and is freed
 * on the loop's next turn (timers_defer), as pgconn's are, so a callback that
 * discards it returns through code that may still read it.
 *
 * Drain (pool_shutdown): the connections that running and already waiting
 * queries need stay until that work is done; none is opened; a new query is
 * answered POOL_ERR_SHUTDOWN at once, so keep-alive clients that keep asking
 * during the drain cannot make the pool reconnect while it stops.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "pgconn.h"
#include "pool.h"

enum pool_conn_state {
    POOL_CONN_NEW,        /* on no list yet */
    POOL_CONN_CONNECTING, /* pool->connecting: opening, or running its set-up SQL */
    POOL_CONN_IDLE,       /* pool->idle: ready, idle timeout armed */
    POOL_CONN_BUSY,       /* pool->busy: 1..per_conn queries in flight, query deadline armed */
    POOL_CONN_GONE,       /* on no list; being freed */
};

static const char *state_names[] = {"new", "connecting", "idle", "busy", "gone"};

/* A query sent on a connection and not yet answered. */
typedef struct pool_inflight {
    pool_query_t *query; /* NULL if its requester went away, or its deadline answered it
                            (pipeline mode): the result is dropped when it comes */
    int statement;       /* for metrics */
    int timed_out;       /* answered 504 by its deadline; its result counts no timeout */
    uint64_t sent_ns;
} pool_inflight_t;

typedef struct pool_conn {
    pool_t *pool;
    unsigned id; /* small and stable, for log lines: "pg#3" */
    enum pool_conn_state state;
    h2o_linklist_t link; /* in the list of its state */
    pgconn_t *pg;
    unsigned backoff_round;         /* pool->backoff_round when it started connecting */
    uint64_t active_ns;             /* it connected, or its last result came: IDLE since then */
    timer_entry_t release;          /* GONE: frees it on the loop's next turn */
    timer_entry_t connect_deadline; /* CONNECTING: on pool->timers */
    timer_entry_t query_deadline;   /* BUSY: the oldest query's backstop, on pool->timers */
    timer_entry_t answer_deadline;  /* BUSY, pipeline mode: when the earliest query still
                                       waiting for its answer is due (see on_answer_due) */
    unsigned head, count;           /* the FIFO of queries in flight: slots[head], then onwards */
    pool_inflight_t slots[];        /* pool->per_conn of them */
} pool_conn_t;

#define conn_log(level, conn, fmt, ...)                                                            \
    log_##level("pg#%u %s: " fmt, (conn)->id, state_names[(conn)->state], __VA_ARGS__)

static void on_pg_ready(pgconn_t *pg, void *data);
static void on_pg_result(pgconn_t *pg, PGresult *res, enum pgconn_outcome outcome, void *data);
static void on_pg_sent(pgconn_t *pg, unsigned commands, void *data);
static void on_pg_failed(pgconn_t *pg, const char *why, void *data);
static const pgconn_callbacks_t pg_callbacks = {on_pg_ready, on_pg_result, on_pg_sent,
                                                on_pg_failed};

/* ---- lists ------------------------------------------------------------------------------- */

static void list_init(pool_list_t *l)
{
    h2o_linklist_init_anchor(&l->head);
    l->len = 0;
}

static void list_push_front(pool_list_t *l, h2o_linklist_t *node)
{
    h2o_linklist_insert(l->head.next, node);
    STAT_ADD(l->len, 1); /* read by the metrics thread */
}

static void list_push_back(pool_list_t *l, h2o_linklist_t *node)
{
    h2o_linklist_insert(&l->head, node);
    STAT_ADD(l->len, 1);
}

static void list_remove(pool_list_t *l, h2o_linklist_t *node)
{
    h2o_linklist_unlink(node);
    STAT_SUB(l->len, 1);
}

static pool_list_t *list_of(pool_t *pool, enum pool_conn_state state)
{
    switch (state) {
    case POOL_CONN_CONNECTING:
        return &pool->connecting;
    case POOL_CONN_IDLE:
        return &pool->idle;
    case POOL_CONN_BUSY:
        return &pool->busy;
    default:
        return NULL;
    }
}

static size_t total(pool_t *pool)
{
    return pool->connecting.len + pool->idle.len + pool->busy.len;
}

/* (Re)links a pool-wide entry for `due_ns`: whether or not it was linked,
 * it is now due then, and only then. */
static void relink(pool_t *pool, timer_entry_t *e, uint64_t due_ns)
{
    timers_unlink(pool->timers, e);
    timers_link(pool->timers, e, due_ns);
}

/* The one writer of conn->state: checks the transition, moves lists, arms timers. */
static void pool_conn_set_state(pool_conn_t *conn, enum pool_conn_state next)
{
    pool_t *pool = conn->pool;
    enum pool_conn_state prev = conn->state;

    switch (next) {
    case POOL_CONN_CONNECTING:
        assert(prev == POOL_CONN_NEW);
        break;
    case POOL_CONN_IDLE:
        assert(prev == POOL_CONN_CONNECTING || prev == POOL_CONN_BUSY);
        break;
    case POOL_CONN_BUSY:
        assert(prev == POOL_CONN_CONNECTING || prev == POOL_CONN_IDLE || prev == POOL_CONN_BUSY);
        break;
    case POOL_CONN_GONE:
        assert(prev != POOL_CONN_GONE);
        break;
    default:
        assert(!"bad pool connection state");
    }
    if (prev == next)
        return;
    if (list_of(pool, prev) != NULL)
        list_remove(list_of(pool, prev), &conn->link);
    timers_unlink(pool->timers, &conn->connect_deadline);
    timers_unlink(pool->timers, &conn->query_deadline);
    timers_unlink(pool->timers, &conn->answer_deadline);
    conn->state = next;
    switch (next) {
    case POOL_CONN_CONNECTING:
        list_push_back(&pool->connecting, &conn->link);
        /* libpq enforces connect_timeout only in its blocking calls. */
        timers_link(pool->timers, &conn->connect_deadline,
                    stats_now_ns() + pool->connect_timeout_ns);
        break;
    case POOL_CONN_IDLE:
        list_push_front(&pool->idle, &conn->link); /* LIFO reuse */
        /* The reaper is due for the cold end; the first idle one arms it. */
        if (!timers_is_linked(&pool->idle_reaper))
            timers_link(pool->timers, &pool->idle_reaper, conn->active_ns + pool->idle_timeout_ns);
        break;
    case POOL_CONN_BUSY:
        list_push_back(&pool->busy, &conn->link);
        break;
    default:
        break;
    }
    assert(total(pool) <= (size_t)pool->settings.max);
}

/* ---- queries ----------------------------------------------------------------------------- */

/* Hands a query its outcome; the pool does not touch q afterwards. */
static void finish_query(pool_query_t *q, PGresult *res, enum pool_error err)
{
    q->state = POOL_QUERY_DONE;
    q->conn = NULL;
    q->cb(q, res, err);
}

static pool_query_t *pop_waiting(pool_t *pool)
{
    if (pool->waiting.len == 0)
        return NULL;
    pool_query_t *q = H2O_STRUCT_FROM_MEMBER(pool_query_t, link, pool->waiting.head.next);
    list_remove(&pool->waiting, &q->link);
    return q;
}

static void fail_all_waiting(pool_t *pool, enum pool_error err)
{
    pool_query_t *q;
    while ((q = pop_waiting(pool)) != NULL)
        finish_query(q, NULL, err);
}

static void conn_discard(pool_conn_t *conn, enum pool_error err, const char *reason);

/* Puts q in conn's FIFO of queries in flight and sends it: in the segment
 * this turn fills on conn (which the rest of the turn fills first), or alone
 * (a query sent again after its segment failed). `sent_ns` is when it was
 * first sent: its deadline and its duration count from then. Returns 0, or
 * -1 when the connection broke: on_pg_failed discarded it then, and q got
 * its callback. */
static int conn_put(pool_conn_t *conn, pool_query_t *q, uint64_t sent_ns, int alone)
{
    pool_t *pool = conn->pool;
    uint64_t now = alone ? stats_now_ns() : sent_ns; /* a clock read saved per query */

    assert(conn->count < pool->per_conn);
    pool_conn_set_state(conn, POOL_CONN_BUSY);
    pool_inflight_t *slot = &conn->slots[(conn->head + conn->count) % pool->per_conn];
    slot->query = q;
    slot->statement = q->statement;
    slot->timed_out = 0;
    slot->sent_ns = sent_ns;
    conn->count++;
    STAT_ADD(pool->in_flight, 1);
    q->state = POOL_QUERY_RUNNING;
    q->conn = conn;
    if (pgconn_send(conn->pg, (unsigned)q->statement, q->params,
                    alone ? PGCONN_ALONE : PGCONN_BATCH) != 0)
        return -1; /* conn is gone */
    if (!alone && pool->per_conn > 1)
        pool->filling = conn; /* until on_pg_sent: its segment is open */
    if (conn->count == 1 && pool->has_query_timeout)
        timers_link(pool->timers, &conn->query_deadline, now + pool->query_deadline_ns);
    /* One timer for the earliest query still waiting for its answer. */
    if (pool->per_conn > 1 && pool->has_query_timeout) {
        uint64_t due = sent_ns + pool->query_timeout_ns;
        if (!timers_is_linked(&conn->answer_deadline) || due < conn->answer_deadline.due_ns) {
            timers_unlink(pool->timers, &conn->answer_deadline);
            timers_link(pool->timers, &conn->answer_deadline, due);
        }
    }
    return 0;
}

/* Sends q on conn, which must have room. Returns 0, or -1 when the connection
 * broke: on_pg_failed discarded it then, and q got its callback. */
static int conn_send(pool_conn_t *conn, pool_query_t *q)
{
    uint64_t now = stats_now_ns();
    q->wait_ns = now - q->enqueued_ns;
    histogram_observe(&conn->pool->stats.acquire, (double)q->wait_ns / 1e9);
    return conn_put(conn, q, now, /* alone= */ 0);
}

/* A connection is ready or has room again: it takes waiting queries, oldest
 * first, as many as fit (one without pipeline mode); with nothing in flight
 * and nothing waiting it goes idle, or closes while draining. */
static void conn_fill(pool_conn_t *conn)
{
    pool_t *pool = conn->pool;
    pool_query_t *q;

    while (conn->count < pool->per_conn && (q = pop_waiting(pool)) != NULL)
        if (conn_send(conn, q) != 0)
            return;
    if (conn->count > 0)
        return;
    if (pool->shutting_down)
        conn_discard(conn, POOL_ERR_SHUTDOWN, "shutting down");
    else
        pool_conn_set_state(conn, POOL_CONN_IDLE);
}

static void on_release(timer_entry_t *entry);
static void on_connect_timeout(timer_entry_t *entry);
static void on_query_timeout(timer_entry_t *entry);
static void on_answer_due(timer_entry_t *entry);

static void start_connection(pool_t *pool)
{
    pool_conn_t *conn = calloc(1, sizeof(*conn) + pool->per_conn * sizeof(conn->slots[0]));
    if (conn == NULL)
        abort();
    conn->pool = pool;
    conn->id = ++pool->next_conn_id;
    conn->state = POOL_CONN_NEW;
    conn->release.cb = on_release;
    conn->connect_deadline.cb = on_connect_timeout;
    conn->query_deadline.cb = on_query_timeout;
    conn->answer_deadline.cb = on_answer_due;
    pool_conn_set_state(conn, POOL_CONN_CONNECTING);
    conn_log(debug, conn, "%s", "connecting");
    /* pgconn_start never calls back before returning. */
    conn->backoff_round = pool->backoff_round;
    conn->pg = pgconn_start(pool->loop, pool->timers, conn->id, pool->params, &pg_callbacks, conn);
}

/* Opens connections while queries wait and the limit allows (one per waiter).
 * After a failed connect it waits out the back-off: pool->retry, due when it ends. */
static void grow(pool_t *pool)
{
    if (pool->shutting_down)
        return; /* a drain opens no connection */
    while (pool->connecting.len * pool->per_conn < pool->waiting.len &&
           total(pool) < (size_t)pool->settings.max) {
        if (stats_now_ns() < pool->down_until_ns) {
            relink(pool, &pool->retry, pool->down_until_ns);
            return;
        }
        start_connection(pool);
    }
}

/* The one way out for a connection: log why, fail the queries in flight on it
 * (the oldest with `err`, any others with POOL_ERR_UNAVAILABLE: they did not
 * time out, the connection went), free it. */
static void conn_discard(pool_conn_t *conn, enum pool_error err, const char *reason)
{
    pool_t *pool = conn->pool;
    enum pool_conn_state was = conn->state;
    unsigned round = conn->backoff_round;
    h2o_linklist_t orphans; /* the queries still to answer, oldest first */

    if (err == POOL_ERR_SHUTDOWN || reason == NULL)
        conn_log(debug, conn, "closed: %s", reason != NULL ? reason : "idle timeout");
    else if (conn->count > 1)
        conn_log(warn, conn, "discarded with %u queries in flight: %s", conn->count, reason);
    else
        conn_log(warn, conn, "discarded: %s", reason);
    /* Before the connection is freed and before any callback runs, every query
     * leaves it: a callback may end another request (an HTTP/2 connection
     * closing takes all its streams), whose clean-up then cancels its query
     * through this list, never through the freed connection. */
    h2o_linklist_init_anchor(&orphans);
    for (unsigned i = 0; i < conn->count; i++) {
        pool_query_t *q = conn->slots[(conn->head + i) % pool->per_conn].query;
        if (q == NULL)
            continue; /* its requester left already */
        q->state = POOL_QUERY_ORPHANED;
        q->conn = NULL;
        h2o_linklist_insert(&orphans, &q->link);
    }
    int first = conn->count > 0 && conn->slots[conn->head].query != NULL;
    STAT_SUB(pool->in_flight, conn->count);
    if (pool->filling == conn)
        pool->filling = NULL;
    pool_conn_set_state(conn, POOL_CONN_GONE);
    pgconn_close(conn->pg);
    timers_defer(pool->timers, &conn->release); /* the memory; nothing else reads it now */

    /* Every query still wanted is answered once; one cancelled by an earlier
     * callback has left the list. */
    while (!h2o_linklist_is_empty(&orphans)) {
        pool_query_t *q = H2O_STRUCT_FROM_MEMBER(pool_query_t, link, orphans.next);
        h2o_linklist_unlink(&q->link);
        finish_query(q, NULL, first ? err : POOL_ERR_UNAVAILABLE);
        first = 0;
    }
    if (was == POOL_CONN_CONNECTING && err == POOL_ERR_UNAVAILABLE) {
        /* The database cannot be reached: back off, and when no connection is
         * left, fail the waiters now rather than let them hang (fast-fail).
         * Only the first failure of a round starts a back-off; the others were
         * started before it and say nothing new about the database. */
        if (round == pool->backoff_round) {
            pool->backoff_round++;
            pool->down_until_ns = stats_now_ns() + pool->backoff_ms * 1000000;
            pool->backoff_ms = pool->backoff_ms * 2 > 1000 ? 1000 : pool->backoff_ms * 2;
        }
        if (total(pool) == 0)
            fail_all_waiting(pool, POOL_ERR_UNAVAILABLE);
    }
    if (pool->shutting_down && total(pool) == 0)
        fail_all_waiting(pool, POOL_ERR_SHUTDOWN); /* nothing left to run them on */
    grow(pool);
}

/* ---- pgconn callbacks -------------------------------------------------------------------- */

static void on_pg_ready(pgconn_t *pg, void *data)
{
    pool_conn_t *conn = data;
    conn->active_ns = stats_now_ns();
    STAT_ADD(conn->pool->stats.connects, 1);
    conn->pool->backoff_ms = 50;
    conn->pool->down_until_ns = 0;
    conn_log(debug, conn, "%s", "connected");
    conn_fill(conn);
}

/* Tells statement_timeout from a cancel request (both are SQLSTATE 57014) by
 * the server's primary message; when the messages are translated
 * (lc_messages), by the time taken: statement_timeout never fires before
 * QUERY_TIMEOUT_MS has passed since the statement started, and we measured
 * from before it was sent. (In pipeline mode a query's time also holds its wait
 * behind the queries before it, so there a slow cancel may pass for a timeout.) */
static int is_statement_timeout(pool_t *pool, const PGresult *res, uint64_t took_ns)
{
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

    if (primary != NULL && strcmp(primary, "canceling statement due to statement timeout") == 0)
        return 1;
    if (primary != NULL && strcmp(primary, "canceling statement due to user request") == 0)
        return 0;
    return pool->has_query_timeout &&
           took_ns >= (uint64_t)pool->settings.query_timeout_ms * 1000000;
}

static void on_pg_result(pgconn_t *pg, PGresult *res, enum pgconn_outcome outcome, void *data)
{
    pool_conn_t *conn = data;
    pool_t *pool = conn->pool;
    pool_inflight_t done = conn->slots[conn->head];

    assert(conn->count > 0);
    conn->head = (conn->head + 1) % pool->per_conn;
    conn->count--;
    STAT_SUB(pool->in_flight, 1);
    pool_query_t *q = done.query;
    uint64_t now = stats_now_ns(), took = now - done.sent_ns;
    conn->active_ns = now;
    /* The deadline now watches the next oldest, if any. */
    timers_unlink(pool->timers, &conn->query_deadline);
    if (conn->count > 0 && pool->has_query_timeout)
        timers_link(pool->timers, &conn->query_deadline, now + pool->query_deadline_ns);
    if (outcome == PGCONN_UNDONE) {
        /* Its segment failed on another query: it left no trace, so it goes
         * again, alone, and is answered by what it does then. Nobody waits for
         * one whose requester left or whose deadline answered it: not sent;
         * nor one whose deadline has come: answered, as its timer would. */
        if (q != NULL && pool->has_query_timeout && now >= done.sent_ns + pool->query_timeout_ns) {
            STAT_ADD(pool->stats.query_timeouts, 1);
            q->duration_ns = took;
            finish_query(q, NULL, POOL_ERR_QUERY_TIMEOUT);
        } else if (q != NULL) {
            STAT_ADD(pool->stats.resent, 1);
            (void)conn_put(conn, q, done.sent_ns, /* alone= */ 1); /* -1: q was answered */
            return;
        }
        if (conn->state != POOL_CONN_GONE)
            conn_fill(conn);
        return;
    }
    histogram_observe(&pool->stats.query[done.statement], (double)took / 1e9);
    enum pool_error err = POOL_OK;
    if (PQresultStatus(res) == PGRES_FATAL_ERROR) {
        const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (sqlstate != NULL && strcmp(sqlstate, "57014") == 0) {
            /* query_canceled: statement_timeout, the usual way a query runs out
             * of time (the loop's deadline is only the backstop; both count),
             * or someone's pg_cancel_backend, which is no timeout. */
            err =
                is_statement_timeout(pool, res, took) ? POOL_ERR_QUERY_TIMEOUT : POOL_ERR_CANCELED;
            if (err == POOL_ERR_QUERY_TIMEOUT && !done.timed_out)
                STAT_ADD(pool->stats.query_timeouts, 1);
            conn_log(debug, conn, "%s",
                     err == POOL_ERR_CANCELED ? "statement cancelled" : "statement timed out");
        }
    }
    if (q != NULL) {
        q->duration_ns = took;
        finish_query(q, err == POOL_OK ? res : NULL, err);
    }
    /* The callback may have put a query on it (pipeline mode), or even
     * discarded it: then its memory lasts until the next turn, and it is done. */
    if (conn->state != POOL_CONN_GONE)
        conn_fill(conn);
}

/* A segment went out: a connection that took queries this turn is full. */
static void on_pg_sent(pgconn_t *pg, unsigned commands, void *data)
{
    pool_conn_t *conn = data;
    STAT_ADD(conn->pool->stats.syncs, 1);
    if (conn->pool->filling == conn)
        conn->pool->filling = NULL;
}

static void on_pg_failed(pgconn_t *pg, const char *why, void *data)
{
    pool_conn_t *conn = data;
    STAT_ADD(conn->pool->stats.connection_errors, 1);
    conn_discard(conn, POOL_ERR_UNAVAILABLE, why);
}

/* ---- timers ------------------------------------------------------------------------------ */

static void on_release(timer_entry_t *entry)
{
    free(H2O_STRUCT_FROM_MEMBER(pool_conn_t, release, entry));
}

/* The idle timeout: closes every connection idle for that long, from the
 * cold end of the idle list (the longest idle, since reuse is LIFO), and is
 * due again for the next one there. */
static void on_idle_reap(timer_entry_t *entry)
{
    pool_t *pool = H2O_STRUCT_FROM_MEMBER(pool_t, idle_reaper, entry);
    uint64_t now = stats_now_ns();

    while (pool->idle.len > 0) {
        pool_conn_t *cold = H2O_STRUCT_FROM_MEMBER(pool_conn_t, link, pool->idle.head.prev);
        uint64_t due = cold->active_ns + pool->idle_timeout_ns;
        if (due > now) {
            relink(pool, entry, due);
            return;
        }
        conn_discard(cold, POOL_OK, NULL);
    }
}

static void on_connect_timeout(timer_entry_t *entry)
{
    pool_conn_t *conn = H2O_STRUCT_FROM_MEMBER(pool_conn_t, connect_deadline, entry);
    STAT_ADD(conn->pool->stats.connection_errors, 1);
    conn_discard(conn, POOL_ERR_UNAVAILABLE, "connecting timed out");
}

static void on_query_timeout(timer_entry_t *entry)
{
    pool_conn_t *conn = H2O_STRUCT_FROM_MEMBER(pool_conn_t, query_deadline, entry);
    /* The server did not answer even its own statement_timeout. libpq 15 has
     * no non-blocking cancel: the connection is replaced, never half-read.
     * (In pipeline mode the oldest query may have been counted by its deadline.) */
    if (!conn->slots[conn->head].timed_out)
        STAT_ADD(conn->pool->stats.query_timeouts, 1);
    conn_discard(conn, POOL_ERR_QUERY_TIMEOUT, "query deadline passed");
}

/* Pipeline mode: QUERY_TIMEOUT_MS bounds each query from the moment it is sent
 * on its connection. statement_timeout alone would not: the server runs a
 * connection's statements one after the other, and each one's timeout starts
 * only when it starts, so a query behind k slow ones could wait k times as
 * long. Every query whose time is up is answered POOL_ERR_QUERY_TIMEOUT now;
 * its slot stays until the server's result comes, which is then dropped. The
 * statement may still run after its answer: libpq 15 cannot cancel it without
 * blocking, and it is already on the server's side of the socket. The walk
 * covers every slot: a query sent again keeps its first deadline, so the
 * FIFO is not in deadline order. */
static void on_answer_due(timer_entry_t *entry)
{
    pool_conn_t *conn = H2O_STRUCT_FROM_MEMBER(pool_conn_t, answer_deadline, entry);
    pool_t *pool = conn->pool;
    uint64_t now = stats_now_ns(), next = 0;

    h2o_linklist_t late; /* answered after the walk: a callback may change the FIFO */

    h2o_linklist_init_anchor(&late);
    for (unsigned i = 0; i < conn->count; i++) {
        pool_inflight_t *slot = &conn->slots[(conn->head + i) % pool->per_conn];
        if (slot->query == NULL)
            continue;
        uint64_t due = slot->sent_ns + pool->query_timeout_ns;
        if (due > now) {
            next = next == 0 || due < next ? due : next;
            continue;
        }
        pool_query_t *q = slot->query;
        slot->query = NULL;
        slot->timed_out = 1;
        q->duration_ns = now - slot->sent_ns;
        /* Off the connection: a callback that cancels it finds it on `late`. */
        q->state = POOL_QUERY_ORPHANED;
        q->conn = NULL;
        h2o_linklist_insert(&late, &q->link);
        STAT_ADD(pool->stats.query_timeouts, 1);
    }
    if (next != 0)
        timers_link(pool->timers, &conn->answer_deadline, next);
    while (!h2o_linklist_is_empty(&late)) {
        pool_query_t *q = H2O_STRUCT_FROM_MEMBER(pool_query_t, link, late.next);
        h2o_linklist_unlink(&q->link);
        finish_query(q, NULL, POOL_ERR_QUERY_TIMEOUT);
    }
}

/* The acquire timeout: fails every query that has waited that long, from the
 * head of the queue (the oldest, since it is FIFO), and is due again for the
 * next one there. A callback may queue a query (which links this entry for
 * itself), so the entry is moved to the head's deadline whether linked or not. */
static void on_acquire_reap(timer_entry_t *entry)
{
    pool_t *pool = H2O_STRUCT_FROM_MEMBER(pool_t, acquire_reaper, entry);
    uint64_t now = stats_now_ns();

    while (pool->waiting.len > 0) {
        pool_query_t *q = H2O_STRUCT_FROM_MEMBER(pool_query_t, link, pool->waiting.head.next);
        uint64_t due = q->enqueued_ns + pool->acquire_timeout_ns;
        if (due > now) {
            relink(pool, entry, due);
            return;
        }
        list_remove(&pool->waiting, &q->link);
        STAT_ADD(pool->stats.acquire_timeouts, 1);
        finish_query(q, NULL, POOL_ERR_ACQUIRE_TIMEOUT);
    }
}

static void on_retry(timer_entry_t *entry)
{
    grow(H2O_STRUCT_FROM_MEMBER(pool_t, retry, entry));
}

/* ---- public ------------------------------------------------------------------------------ */

void pool_configure(pool_t *pool, const pool_settings_t *settings, const pgconn_params_t *params,
                    const pool_statement_t *statements, size_t nstatements)
{
    memset(pool, 0, sizeof(*pool));
    pool->statements = statements;
    pool->nstatements = nstatements;
    pool->settings = *settings;
    pool->params = params;
    pool->per_conn = settings->depth > 0 ? (unsigned)settings->depth : 1;
    assert(settings->depth <= POOL_DEPTH_MAX);
    pool->backoff_ms = 50;
    assert(nstatements <= POOL_STATEMENTS_MAX);

    list_init(&pool->connecting);
    list_init(&pool->idle);
    list_init(&pool->busy);
    list_init(&pool->waiting);
    histogram_init(&pool->stats.acquire, stats_fine_bounds, stats_fine_nbounds);
    for (size_t i = 0; i < nstatements; i++)
        histogram_init(&pool->stats.query[i], stats_fine_bounds, stats_fine_nbounds);
}

void pool_start(pool_t *pool, h2o_loop_t *loop, timers_t *timers)
{
    pool->loop = loop;
    pool->timers = timers;
    const pool_settings_t *s = &pool->settings;
    pool->idle_timeout_ns = (uint64_t)s->idle_timeout_ms * 1000000;
    pool->acquire_timeout_ns = (uint64_t)s->acquire_timeout_ms * 1000000;
    /* The server's statement_timeout ends a slow query and keeps the connection;
     * this deadline, a second later, catches a database that stopped answering. */
    pool->query_deadline_ns = ((uint64_t)s->query_timeout_ms + 1000) * 1000000;
    pool->query_timeout_ns = (uint64_t)s->query_timeout_ms * 1000000;
    pool->connect_timeout_ns = (uint64_t)s->connect_timeout_ms * 1000000;
    pool->has_acquire_timeout = s->acquire_timeout_ms > 0;
    pool->has_query_timeout = s->query_timeout_ms > 0;
    pool->idle_reaper.cb = on_idle_reap;
    pool->acquire_reaper.cb = on_acquire_reap;
    pool->retry.cb = on_retry;
}

/* A connection that can take a query now, without overtaking a waiter: the
 * idle one used last (LIFO); or else, in pipeline mode and once the pool has
 * opened all the connections it may, the busy one with the fewest queries in
 * flight. Below POOL_MAX the query waits and the pool opens a connection, as
 * pg.Pool does: PostgreSQL runs each connection's statements one after the
 * other, so spreading queries over more backends lets more of them run (and
 * commit) at once; pipelining is for the queries beyond that. */
static pool_conn_t *pick_connection(pool_t *pool)
{
    /* A batch first: the connection whose segment this turn is filling. */
    if (pool->filling != NULL && pool->filling->count < pool->per_conn && pool->waiting.len == 0)
        return pool->filling;
    if (pool->idle.len > 0)
        return H2O_STRUCT_FROM_MEMBER(pool_conn_t, link, pool->idle.head.next);
    if (pool->per_conn == 1 || pool->waiting.len > 0 || total(pool) < (size_t)pool->settings.max)
        return NULL;
    pool_conn_t *best = NULL;
    for (h2o_linklist_t *n = pool->busy.head.next; n != &pool->busy.head; n = n->next) {
        pool_conn_t *conn = H2O_STRUCT_FROM_MEMBER(pool_conn_t, link, n);
        if (conn->count < pool->per_conn && (best == NULL || conn->count < best->count))
            best = conn;
    }
    return best;
}

enum pool_admit pool_query(pool_t *pool, pool_query_t *q)
{
    assert(q->statement >= 0 && (size_t)q->statement < pool->nstatements);
    q->pool = pool;
    q->conn = NULL;
    q->duration_ns = q->wait_ns = 0;
    q->enqueued_ns = stats_now_ns();

    if (pool->shutting_down) {
        /* Draining: nothing new runs, and nothing new is opened for it. */
        STAT_ADD(pool->stats.rejected, 1);
        finish_query(q, NULL, POOL_ERR_SHUTDOWN);
        return POOL_ADMITTED;
    }
    pool_conn_t *conn = pick_connection(pool);
    if (conn != NULL) {
        /* conn_send may have failed the query already (broken connection);
         * that callback counts as the one promised. */
        (void)conn_send(conn, q);
        return POOL_ADMITTED;
    }
    /* No live connection and the last connect failed recently: answer now. */
    if (pool->busy.len == 0 && pool->connecting.len == 0 && stats_now_ns() < pool->down_until_ns) {
        STAT_ADD(pool->stats.rejected, 1);
        return POOL_DOWN;
    }
    if (pool->settings.queue_max > 0 && pool->waiting.len >= (size_t)pool->settings.queue_max) {
        STAT_ADD(pool->stats.rejected, 1);
        return POOL_QUEUE_FULL;
    }
    q->state = POOL_QUERY_WAITING;
    list_push_back(&pool->waiting, &q->link);
    /* Due for the head of the queue: the first waiter arms it. */
    if (pool->has_acquire_timeout && !timers_is_linked(&pool->acquire_reaper))
        timers_link(pool->timers, &pool->acquire_reaper, q->enqueued_ns + pool->acquire_timeout_ns);
    grow(pool);
    return POOL_ADMITTED;
}

void pool_query_cancel(pool_t *pool, pool_query_t *q)
{
    switch (q->state) {
    case POOL_QUERY_WAITING:
        list_remove(&pool->waiting, &q->link);
        break;
    case POOL_QUERY_ORPHANED:
        /* Off its connection (gone, or its answer is due); not answered yet. */
        h2o_linklist_unlink(&q->link);
        break;
    case POOL_QUERY_RUNNING: {
        /* The connection keeps the slot until the result comes, then drops it. */
        pool_conn_t *conn = q->conn;
        for (unsigned i = 0; i < conn->count; i++) {
            pool_inflight_t *slot = &conn->slots[(conn->head + i) % pool->per_conn];
            if (slot->query == q)
                slot->query = NULL;
        }
        break;
    }
    default:
        break;
    }
    q->state = POOL_QUERY_DONE;
    q->conn = NULL;
}

int pool_has_live_connection(pool_t *pool)
{
    return STAT_READ(pool->idle.len) + STAT_READ(pool->busy.len) > 0;
}

void pool_shutdown(pool_t *pool)
{
    /* Queries already waiting still run (they belong to requests in flight);
     * from now on a connection that has nothing to do is closed, not idled. */
    pool->shutting_down = 1;
    timers_unlink(pool->timers, &pool->retry);
    while (pool->idle.len > 0)
        conn_discard(H2O_STRUCT_FROM_MEMBER(pool_conn_t, link, pool->idle.head.next),
                     POOL_ERR_SHUTDOWN, "shutting down");
    if (total(pool) == 0)
        fail_all_waiting(pool, POOL_ERR_SHUTDOWN); /* the back-off had left them none */
}

int pool_is_empty(pool_t *pool)
{
    return total(pool) == 0 && pool->waiting.len == 0;
}

void pool_dispose(pool_t *pool)
{
    assert(pool_is_empty(pool));
    timers_unlink(pool->timers, &pool->retry);
    timers_unlink(pool->timers, &pool->idle_reaper);
    timers_unlink(pool->timers, &pool->acquire_reaper);
}
