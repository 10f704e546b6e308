/*
 * http.c - h2o set-up: hosts, route dispatch, listeners, TLS and h2c, one context per loop
 * (see http.h).
 */
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include "config.h"
#include "http.h"
#include "log.h"
#include "respond.h"
#include "routes.h"

/* The h2o handler of one registered path: the rows that share it, in table order. */
typedef struct dispatch {
    h2o_handler_t super;
    enum route_port port; /* measured on the API port only */
    const route_t *rows[4];
    size_t nrows;
    char allow[4][32]; /* per row: its methods, for 405's Allow header */
} dispatch_t;

/* The h2o path of a row: its template up to "/:" ("/notes/:id" -> "/notes"). */
static size_t h2o_path_len(const route_t *row)
{
    const char *param = strstr(row->label, "/:");
    return param != NULL ? (size_t)(param - row->label) : strlen(row->label);
}

/* 1 if the normalized path is the row's; sets r's param for MATCH_PARAM. */
static int row_matches(const route_t *row, h2o_iovec_t path, h2o_iovec_t *param)
{
    size_t len = h2o_path_len(row);

    switch (row->match) {
    case MATCH_EXACT: /* "/" itself has no form with a trailing slash */
        return h2o_memis(path.base, path.len, row->label, len) ||
               (len > 1 && path.len == len + 1 && memcmp(path.base, row->label, len) == 0 &&
                path.base[len] == '/');
    case MATCH_PARAM:
        if (path.len <= len + 1 || path.base[len] != '/' ||
            memchr(path.base + len + 1, '/', path.len - len - 1) != NULL)
            return 0;
        *param = h2o_iovec_init(path.base + len + 1, path.len - len - 1);
        return 1;
    case MATCH_PREFIX:
        return 1; /* h2o matched the prefix already */
    case MATCH_NONE:
        break;
    }
    return 0;
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
 * one allocation of request state), check the method, call the handler. */
static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    dispatch_t *d = (dispatch_t *)self;
    h2o_iovec_t param = {NULL, 0};
    size_t i = 0;

    while (i < d->nrows && !row_matches(d->rows[i], req->path_normalized, &param))
        i++;
    const route_t *row = i < d->nrows ? d->rows[i] : &routes[ROUTE_OTHER];
    notesd_req_t *r =
        request_begin(req, (uint8_t)row->id, d->port == PORT_API ? &this_loop->stats : NULL);
    r->param = param;
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

/* Registers the rows of one port whose h2o path is `path` (length `len`). */
static void register_path(h2o_hostconf_t *host, enum route_port port, const char *path, size_t len)
{
    char copy[64]; /* h2o copies the path it is given */
    snprintf(copy, sizeof(copy), "%.*s", (int)len, path);
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, copy, 0);
    dispatch_t *d = (dispatch_t *)h2o_create_handler(pathconf, sizeof(*d));
    d->super.on_req = on_req;
    d->port = port;
    for (size_t i = 0; i < ROUTE__COUNT; i++) {
        const route_t *row = &routes[i];
        if (row->port != port || row->match == MATCH_NONE || h2o_path_len(row) != len ||
            memcmp(row->label, path, len) != 0)
            continue;
        assert(d->nrows < sizeof(d->rows) / sizeof(d->rows[0]));
        format_allow(row, d->allow[d->nrows], sizeof(d->allow[0]));
        d->rows[d->nrows++] = row;
    }
    /* Set-up hooks run after the dispatcher was created, so what they add to
     * the path (h2o's file handler) comes after it. */
    for (size_t i = 0; i < d->nrows; i++)
        if (d->rows[i]->setup != NULL)
            d->rows[i]->setup(pathconf);
}

/* Registers every distinct h2o path of a port once, longest first: h2o takes
 * the first registered path that is a prefix of the request's, so "/" comes last. */
