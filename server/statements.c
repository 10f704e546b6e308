/*
 * statements.c - the statement table (see statements.h). The SQL text is the
 * reference app's, character for character.
 */
#include "statements.h"

const pool_statement_t statements[STMT__COUNT] = {
    [STMT_GET_NOTE] = {"get_note",
                       "select id, title, body, tag, created_at from notes where id = $1", 1},
    [STMT_LIST_BY_TAG] = {"list_by_tag",
                          "select id, title, body, tag, created_at from notes where tag = $1 "
                          "order by id desc limit 20",
                          1},
    [STMT_INSERT_NOTE] = {"insert_note",
                          "insert into notes (title, body, tag, created_at) values ($1, $2, $3, "
                          "now()) returning id, title, body, tag, created_at",
                          3},
    [STMT_UPDATE_NOTE] = {"update_note",
                          "update notes set title = $1, body = $2, tag = $3 where id = $4 "
                          "returning id, title, body, tag, created_at",
                          4},
    [STMT_PING] = {"ping", "select 1", 0},
};
