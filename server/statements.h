/*
 * statements.h - the SQL notesd runs: the reference app's four statements and
 * /readyz's `select 1`.
 *
 * Owns the statement table the pools are configured with. Its names are the
 * `statement` label of notes_db_query_duration_seconds and, with --prepared,
 * the prepared statements' names.
 */
#ifndef NOTESD_STATEMENTS_H
#define NOTESD_STATEMENTS_H

#include "pool.h"

enum statement_id {
    STMT_GET_NOTE,
    STMT_LIST_BY_TAG,
    STMT_INSERT_NOTE,
    STMT_UPDATE_NOTE,
    STMT_PING, /* /readyz; not a route's statement, so not a metrics label */
    STMT__COUNT
};

/* Statements before STMT_PING are the `statement` label values. */
#define STMT_NUM_LABELLED STMT_PING

extern const pool_statement_t statements[STMT__COUNT];

#endif
