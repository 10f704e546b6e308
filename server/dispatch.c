/*
 * dispatch.c - the router: the one h2o handler of each port, which turns an
 * h2o request into a routed notesd_req_t and calls the row's handler (see
 * dispatch.h).
 */
#include <stdio.h>
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
    char allow[ROUTE__COUNT][32]; /* per row: its methods, for 405's Allow header */
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
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || sock->input == NULL)
        return 0;
    return head_framing(sock->input->bytes, sock->input->size, err) != 0;
}

static route_handler_t handler_for(const route_t *row, h2o_req_t *req)
{
    route_handler_t h = NULL;
    if (req_is_get(req))
        h = row->get;
    else if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST")))
        h = row->post;
    else if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PUT")))
        h = row->put;
    return h != NULL ? h : row->any;
}

/* Every request starts here: find the row, create the request's context (the
 * one allocation of request state), check the framing and the method, call
 * the handler. */
static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    dispatch_t *d = (dispatch_t *)self;
    h2o_iovec_t path = route_path(req), param = {NULL, 0};
    const char *err;
    size_t i = 0;

    while (i < d->nrows && !row_matches(d->rows[i], d->base_len[i], path, &param))
        i++;
    const route_t *row = i < d->nrows ? d->rows[i] : &routes[ROUTE_OTHER];
    notesd_req_t *r = request_begin(req, (uint8_t)row->id,
                                    d->port == PORT_API ? &this_loop->stats : NULL, d->settings);
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

/* "GET, HEAD", then ", POST" and ", PUT" where the row has them. */
static void format_allow(const route_t *row, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s", row->get != NULL ? "GET, HEAD" : "",
             row->post != NULL ? (row->get != NULL ? ", POST" : "POST") : "",
             row->put != NULL ? (row->get != NULL || row->post != NULL ? ", PUT" : "PUT") : "");
}

/* Set-up hooks run after the dispatcher was created, so what they add to the
 * path (h2o's file handler) comes after it. */
void dispatch_register(h2o_hostconf_t *host, enum route_port port,
                       const request_settings_t *settings)
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, "/", 0);
    dispatch_t *d = (dispatch_t *)h2o_create_handler(pathconf, sizeof(*d));
    d->super.on_req = on_req;
    d->port = port;
    d->settings = settings;
    for (size_t i = 0; i < ROUTE__COUNT; i++) {
        const route_t *row = &routes[i];
        if (row->port != port || row->match == MATCH_NONE)
            continue;
        format_allow(row, d->allow[d->nrows], sizeof(d->allow[0]));
        d->base_len[d->nrows] = base_len(row);
        d->rows[d->nrows++] = row;
    }
    for (size_t i = 0; i < d->nrows; i++)
        if (d->rows[i]->setup != NULL)
            d->rows[i]->setup(pathconf, settings);
}
