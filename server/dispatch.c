/*
 * dispatch.c - the router: the one h2o handler of each port, which turns an
 * h2o request into a routed notesd_req_t and calls the row's handler (see
 * dispatch.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dispatch.h"
#include "head.h"
#include "loop.h"
#include "respond.h"
#include "validate.h"

/* The one h2o handler of a port: every row of the port, in table order. h2o
 * itself routes nothing: each port registers the path "/" alone, so every
 * request reaches on_req, which matches the rows the way Express's router
 * does (see row_matches). */
typedef struct dispatch {
    h2o_handler_t super;
    enum route_port port; /* measured on the API port only */
    const request_settings_t *settings;
    const route_t *rows[ROUTE__COUNT];
    size_t base_len[ROUTE__COUNT]; /* per row: the length of its base (see base_len) */
    size_t nrows;
    char allow[ROUTE__COUNT][96]; /* per row: its methods, for 405's Allow header */
    /* The modules of the port's rows that keep state per loop, each once; on
     * each loop, their states are the h2o context's handler context (an
     * array, in this order), made and freed with the context. */
    const route_state_t *loop_modules[ROUTE__COUNT];
    size_t nloop_modules;
    int loop_module_of[ROUTE__COUNT]; /* per row: its index in loop_modules; -1: none */
} dispatch_t;

/* The base of a row's template: up to "/:" ("/notes/:id" -> "/notes"). */
static size_t base_len(const route_t *row)
{
    const char *param = strstr(row->label, "/:");
    return param != NULL ? (size_t)(param - row->label) : strlen(row->label);
}

/* 1 if `path` is the row's, whose base is `len` bytes long; sets *param for
 * MATCH_PARAM and MATCH_PREFIX. As Express's router matches (caseSensitive and
 * strict both off): the template's letters match in any case, one trailing
 * slash is ignored, and the path is the one the client sent, percent-escapes
 * and dot segments included, so "/notes/./3" is not "/notes/3" (h2o's
 * path_normalized would say it is). */
static int row_matches(const route_t *row, size_t len, h2o_iovec_t path, h2o_iovec_t *param)
{
    if (path.len < len || !h2o_lcstris(path.base, len, row->label, len))
        return 0;
    switch (row->match) {
    case MATCH_EXACT: /* for "/" that is "//", as in Express */
        return path.len == len || (path.len == len + 1 && path.base[len] == '/');
    case MATCH_PARAM: {
        size_t end = path.len;
        if (end > len + 1 && path.base[end - 1] == '/')
            end--;
        if (end <= len + 1 || path.base[len] != '/' ||
            memchr(path.base + len + 1, '/', end - len - 1) != NULL)
            return 0;
        *param = h2o_iovec_init(path.base + len + 1, end - len - 1);
        return 1;
    }
    case MATCH_PREFIX:
        if (path.len > len && path.base[len] != '/')
            return 0;
        *param = path.len > len ? h2o_iovec_init(path.base + len + 1, path.len - len - 1)
                                : h2o_iovec_init(path.base + len, 0);
        return 1;
    case MATCH_NONE:
        break;
    }
    return 0;
}

/* The path to route by: the request target without its query, and in
 * origin form. A target in absolute form ("GET http://host/status", which a
 * server must accept, RFC 9112 section 3.2.2) is routed by its path; h2o 2.2.5
 * would look for a path "/http://host/status". */
static h2o_iovec_t route_path(h2o_req_t *req)
{
    h2o_iovec_t path =
        h2o_iovec_init(req->path.base, req->query_at != SIZE_MAX ? req->query_at : req->path.len);
    if (path.len > 0 && path.base[0] == '/')
        return path;
    size_t at = head_origin_form(path.base, path.len);
    if (at == SIZE_MAX)
        return path; /* no row matches it: 404 */
    if (at == path.len)
        return h2o_iovec_init(H2O_STRLIT("/"));
    return h2o_iovec_init(path.base + at, path.len - at);
}

/* h2o 2.2.5 reads the body by the first Content-Length and ignores any other
 * (and lets Transfer-Encoding win over it); a request whose framing is
 * ambiguous must be refused instead, as Node's parser refuses it, and its connection closed, since
 * what follows the body cannot be told apart from the next request. The fields are not kept in
 * req->headers, so the check reads the head itself, which stays at the start of the connection's
 * input buffer until the response is sent. Only requests that have a body can have the problem. */
static int framing_is_ambiguous(h2o_req_t *req, const char **err)
{
    if (req->entity.base == NULL || req->version >= 0x200)
        return 0;
    h2o_socket_t *sock = request_socket(req);
    if (sock == NULL || sock->input == NULL)
        return 0;
    return head_framing(sock->input->bytes, sock->input->size, err) != 0;
}

