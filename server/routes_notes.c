/*
 * routes_notes.c - the notes API: GET /notes/:id, GET /notes?tag=, POST /notes,
 * PUT /notes/:id, in the order of the reference Express app.
 *
 * Each handler does the same three steps: parse and validate the input (a 4xx
 * here writes nothing), run one statement on the pool, render the row(s) as
 * the reference would. The SQL text is the reference's, and goes out the way
 * node-postgres sends it (see pool_statement_t and --prepared).
 */
#include <cJSON.h>
#include <string.h>
#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "render.h"
#include "respond.h"
#include "validate.h"

enum statement_id { GET_NOTE, LIST_BY_TAG, INSERT_NOTE, UPDATE_NOTE, PING, NUM_STATEMENTS };

/* The names are the metrics' `statement` label and, with --prepared, the
 * prepared statements' names. */
static const pool_statement_t notes_statements[] = {
    [GET_NOTE] = {"get_note", "select id, title, body, tag, created_at from notes where id = $1",
                  1},
    [LIST_BY_TAG] = {"list_by_tag",
                     "select id, title, body, tag, created_at from notes where tag = $1 "
                     "order by id desc limit 20",
                     1},
    [INSERT_NOTE] = {"insert_note",
                     "insert into notes (title, body, tag, created_at) values ($1, $2, $3, now()) "
                     "returning id, title, body, tag, created_at",
                     3},
    [UPDATE_NOTE] = {"update_note",
                     "update notes set title = $1, body = $2, tag = $3 where id = $4 "
                     "returning id, title, body, tag, created_at",
                     4},
    [PING] = {"ping", "select 1", 0}, /* /readyz; not a route's statement */
};
const pool_statement_t *const notes_statement_table = notes_statements;
const size_t notes_num_statements = NUM_STATEMENTS;
const size_t notes_num_labelled_statements = PING;
const size_t notes_ping_statement = PING;

/* One database request. It is a shared allocation in req->pool, so h2o tells
 * us (on_ctx_dispose) when the request goes away; a query still waiting or
 * running then is cancelled and its result, if it comes, is dropped. */
typedef struct note_ctx {
    pool_query_t query; /* query.data points back here */
    h2o_req_t *req;
    note_input_t input; /* parsed body of POST/PUT; owns the param strings */
    char id[21];        /* canonical id text, a parameter */
} note_ctx_t;

static void on_ctx_dispose(void *p)
{
    note_ctx_t *ctx = p;
    pool_query_cancel(&this_loop->pool, &ctx->query);
    cJSON_Delete(ctx->input.json);
}

static note_ctx_t *new_ctx(h2o_req_t *req, int statement)
{
    note_ctx_t *ctx = h2o_mem_alloc_shared(&req->pool, sizeof(*ctx), on_ctx_dispose);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = req;
    ctx->query.statement = statement;
    ctx->query.data = ctx;
    return ctx;
}

static void note_row_from(PGresult *res, int row, note_row_t *out)
{
    out->id = PQgetvalue(res, row, 0), out->id_len = PQgetlength(res, row, 0);
    out->title = PQgetvalue(res, row, 1), out->title_len = PQgetlength(res, row, 1);
    out->body = PQgetvalue(res, row, 2), out->body_len = PQgetlength(res, row, 2);
    out->tag = PQgetvalue(res, row, 3), out->tag_len = PQgetlength(res, row, 3);
    out->created_at = PQgetvalue(res, row, 4), out->created_at_len = PQgetlength(res, row, 4);
}

/* Renders rows [0, n) as one object (as_array = 0, n = 1) or as an array. */
static void respond_rows(h2o_req_t *req, int status, PGresult *res, int as_array)
{
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
            respond_error(req, 500, "cannot render created_at");
            return;
        }
    }
    if (as_array)
        *p++ = ']';
    respond(req, status, CT_JSON, body, (size_t)(p - body));
}

/* Answers a query that the pool failed, or whose statement failed. */
static void respond_query_failure(h2o_req_t *req, PGresult *res, enum pool_error err)
{
    switch (err) {
    case POOL_ERR_UNAVAILABLE:
        respond_unavailable(req, "database unavailable");
        return;
    case POOL_ERR_ACQUIRE_TIMEOUT:
        respond_unavailable(req, "timed out waiting for a database connection");
        return;
    case POOL_ERR_QUERY_TIMEOUT:
        respond_error(req, 504, "database query timed out");
        return;
    case POOL_ERR_SHUTDOWN:
        req->http1_is_persistent = 0; /* Connection: close: ask the next server */
        respond_unavailable(req, "server is shutting down");
        return;
    case POOL_ERR_CANCELED:
        respond_unavailable(req, "database query was cancelled");
        return;
    case POOL_OK:
        break;
    }
    log_warn("%.*s %.*s: database error: %s", (int)req->method.len, req->method.base,
             (int)req->path.len, req->path.base, PQresultErrorMessage(res));
    respond_error(req, 500, "database error");
}

static void on_query_done(pool_query_t *q, PGresult *res, enum pool_error err)
{
    note_ctx_t *ctx = q->data;
    h2o_req_t *req = ctx->req;

    metrics_request_add_db_time(req, q->duration_ns);
    if (err != POOL_OK || PQresultStatus(res) != PGRES_TUPLES_OK) {
        respond_query_failure(req, res, err);
        return;
    }
    switch (q->statement) {
    case GET_NOTE:
    case UPDATE_NOTE:
        /* rows.length ? res.json(rows[0]) : res.sendStatus(404) */
        if (PQntuples(res) == 0)
            respond_not_found_text(req);
        else
            respond_rows(req, 200, res, 0);
        break;
    case LIST_BY_TAG:
        respond_rows(req, 200, res, 1);
        break;
    case INSERT_NOTE:
        respond_rows(req, 201, res, 0);
        break;
    default:
        break;
    }
}

