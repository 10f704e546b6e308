/*
 * pgconn.h - one non-blocking libpq connection driven by the h2o event loop.
 *
 * Owns the PGconn and the h2o socket that watches it, and knows libpq's
 * asynchronous protocol: connect polling, send + flush, consume + read. It
 * knows nothing of pools, requests or HTTP; the pool (pool.c) decides what to
 * run and what a failure means.
 *
 * Two ways to talk: one command at a time (libpq's default), or pipeline
 * mode, where several commands are in flight and their results come back in
 * the order they were sent. In pipeline mode every command is followed by its
 * own sync point (PQpipelineSync), so an error ends only the command it
 * belongs to: the server skips to the next sync after an error, and with a
 * sync per command there is nothing else to skip.
 *
 * Callback contract: the owner may call pgconn_send or pgconn_close from
 * inside any callback. A close takes effect at once (the session ends, and no
 * callback follows) and the memory goes on the loop's next turn
 * (timers_defer), as every close in notesd does, so the callback that closed
 * it can return through pgconn's own code safely.
 */
#ifndef NOTESD_PGCONN_H
#define NOTESD_PGCONN_H

#include <h2o.h>
#include <libpq-fe.h>
#include "timers.h"

typedef struct pgconn pgconn_t;

/* A statement pgconn_send runs: its SQL, and its name when prepared. */
typedef struct pgconn_statement {
    const char *name;
    const char *sql;
    int nparams;
} pgconn_statement_t;

/* How to open a connection. Ownership: the caller's; it must outlive every
 * connection started with it. */
typedef struct pgconn_params {
    const char *const *keywords; /* for PQconnectStartParams, with expand_dbname */
    const char *const *values;
    int pipeline;                         /* enter pipeline mode after connecting */
    const pgconn_statement_t *statements; /* what pgconn_send's `statement` indexes */
    size_t nstatements;                   /* at most PGCONN_STATEMENTS_MAX */
    int prepared; /* 1: named prepared statements, each prepared on a connection in the
                     pipeline of its first use there (needs `pipeline`); 0: unnamed */
} pgconn_params_t;

/* Most statements a connection's table may hold (one bit each). */
#define PGCONN_STATEMENTS_MAX 32

typedef struct pgconn_callbacks {
    /* The connection is open, nothing is in flight, and it is ready for pgconn_send. */
    void (*on_ready)(pgconn_t *conn, void *data);
    /* The oldest command in flight finished. `res` is its answer
     * (PGRES_TUPLES_OK, PGRES_COMMAND_OK or an error, the prepare's when the
     * prepare sent with it failed; never NULL). Ownership:
     * pgconn PQclears it after the callback returns. Without pipeline mode the
     * connection is ready again. */
    void (*on_result)(pgconn_t *conn, PGresult *res, void *data);
    /* The connection is broken or could not be opened; `why` is one line: libpq's
     * message, led by the server's FATAL reason when it sent one (valid during
     * the callback only). The owner must pgconn_close it. A result of severity
     * FATAL (the server ending the session) comes here, not to on_result. */
    void (*on_failed)(pgconn_t *conn, const char *why, void *data);
} pgconn_callbacks_t;

/* Starts connecting on `loop`. `id` names the connection in log lines
 * ("pg#3"), among them the debug line logged for each notice the server
 * sends. With params->pipeline the connection enters pipeline mode once
 * open, then calls on_ready. A failure found at once is reported on the
 * loop's next turn, through `timers` (which also free the connection after
 * pgconn_close), so the caller never sees a callback before this returns.
 * Always returns a connection: failures arrive through on_failed. */
pgconn_t *pgconn_start(h2o_loop_t *loop, timers_t *timers, unsigned id,
                       const pgconn_params_t *params, const pgconn_callbacks_t *cb, void *data);

/* Sends one command, params->statements[statement] with text parameters
 * `values`: its SQL as an unnamed statement, exactly as node-postgres sends a
 * parameterised query, or with params->prepared the named prepared statement,
 * preceded by its prepare (PQsendPrepare) under the same sync when it is not
 * prepared on this connection yet. In pipeline mode a sync follows it, and it
 * may be sent while others are in flight; otherwise nothing may be in flight.
 * Returns 0, or -1 when the connection broke: like every other failure, that
 * went through on_failed, before this returns, and the connection may have
 * been closed there, so the caller must not touch it. */
int pgconn_send(pgconn_t *conn, unsigned statement, const char *const *values);

/* Commands sent and not yet answered. */
unsigned pgconn_in_flight(const pgconn_t *conn);

/* Ends the connection now: the h2o socket (a dup of libpq's), then the
 * PGconn, are closed (PQfinish: the server's session ends), and no callback
 * follows; the memory is freed on the loop's next turn. Safe inside a pgconn
 * callback. */
void pgconn_close(pgconn_t *conn);

#endif
