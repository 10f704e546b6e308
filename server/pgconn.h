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
 * the order they were sent. In pipeline mode commands go out in segments: the
 * commands sent during one turn of the loop, ended by one sync point and
 * written at once at the end of the turn (timers_after_turn), or later, once
 * the segment before it is answered, while the connection has room: or one
 * command alone, synced at once. The server runs a segment as one implicit
 * transaction: its writes commit together at the sync, and an error in it
 * rolls back the commands before the failing one and skips those after it
 * (PGRES_PIPELINE_ABORTED). So an answer is handed out only when its
 * segment's sync has come back, and it says whether the command took effect:
 * done (its result, or the error that failed the segment), or undone (it did
 * not run, or was rolled back with the segment): the owner sends it again or
 * answers it; it is never reported as run.
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
    int prepared;   /* 1: named prepared statements, each prepared on a connection in the
                       pipeline of its first use there (needs `pipeline`); 0: unnamed */
    unsigned depth; /* pipeline mode: most commands the owner keeps in flight (>= 1); with 1
                       every command is a segment of its own, synced at once */
} pgconn_params_t;

/* Most statements a connection's table may hold (one bit each). */
#define PGCONN_STATEMENTS_MAX 32

/* What became of a command (on_result). */
enum pgconn_outcome {
    PGCONN_DONE,   /* it ran; its answer is final */
    PGCONN_UNDONE, /* its segment failed on another command: it left no trace, send it again */
};

typedef struct pgconn_callbacks {
    /* The connection is open, nothing is in flight, and it is ready for pgconn_send. */
    void (*on_ready)(pgconn_t *conn, void *data);
    /* The oldest command in flight finished. PGCONN_DONE: `res` is its answer
     * (PGRES_TUPLES_OK, PGRES_COMMAND_OK or an error, the prepare's when the
     * prepare sent with it failed), and in pipeline mode its segment ended,
     * committed or failed by this very command. PGCONN_UNDONE (pipeline mode
     * only): `res` is NULL; another command failed the segment, so this one did
     * not run or was rolled back. Ownership: pgconn PQclears `res` after the
     * callback returns. Without pipeline mode the connection is ready again. */
    void (*on_result)(pgconn_t *conn, PGresult *res, enum pgconn_outcome outcome, void *data);
    /* A segment went out: `commands` commands and their sync point, in one
     * write (without pipeline mode: each command, with libpq's sync). */
    void (*on_sent)(pgconn_t *conn, unsigned commands, void *data);
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

/* How a command goes out in pipeline mode. */
enum pgconn_segment {
    PGCONN_BATCH, /* in the open segment, synced at the turn's end, or once the segment
                     before it is answered while it has room (depth > 1) */
    PGCONN_ALONE, /* in a segment of its own, synced at once (after the open one) */
};

/* Sends one command, params->statements[statement] with text parameters
 * `values`: its SQL as an unnamed statement, exactly as node-postgres sends a
 * parameterised query, or with params->prepared the named prepared statement,
 * preceded by its prepare (PQsendPrepare) in the same segment when it is not
 * prepared on this connection yet. Without pipeline mode it goes out at once
 * with its own sync (libpq's), and nothing else may be in flight. In pipeline
 * mode it may be sent while others are in flight (at most params->depth), and
 * goes out as `segment` says. Returns 0, or -1 when the connection broke: like
 * every other failure, that went through on_failed, before this returns, and
 * the connection may have been closed there, so the caller must not touch it. */
int pgconn_send(pgconn_t *conn, unsigned statement, const char *const *values,
                enum pgconn_segment segment);

/* Commands sent and not yet answered. */
unsigned pgconn_in_flight(const pgconn_t *conn);

/* Ends the connection now: the h2o socket (a dup of libpq's), then the
 * PGconn, are closed (PQfinish: the server's session ends), and no callback
 * follows; the memory is freed on the loop's next turn. Safe inside a pgconn
 * callback. */
void pgconn_close(pgconn_t *conn);

#endif