/* Hands the query to the pool, or answers 503 at once when it will not wait. */
static int run(note_ctx_t *ctx)
{
    ctx->query.cb = on_query_done;
    switch (pool_query(&this_loop->pool, &ctx->query)) {
    case POOL_ADMITTED:
        break; /* on_query_done answers; it may already have */
    case POOL_QUEUE_FULL:
        respond_unavailable(ctx->req, "too many requests waiting for a database connection");
        break;
    case POOL_DOWN:
        respond_unavailable(ctx->req, "database unavailable");
        break;
    }
    return 0;
}

/* Checks Content-Type and size, then parses the body; answers the 4xx itself. */
static int parse_body(h2o_req_t *req, note_ctx_t *ctx)
{
    const char *err;
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);

    if (req->entity.len > (size_t)config.max_body_bytes) {
        respond_error(req, 413, "request body is larger than the limit");
        return -1;
    }
    /* express.json() parses only application/json (with any parameters); for
     * anything else the reference handler finds no body and fails. */
    int json_type = 0;
    if (ct != -1) {
        h2o_iovec_t v = req->headers.entries[ct].value;
        size_t n = 0;
        while (n < v.len && v.base[n] != ';' && v.base[n] != ' ')
            n++;
        json_type = h2o_lcstris(v.base, n, H2O_STRLIT("application/json"));
    }
    if (!json_type) {
        respond_error(req, 415, "Content-Type must be application/json");
        return -1;
    }
    if (validate_note_body(req->entity.base, req->entity.base != NULL ? req->entity.len : 0,
                           &ctx->input, &err) != 0) {
        respond_error(req, 400, err);
        return -1;
    }
    return 0;
}

/* GET /notes/:id */
static int get_note(h2o_req_t *req, h2o_iovec_t id)
{
    const char *err;
    note_ctx_t *ctx = new_ctx(req, GET_NOTE);
    if (validate_note_id(id.base, id.len, ctx->id, &err) != 0) {
        respond_error(req, 400, err);
        return 0;
    }
    ctx->query.params[0] = ctx->id;
    return run(ctx);
}

/* GET /notes?tag= */
static int list_by_tag(h2o_req_t *req)
{
    const char *err, *query = "";
    size_t query_len = 0, tag_len;

    if (req->query_at != SIZE_MAX) {
        query = req->path.base + req->query_at + 1;
        query_len = req->path.len - req->query_at - 1;
    }
    char *tag = h2o_mem_alloc_pool(&req->pool, query_len + 1);
    if (validate_tag_query(query, query_len, tag, &tag_len, &err) != 0) {
        respond_error(req, 400, err);
        return 0;
    }
    note_ctx_t *ctx = new_ctx(req, LIST_BY_TAG);
    ctx->query.params[0] = tag;
    return run(ctx);
}

/* POST /notes */
static int insert_note(h2o_req_t *req)
{
    note_ctx_t *ctx = new_ctx(req, INSERT_NOTE);
    if (parse_body(req, ctx) != 0)
        return 0;
    ctx->query.params[0] = ctx->input.title;
    ctx->query.params[1] = ctx->input.body;
    ctx->query.params[2] = ctx->input.tag;
    return run(ctx);
}

/* PUT /notes/:id */
static int update_note(h2o_req_t *req, h2o_iovec_t id)
{
    const char *err;
    note_ctx_t *ctx = new_ctx(req, UPDATE_NOTE);
    /* Both checks before any query: a bad request writes nothing. */
    if (validate_note_id(id.base, id.len, ctx->id, &err) != 0) {
        respond_error(req, 400, err);
        return 0;
    }
    if (parse_body(req, ctx) != 0)
        return 0;
    ctx->query.params[0] = ctx->input.title;
    ctx->query.params[1] = ctx->input.body;
    ctx->query.params[2] = ctx->input.tag;
    ctx->query.params[3] = ctx->id;
    return run(ctx);
}

/* Everything under /notes: picks the route by path shape and method. */
static int on_notes(h2o_handler_t *self, h2o_req_t *req)
{
    h2o_iovec_t path = req->path_normalized;
    int is_get = req_is_get(req);

    /* "/notes" and "/notes/" are the collection, as Express (non-strict routing) has it. */
    if (path.len <= sizeof("/notes/") - 1) {
        metrics_request_begin(req, ROUTE_NOTES);
        if (is_get)
            return list_by_tag(req);
        if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST")))
            return insert_note(req);
        respond_method_not_allowed(req, "GET, HEAD, POST");
        return 0;
    }
    h2o_iovec_t id = h2o_iovec_init(path.base + 7, path.len - 7);
    if (memchr(id.base, '/', id.len) != NULL) {
        metrics_request_begin(req, ROUTE_OTHER);
        respond_error(req, 404, "not found");
        return 0;
    }
    metrics_request_begin(req, ROUTE_NOTE_BY_ID);
    if (is_get)
        return get_note(req, id);
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PUT")))
        return update_note(req, id);
    respond_method_not_allowed(req, "GET, HEAD, PUT");
    return 0;
}

void routes_notes_register(h2o_hostconf_t *host)
{
    http_register(host, "/notes", on_notes);
}