/* The row's handler for the request's method: the pair named exactly so
 * ("GET" for HEAD too), else the row's "*", else NULL (405). */
static route_handler_t handler_for(const route_t *row, h2o_req_t *req)
{
    route_handler_t any = NULL;
    for (const route_method_t *m = row->methods; m->name != NULL; m++) {
        if (m->name[0] == '*')
            any = m->handler;
        else if (h2o_memis(req->method.base, req->method.len, m->name, strlen(m->name)) ||
                 (req_is_get(req) && strcmp(m->name, "GET") == 0))
            return m->handler;
    }
    return any;
}

/* The index of the first of the port's rows that matches the request's path
 * (setting *param), or d->nrows when none does. */
static size_t find_row(const dispatch_t *d, h2o_req_t *req, h2o_iovec_t *param)
{
    h2o_iovec_t path = route_path(req);
    size_t i = 0;
    while (i < d->nrows && !row_matches(d->rows[i], d->base_len[i], path, param))
        i++;
    return i;
}

/* Every request starts here: find the row, create the request's context (the
 * one allocation of request state), check the framing and the method, call
 * the handler. */
static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    dispatch_t *d = (dispatch_t *)self;
    h2o_iovec_t param = {NULL, 0};
    const char *err;
    size_t i = find_row(d, req, &param);
    const route_t *row = i < d->nrows ? d->rows[i] : &routes[ROUTE_OTHER];
    notesd_req_t *r =
        request_begin(req, (uint8_t)row->id, row->state != NULL ? row->state->request_size : 0,
                      &loop_of(req->conn->ctx)->view, d->port == PORT_API, d->settings);
    if (i < d->nrows && d->loop_module_of[i] >= 0) {
        void **states = h2o_context_get_handler_context(req->conn->ctx, &d->super);
        r->loop_state = states[d->loop_module_of[i]];
    }
    if (d->port == PORT_METRICS)
        listen_metrics_request(r->loop->listen, req); /* busy until disposed of */
    /* Express decodes a route's :param ("/notes/%31" is note 1); no copy when
     * there is nothing to decode. */
    if (row->match == MATCH_PARAM && memchr(param.base, '%', param.len) != NULL) {
        char *decoded = h2o_mem_alloc_pool(&req->pool, param.len);
        param = h2o_iovec_init(decoded, validate_decode_path(param.base, param.len, decoded));
    }
    r->param = param;
    if (framing_is_ambiguous(req, &err)) {
        req->http1_is_persistent = 0; /* Connection: close */
        respond_error(r, 400, err);
        return 0;
    }
    if (row->match == MATCH_NONE) {
        respond_error(r, 404, "not found");
        return 0;
    }
    route_handler_t handler = handler_for(row, req);
    if (handler == NULL) {
        respond_method_not_allowed(r, d->allow[i]);
        return 0;
    }
    return handler(r);
}

/* ---- h2o's own refusals ------------------------------------------------------------------- */

/* On the host's fallback path, which only h2o's own error answers take (every
 * request notesd handles matches "/"): its 413, sent from the request head
 * (a declared Content-Length over MAX_BODY_BYTES) or when a chunked body
 * reaches it, before any handler ran, becomes notesd's, JSON naming the limit
 * as body.c's 413 does, and is counted under the route its path matches. */
typedef struct refusal_filter {
    h2o_filter_t super;
    dispatch_t *dispatch;
} refusal_filter_t;

/* Sends notesd's body where h2o's text would have gone (h2o_send_inline sends
 * it in one call, the final one). */
typedef struct refusal_ostream {
    h2o_ostream_t super;
    h2o_iovec_t body;
} refusal_ostream_t;

static void on_refusal_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t bufcnt,
                            h2o_send_state_t state)
{
    refusal_ostream_t *o = (refusal_ostream_t *)self;
    h2o_iovec_t body = o->body;
    o->body.len = 0;
    h2o_ostream_send_next(self, req, &body, bufcnt != 0 && body.len != 0 ? 1 : 0, state);
}

