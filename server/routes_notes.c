/*
 * routes_notes.c - the notes API: GET /notes/:id, GET /notes?tag=, POST /notes,
 * PUT /notes/:id, in the order of the reference Express app.
 *
 * Each handler does the same three steps: parse and validate the input (a 4xx
 * here writes nothing), run one statement on the pool, render the row(s) as
 * the reference would. The SQL text is the reference's, and goes out the way
 * node-postgres sends it (see statements.c and --prepared). The route table
 * (routes.h) picks the handler by path and method; the request's context
 * carries the query while it waits (request.h).
 */
#include <stdlib.h>
#include <string.h>
#include "body.h"
#include "log.h"
#include "render.h"
#include "respond.h"
#include "routes.h"
#include "statements.h"
#include "validate.h"

static void note_row_from(PGresult *res, int row, note_row_t *out)
{
    out->id = PQgetvalue(res, row, 0), out->id_len = PQgetlength(res, row, 0);
    out->title = PQgetvalue(res, row, 1), out->title_len = PQgetlength(res, row, 1);
    out->body = PQgetvalue(res, row, 2), out->body_len = PQgetlength(res, row, 2);
    out->tag = PQgetvalue(res, row, 3), out->tag_len = PQgetlength(res, row, 3);
    out->created_at = PQgetvalue(res, row, 4), out->created_at_len = PQgetlength(res, row, 4);
}

/* Renders rows [0, n) as one object (as_array = 0, n = 1) or as an array. */
static void respond_rows(notesd_req_t *r, int status, PGresult *res, int as_array)
{
    h2o_req_t *req = r->req;
    int n = PQntuples(res);
    size_t cap = 2 + (size_t)n;
    note_row_t row;

    for (int i = 0; i < n; i++) {
        note_row_from(res, i, &row);
        cap += render_note_bound(&row);
    }
    char *body = h2o_mem_alloc_pool(&req->pool, cap), *p = body;
    if (as_array)
        *p++ = '[';
    for (int i = 0; i < n; i++) {
        if (i > 0)
            *p++ = ',';
        note_row_from(res, i, &row);
        if ((p = render_note(p, &row)) == NULL) {
            log_warn(
                "%s",
                "a created_at value is not in the ISO DateStyle; check the server's DateStyle");
            respond_error(r, 500, "cannot render created_at");
            return;
        }
    }
    if (as_array)
        *p++ = ']';
    respond(r, status, CT_JSON, body, (size_t)(p - body));
}

/* Answers a query that the pool failed, or whose statement failed. */
static void respond_query_failure(notesd_req_t *r, PGresult *res, enum pool_error err)
{
    h2o_req_t *req = r->req;

    switch (err) {
    case POOL_ERR_UNAVAILABLE:
        respond_unavailable(r, "database unavailable");
        return;
    case POOL_ERR_ACQUIRE_TIMEOUT:
        respond_unavailable(r, "timed out waiting for a database connection");
        return;
    case POOL_ERR_QUERY_TIMEOUT:
        respond_error(r, 504, "database query timed out");
        return;
    case POOL_ERR_SHUTDOWN:
        req->http1_is_persistent = 0; /* Connection: close: ask the next server */
        respond_unavailable(r, "server is shutting down");
        return;
    case POOL_ERR_CANCELED:
        respond_unavailable(r, "database query was cancelled");
        return;
    case POOL_OK:
        break;
    }
    /* The server's fields, not PQresultErrorMessage: that one spans lines
     * (DETAIL, HINT) and a log line must stay one line. */
    const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    log_warn("%.*s %.*s: database error %s: %s", (int)req->method.len, req->method.base,
             (int)req->path.len, req->path.base, sqlstate != NULL ? sqlstate : "-",
             primary != NULL ? primary : "(no message)");
    respond_error(r, 500, "database error");
}

static void on_query_done(pool_query_t *q, PGresult *res, enum pool_error err)
{
    notesd_req_t *r = q->data;

    r->db_ns += q->duration_ns;
    request_client_gone(r); /* a client that left is recorded as 0 and gets nothing */
    /* Rows (a select, or a statement with `returning`), or a command's
     * outcome (PQcmdTuples: rows affected); anything else is an error. */
    if (err != POOL_OK ||
        (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)) {
        respond_query_failure(r, res, err);
        return;
    }
    switch (q->statement) {
    case STMT_GET_NOTE:
    case STMT_UPDATE_NOTE:
        /* rows.length ? res.json(rows[0]) : res.sendStatus(404) */
        if (PQntuples(res) == 0)
            respond_not_found_text(r);
        else
            respond_rows(r, 200, res, 0);
        break;
    case STMT_LIST_BY_TAG:
        respond_rows(r, 200, res, 1);
        break;
    case STMT_INSERT_NOTE:
        respond_rows(r, 201, res, 0);
        break;
    default:
        break;
    }
}

