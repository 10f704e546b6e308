/*
 * pgconn.h - one non-blocking libpq connection driven by the h2o event loop.
 *
 * Owns the PGconn and the h2o socket that watches it, and knows libpq's
 * asynchronous protocol: connect polling, send + flush, consume + read. It
 * knows nothing of pools, requests or HTTP; the pool (pool.c) decides what to
 * run and what a failure means.
 *
 * Callback contract: each callback is the last thing pgconn does before
 * returning to the loop, so the owner may call pgconn_send or pgconn_close
 * from inside any of them.
 */
#ifndef NOTESD_PGCONN_H
#define NOTESD_PGCONN_H

#include <h2o.h>
#include <libpq-fe.h>

typedef struct pgconn pgconn_t;

typedef struct pgconn_callbacks {
    /* The connection is open and its set-up SQL has run; it is ready for pgconn_send. */
    void (*on_ready)(pgconn_t *conn, void *data);
    /* The command sent by pgconn_send finished. `res` is its first result
     * (PGRES_TUPLES_OK, PGRES_COMMAND_OK or an error). Ownership: pgconn
     * PQclears it after the callback returns. The connection is ready again. */
    void (*on_result)(pgconn_t *conn, PGresult *res, void *data);
    /* The connection is broken or could not be opened; `why` is one line: libpq's
     * message, led by the server's FATAL reason when it sent one (valid during
     * the callback only). The owner must pgconn_close it. A result of severity
     * FATAL (the server ending the session) comes here, not to on_result. */
    void (*on_failed)(pgconn_t *conn, const char *why, void *data);
} pgconn_callbacks_t;

/* Starts connecting. `id` names the connection in log lines ("pg#3"), among
 * them the debug line logged for each notice the server sends.
 * `keywords`/`values` go to PQconnectStartParams (with expand_dbname). `setup_sql`, when not NULL,
 * runs once after connecting and before on_ready (SET and PREPARE statements). `defer` is a 0 ms
 * timeout used to report a failure that happens at once; it must outlive the connection. Always
 * returns a connection: failures arrive through on_failed. */
pgconn_t *pgconn_start(h2o_loop_t *loop, h2o_timeout_t *defer, unsigned id,
                       const char *const *keywords, const char *const *values,
                       const char *setup_sql, const pgconn_callbacks_t *cb, void *data);

/* Sends one command: with `prepared`, `sql_or_name` names a prepared statement;
 * otherwise it is SQL sent as an unnamed statement with text parameters,
 * exactly as node-postgres sends a parameterised query. Returns 0, or -1 with
 * the connection broken (on_failed is not called; the caller handles it). */
int pgconn_send(pgconn_t *conn, const char *sql_or_name, int prepared, int nparams,
                const char *const *values);

/* libpq's last error message for this connection, on one line (for logging;
 * valid until the next call on this connection). */
const char *pgconn_error(pgconn_t *conn);

/* Closes the h2o socket (a dup of libpq's) and then the PGconn, and frees the
 * connection. Safe inside a pgconn callback; no callback follows. */
void pgconn_close(pgconn_t *conn);

#endif