static void on_refusal_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    dispatch_t *d = ((refusal_filter_t *)self)->dispatch;

    if (req->res.status == 413) {
        h2o_iovec_t param;
        size_t i = find_row(d, req, &param);
        const route_t *row = i < d->nrows ? d->rows[i] : &routes[ROUTE_OTHER];
        notesd_req_t *r = request_begin(req, (uint8_t)row->id, 0, &loop_of(req->conn->ctx)->view,
                                        d->port == PORT_API, d->settings);
        char *body = h2o_mem_alloc_pool(&req->pool, 80);
        int len = snprintf(body, 80, "{\"error\":\"request body larger than %zu bytes\"}",
                           d->settings->max_body_bytes);
        ssize_t ct = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
        if (ct != -1)
            req->res.headers.entries[ct].value = h2o_iovec_init(H2O_STRLIT(CT_JSON));
        req->res.reason = "Payload Too Large"; /* RFC 9110's name, as respond.c's */
        req->res.content_length = (size_t)len;
        request_add_server_timing(r);
        refusal_ostream_t *o = (refusal_ostream_t *)h2o_add_ostream(req, sizeof(*o), slot);
        o->super.do_send = on_refusal_send;
        o->body = h2o_iovec_init(body, (size_t)len);
        slot = &o->super.next;
    }
    h2o_setup_next_ostream(req, slot);
}

/* The Allow header of a row's 405: its methods in the row's order, HEAD
 * after GET. A row with "*" never answers 405. */
static void format_allow(const route_t *row, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (const route_method_t *m = row->methods; m->name != NULL && n < len; m++) {
        if (m->name[0] == '*')
            continue;
        int w = snprintf(out + n, len - n, "%s%s%s", n > 0 ? ", " : "", m->name,
                         strcmp(m->name, "GET") == 0 ? ", HEAD" : "");
        n += w > 0 ? (size_t)w : 0;
    }
}

/* ---- the route modules' state on each loop -------------------------------------------------- */

/* A loop's h2o context starts (h2o calls this for each context of the
 * configuration): each module's state on it, zeroed, then its loop_init. */
static void on_context_init(h2o_handler_t *self, h2o_context_t *ctx)
{
    dispatch_t *d = (dispatch_t *)self;
    void **states = calloc(d->nloop_modules + 1, sizeof(*states));
    if (states == NULL)
        abort(); /* out of memory at start-up: see main.c */
    for (size_t m = 0; m < d->nloop_modules; m++) {
        const route_state_t *module = d->loop_modules[m];
        if ((states[m] = calloc(1, module->loop_size)) == NULL)
            abort();
        if (module->loop_init != NULL)
            module->loop_init(states[m], &loop_of(ctx)->view);
    }
    h2o_context_set_handler_context(ctx, self, states);
}

/* The context ends with its loop (after its last request): the states go. */
static void on_context_dispose(h2o_handler_t *self, h2o_context_t *ctx)
{
    dispatch_t *d = (dispatch_t *)self;
    void **states = h2o_context_get_handler_context(ctx, self);
    for (size_t m = 0; m < d->nloop_modules; m++) {
        if (d->loop_modules[m]->loop_dispose != NULL)
            d->loop_modules[m]->loop_dispose(states[m]);
        free(states[m]);
    }
    free(states);
}

/* The row's index in d->loop_modules, adding its module the first time; -1
 * when its module keeps nothing per loop. */
static int loop_module_index(dispatch_t *d, const route_t *row)
{
    if (row->state == NULL || row->state->loop_size == 0)
        return -1;
    size_t m = 0;
    while (m < d->nloop_modules && d->loop_modules[m] != row->state)
        m++;
    if (m == d->nloop_modules)
        d->loop_modules[d->nloop_modules++] = row->state;
    return (int)m;
}

/* Set-up hooks run after the dispatcher was created, so what they add to the
 * path (h2o's file handler) comes after it. */
void dispatch_register(h2o_hostconf_t *host, enum route_port port,
                       const request_settings_t *settings)
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, "/", 0);
    dispatch_t *d = (dispatch_t *)h2o_create_handler(pathconf, sizeof(*d));
    d->super.on_req = on_req;
    d->super.on_context_init = on_context_init;
    d->super.on_context_dispose = on_context_dispose;
    d->port = port;
    d->settings = settings;
    for (size_t i = 0; i < ROUTE__COUNT; i++) {
        const route_t *row = &routes[i];
        if (row->port != port || row->match == MATCH_NONE)
            continue;
        format_allow(row, d->allow[d->nrows], sizeof(d->allow[0]));
        d->base_len[d->nrows] = base_len(row);
        d->loop_module_of[d->nrows] = loop_module_index(d, row);
        d->rows[d->nrows++] = row;
    }
    for (size_t i = 0; i < d->nrows; i++)
        if (d->rows[i]->setup != NULL)
            d->rows[i]->setup(pathconf, settings);
    refusal_filter_t *f = (refusal_filter_t *)h2o_create_filter(&host->fallback_path, sizeof(*f));
    f->super.on_setup_ostream = on_refusal_setup;
    f->dispatch = d;
}