static void register_port(h2o_hostconf_t *host, enum route_port port)
{
    int done[ROUTE__COUNT] = {0};
    for (;;) {
        size_t best = ROUTE__COUNT;
        for (size_t i = 0; i < ROUTE__COUNT; i++)
            if (!done[i] && routes[i].port == port && routes[i].match != MATCH_NONE &&
                (best == ROUTE__COUNT || h2o_path_len(&routes[i]) > h2o_path_len(&routes[best])))
                best = i;
        if (best == ROUTE__COUNT)
            return;
        size_t len = h2o_path_len(&routes[best]);
        for (size_t i = 0; i < ROUTE__COUNT; i++)
            if (routes[i].port == port && h2o_path_len(&routes[i]) == len &&
                memcmp(routes[i].label, routes[best].label, len) == 0)
                done[i] = 1;
        register_path(host, port, routes[best].label, len);
    }
}

void http_configure(void)
{
    h2o_config_init(&server.conf);
    /* Express sends no Server header; neither do we (len 0 omits it). */
    server.conf.server_name = h2o_iovec_init(H2O_STRLIT(""));
    /* Bodies up to max_body_bytes are ours to judge (413 with a JSON reason);
     * h2o itself refuses only far larger ones, before buffering them. */
    server.conf.max_request_entity_size = (size_t)config.max_body_bytes * 16;
    /* The seed's clients speak HTTP/1.1: no h2c unless asked for. With it, h2o
     * takes both ways in: a connection that opens with HTTP/2's preface (prior
     * knowledge) and an HTTP/1.1 request with Upgrade: h2c. One setting of the
     * shared configuration, so the metrics port speaks h2c too. */
    server.conf.http1.upgrade_to_http2 = config.h2c;
    /* h2o 2.2.5's only HTTP/1 timeout: receiving a request, and idling between
     * requests; the same figure for HTTP/2's idle connections and TLS handshakes. */
    server.conf.http1.req_timeout = (uint64_t)config.client_timeout_ms;
    server.conf.http2.idle_timeout = (uint64_t)config.client_timeout_ms;
    server.conf.handshake_timeout = (uint64_t)config.client_timeout_ms;

    server.api_hosts[0] =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    register_port(server.api_hosts[0], PORT_API);
    server.metrics_hosts[0] =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("metrics")), 65535);
    register_port(server.metrics_hosts[0], PORT_METRICS);
}

