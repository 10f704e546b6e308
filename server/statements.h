/*
 * statements.h - the SQL notesd runs: the reference app's four statements and
 * /readyz's `select 1`.
 *
 * Owns the statement table the pools are configured with. Its names are the
 * `statement` label of notes_db_query_duration_seconds (every statement has
 * its series) and, with --prepared, the prepared statements' names. Adding a
 * statement: an id here, its row in statements.c; docs/metrics.md lists the
 * label values.
 */
#ifndef NOTESD_STATEMENTS_H
#define NOTESD_STATEMENTS_H

#include "pool.h"

enum statement_id {
    STMT_GET_NOTE,
    STMT_LIST_BY_TAG,
    STMT_INSERT_NOTE,
    STMT_UPDATE_NOTE,
    STMT_PING, /* /readyz's `select 1` */
    STMT__COUNT
};

extern const pool_statement_t statements[STMT__COUNT];

#endif