/* Hands the query to the pool, or answers 503 at once when it will not wait. */
static int run(notesd_req_t *r)
{
    switch (pool_query(r->loop->pool, &((struct request_db *)r->state)->query)) {
    case POOL_ADMITTED:
        break; /* on_query_done answers; it may already have */
    case POOL_QUEUE_FULL:
        respond_unavailable(r, "too many requests waiting for a database connection");
        break;
    case POOL_DOWN:
        respond_unavailable(r, "database unavailable");
        break;
    }
    return 0;
}

/* The value of request header `token` (its first occurrence), or NULL;
 * *repeated says whether it occurs again. */
static const char *header_of(h2o_req_t *req, const h2o_token_t *token, size_t *len, int *repeated)
{
    ssize_t i = h2o_find_header(&req->headers, token, -1);
    *repeated = 0;
    if (i == -1) {
        *len = 0;
        return NULL;
    }
    *repeated = h2o_find_header(&req->headers, token, i) != -1;
    *len = req->headers.entries[i].value.len;
    return req->headers.entries[i].value.base;
}

/* Reads the body as express.json would (body.c: type, charset, encoding,
 * limit, BOM), then parses it; answers the 4xx itself. */
static int parse_body(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    const char *err, *body;
    char msg[128];
    size_t type_len, encoding_len, body_len;
    int repeated, status;
    const char *type = header_of(req, H2O_TOKEN_CONTENT_TYPE, &type_len, &repeated);
    const char *encoding;
    size_t limit = r->settings->max_body_bytes;

    if ((status = body_check_type(type, type_len, msg, sizeof(msg))) != 0) {
        respond_error(r, status, msg);
        return -1;
    }
    encoding = header_of(req, H2O_TOKEN_CONTENT_ENCODING, &encoding_len, &repeated);
    /* Node joins a repeated Content-Encoding into one value, "gzip, gzip",
     * which body-parser does not know: so the same value here. */
    if (repeated) {
        h2o_iovec_t joined = h2o_iovec_init(encoding, encoding_len);
        for (ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_ENCODING, -1);
             (i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_ENCODING, i)) != -1;)
            joined = h2o_concat(&req->pool, joined, h2o_iovec_init(H2O_STRLIT(", ")),
                                req->headers.entries[i].value);
        encoding = joined.base, encoding_len = joined.len;
    }
    /* An encoded body is inflated into memory of its own, freed once it is
     * parsed: the fields the query needs live in the parsed JSON (its input),
     * so nothing of it is held while the query waits. */
    char *scratch;
    status = body_decode(encoding, encoding_len, req->entity.base,
                         req->entity.base != NULL ? req->entity.len : 0, limit, &scratch, &body,
                         &body_len, msg, sizeof(msg));
    const char *why = msg;
    struct request_db *db = (struct request_db *)r->state;
    if (status == 0 && validate_note_body(body, body_len, &db->input, &err) != 0)
        status = 400, why = err;
    free(scratch);
    if (status != 0) {
        respond_error(r, status, why);
        return -1;
    }
    return 0;
}

/* GET /notes/:id */
int notes_get(notesd_req_t *r)
{
    const char *err;
    struct request_db *db = request_db(r, STMT_GET_NOTE, on_query_done);
    if (validate_note_id(r->param.base, r->param.len, db->id, &err) != 0) {
        respond_error(r, 400, err);
        return 0;
    }
    db->query.params[0] = db->id;
    return run(r);
}

/* GET /notes?tag= */
int notes_list(notesd_req_t *r)
{
    h2o_iovec_t query = request_query(r);
    const char *err;
    size_t tag_len;

    char *tag = h2o_mem_alloc_pool(&r->req->pool, query.len + 1);
    if (validate_tag_query(query.base, query.len, tag, &tag_len, &err) != 0) {
        respond_error(r, 400, err);
        return 0;
    }
    request_db(r, STMT_LIST_BY_TAG, on_query_done)->query.params[0] = tag;
    return run(r);
}

/* POST /notes */
int notes_insert(notesd_req_t *r)
{
    struct request_db *db = request_db(r, STMT_INSERT_NOTE, on_query_done);
    if (parse_body(r) != 0)
        return 0;
    db->query.params[0] = db->input.title;
    db->query.params[1] = db->input.body;
    db->query.params[2] = db->input.tag;
    return run(r);
}

/* PUT /notes/:id */
int notes_update(notesd_req_t *r)
{
    const char *err;
    struct request_db *db = request_db(r, STMT_UPDATE_NOTE, on_query_done);
    /* Both checks before any query: a bad request writes nothing. */
    if (validate_note_id(r->param.base, r->param.len, db->id, &err) != 0) {
        respond_error(r, 400, err);
        return 0;
    }
    if (parse_body(r) != 0)
        return 0;
    db->query.params[0] = db->input.title;
    db->query.params[1] = db->input.body;
    db->query.params[2] = db->input.tag;
    db->query.params[3] = db->id;
    return run(r);
}