int http_tls_configure(char *err, size_t len)
{
    if (config.tls_port == 0)
        return 0;
    if (config.tls_cert == NULL || config.tls_key == NULL) {
        snprintf(err, len, "TLS_PORT needs TLS_CERT and TLS_KEY (see --help)");
        return -1;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    const char *what = NULL, *path = NULL;
    if (ctx == NULL)
        what = "cannot create a TLS context", path = "";
    else if (SSL_CTX_use_certificate_chain_file(ctx, config.tls_cert) != 1)
        what = "TLS_CERT: cannot load the certificate", path = config.tls_cert;
    else if (SSL_CTX_use_PrivateKey_file(ctx, config.tls_key, SSL_FILETYPE_PEM) != 1)
        what = "TLS_KEY: cannot load the private key", path = config.tls_key;
    else if (SSL_CTX_check_private_key(ctx) != 1)
        what = "TLS_KEY: the key does not match the certificate", path = config.tls_key;
    if (what != NULL) {
        char reason[256];
        ERR_error_string_n(ERR_peek_last_error(), reason, sizeof(reason));
        snprintf(err, len, "%s %s (%s)", what, path, reason);
        SSL_CTX_free(ctx);
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    /* h2o_alpn_protocols is "h2" (and its drafts), then "http/1.1": h2o picks
     * HTTP/2 when the client offers it and HTTP/1.1 otherwise. */
    h2o_ssl_register_alpn_protocols(ctx, h2o_alpn_protocols);
    server.ssl_ctx = ctx;
    return 0;
}

static void on_connection_closed(void *data)
{
    notesd_loop_t *loop = data;
    STAT_SUB(loop->stats.open_connections, 1);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    h2o_accept_ctx_t *accept_ctx = listener->data;
    h2o_socket_t *sock;

    if (err != NULL)
        return;
    /* Accept everything that is waiting, so a burst costs one wake-up. */
    while ((sock = h2o_evloop_socket_accept(listener)) != NULL) {
        STAT_ADD(this_loop->stats.open_connections, 1);
        if (accept_ctx != &this_loop->metrics_accept)
            STAT_ADD(this_loop->stats.accepted, 1);
        sock->on_close.cb = on_connection_closed;
        sock->on_close.data = this_loop;
        h2o_accept(accept_ctx, sock);
    }
}

/* Binds and listens; with `reuseport`, several loops can each have a socket on
 * the same port and the kernel spreads new connections among them. */
static int bind_listen(const char *host, int port, int reuseport)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV},
                    *res;
    char portstr[16];
    int fd, on = 1, rc;

    snprintf(portstr, sizeof(portstr), "%d", port);
    if ((rc = getaddrinfo(host, portstr, &hints, &res)) != 0) {
        log_error("cannot listen on %s:%d: %s (an IP address is expected)", host, port,
                  gai_strerror(rc));
        return -1;
    }
    if ((fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, H2O_SOMAXCONN) != 0) {
        log_error("cannot listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

int http_open_listeners(void)
{
    int reuseport = server.nloops > 1;
    for (int i = 0; i < server.nloops; i++) {
        server.loops[i].metrics_fd = -1;
        if ((server.loops[i].api_fd = bind_listen(config.host, config.port, reuseport)) < 0)
            return -1;
        if (server.ssl_ctx != NULL &&
            (server.loops[i].tls_fd = bind_listen(config.host, config.tls_port, reuseport)) < 0)
            return -1;
    }
    if (config.metrics_port != 0 &&
        (server.loops[0].metrics_fd = bind_listen(config.metrics_host, config.metrics_port, 0)) < 0)
        return -1;
    return 0;
}

static h2o_socket_t *watch_listener(notesd_loop_t *loop, int fd, h2o_accept_ctx_t *accept_ctx,
                                    h2o_hostconf_t **hosts, SSL_CTX *ssl_ctx)
{
    accept_ctx->ctx = &loop->ctx;
    accept_ctx->hosts = hosts;
    accept_ctx->ssl_ctx = ssl_ctx; /* h2o does the handshake, then ALPN picks the protocol */
    h2o_socket_t *sock = h2o_evloop_socket_create(loop->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    sock->data = accept_ctx;
    h2o_socket_read_start(sock, on_accept);
    return sock;
}

void http_start_loop(notesd_loop_t *loop)
{
    this_loop = loop;
    h2o_context_init(&loop->ctx, h2o_evloop_create(), &server.conf);
    loop->api_listener =
        watch_listener(loop, loop->api_fd, &loop->api_accept, server.api_hosts, NULL);
    if (loop->tls_fd >= 0)
        loop->tls_listener =
            watch_listener(loop, loop->tls_fd, &loop->tls_accept, server.api_hosts, server.ssl_ctx);
    if (loop->metrics_fd >= 0)
        loop->metrics_listener = watch_listener(loop, loop->metrics_fd, &loop->metrics_accept,
                                                server.metrics_hosts, NULL);
}

void http_stop_accepting(notesd_loop_t *loop)
{
    if (loop->api_listener != NULL) {
        h2o_socket_read_stop(loop->api_listener);
        h2o_socket_close(loop->api_listener);
        loop->api_listener = NULL;
    }
    if (loop->tls_listener != NULL) {
        h2o_socket_read_stop(loop->tls_listener);
        h2o_socket_close(loop->tls_listener);
        loop->tls_listener = NULL;
    }
    if (loop->metrics_listener != NULL) {
        h2o_socket_read_stop(loop->metrics_listener);
        h2o_socket_close(loop->metrics_listener);
        loop->metrics_listener = NULL;
    }
}
