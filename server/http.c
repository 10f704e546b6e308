/*
 * http.c - h2o set-up: hosts, route dispatch, listeners, one context per loop (see http.h).
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
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
    /* The seed's clients speak HTTP/1.1; no h2c upgrade on the API port. */
    server.conf.http1.upgrade_to_http2 = 0;
    /* h2o 2.2.5's only HTTP/1 timeout: receiving a request, and idling between requests. */
    server.conf.http1.req_timeout = (uint64_t)config.client_timeout_ms;

    server.api_hosts[0] =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    register_port(server.api_hosts[0], PORT_API);
    server.metrics_hosts[0] =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("metrics")), 65535);
    register_port(server.metrics_hosts[0], PORT_METRICS);
}

/* ---- admission: listeners and their connection limits ------------------------------------ */

static void on_accept(h2o_socket_t *listener, const char *err);

/* Every state change of a listener goes through here: only an ACCEPTING
 * listener is watched, so a full or starved one costs the loop nothing. */
static void listener_set_state(listener_t *l, enum listener_state state)
{
    assert(l->state != LISTENER_CLOSED);
    if (state == LISTENER_ACCEPTING && l->state != LISTENER_ACCEPTING)
        h2o_socket_read_start(l->sock, on_accept);
    else if (state != LISTENER_ACCEPTING && l->state == LISTENER_ACCEPTING)
        h2o_socket_read_stop(l->sock);
    if (state == LISTENER_CLOSED) {
        h2o_timeout_unlink(&l->backoff_entry);
        h2o_socket_close(l->sock);
        l->sock = NULL;
    }
    l->state = state;
}

static void on_connection_closed(void *data)
{
    listener_t *l = data;
    STAT_SUB(this_loop->stats.open_connections, 1);
    l->connections--;
    /* One place is free again: take the next client from the backlog. */
    if (l->state == LISTENER_FULL)
        listener_set_state(l, LISTENER_ACCEPTING);
}

static void on_backoff_end(h2o_timeout_entry_t *entry)
{
    listener_t *l = H2O_STRUCT_FROM_MEMBER(listener_t, backoff_entry, entry);
    if (l->state == LISTENER_BACKOFF)
        listener_set_state(l, l->connections < l->max ? LISTENER_ACCEPTING : LISTENER_FULL);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    listener_t *l = listener->data;
    h2o_socket_t *sock;

    if (err != NULL)
        return;
    /* Accept everything that is waiting, so a burst costs one wake-up, up to the limit. */
    while (l->connections < l->max) {
        if ((sock = h2o_evloop_socket_accept(listener)) == NULL) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The listener stays readable, and epoll is level-triggered: retrying
                 * now would spin. The clients wait in the backlog meanwhile. */
                STAT_ADD(this_loop->stats.accept_paused_fds, 1);
                if (!l->starved) /* once per episode, not every 100 ms */
                    log_warn("accept: %s; pausing 100 ms at a time until one is free (%zu "
                             "connections open)",
                             strerror(errno), l->connections);
                l->starved = 1;
                listener_set_state(l, LISTENER_BACKOFF);
                h2o_timeout_link(this_loop->ctx.loop, &this_loop->accept_backoff,
                                 &l->backoff_entry);
            }
            return; /* EAGAIN: nothing more waiting */
        }
        l->connections++;
        l->starved = 0;
        STAT_ADD(this_loop->stats.open_connections, 1);
        sock->on_close.cb = on_connection_closed;
        sock->on_close.data = l;
        h2o_accept(&l->accept, sock);
    }
    STAT_ADD(this_loop->stats.accept_paused_full, 1);
    listener_set_state(l, LISTENER_FULL);
}

/* Binds and listens; with `reuseport`, several loops can each have a socket on
 * the same port and the kernel spreads new connections among them. Port 0
 * takes a free port; *bound gets the port bound. */
static int bind_listen(const char *host, int port, int reuseport, int *bound)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV},
                    *res;
    struct sockaddr_storage addr;
    socklen_t addrlen = sizeof(addr);
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
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, H2O_SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &addrlen) != 0) {
        log_error("cannot listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    *bound = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                              : ((struct sockaddr_in *)&addr)->sin_port);
    return fd;
}

int http_open_listeners(void)
{
    int reuseport = server.nloops > 1;
    /* With PORT=0 the first socket takes a free port and the others join it. */
    server.api_port = config.port;
    for (int i = 0; i < server.nloops; i++) {
        listener_t *l = &server.loops[i].api;
        if ((l->fd = bind_listen(config.host, server.api_port, reuseport, &server.api_port)) < 0)
            return -1;
        /* MAX_CONNECTIONS is shared out like POOL_MAX; the first loops take the remainder. */
        l->max = (size_t)(config.max_connections / server.nloops +
                          (i < config.max_connections % server.nloops));
    }
    server.metrics_port = 0;
    if (config.metrics_port != 0) {
        listener_t *l = &server.loops[0].metrics;
        int port = config.metrics_port == CONFIG_PORT_AUTO ? 0 : config.metrics_port;
        if ((l->fd = bind_listen(config.metrics_host, port, 0, &server.metrics_port)) < 0)
            return -1;
        l->max = HTTP_METRICS_MAX_CONNECTIONS;
    }
    return 0;
}

static void watch_listener(notesd_loop_t *loop, listener_t *l, h2o_hostconf_t **hosts)
{
    if (l->fd < 0)
        return;
    l->accept.ctx = &loop->ctx;
    l->accept.hosts = hosts;
    l->backoff_entry.cb = on_backoff_end;
    l->sock = h2o_evloop_socket_create(loop->ctx.loop, l->fd, H2O_SOCKET_FLAG_DONT_READ);
    l->sock->data = l;
    l->state = LISTENER_FULL; /* watched from the next line on */
    listener_set_state(l, LISTENER_ACCEPTING);
}

void http_start_loop(notesd_loop_t *loop)
{
    this_loop = loop;
    h2o_context_init(&loop->ctx, h2o_evloop_create(), &server.conf);
    h2o_timeout_init(loop->ctx.loop, &loop->accept_backoff, 100);
    watch_listener(loop, &loop->api, server.api_hosts);
    watch_listener(loop, &loop->metrics, server.metrics_hosts);
}

void http_stop_accepting(notesd_loop_t *loop)
{
    if (loop->api.state != LISTENER_CLOSED)
        listener_set_state(&loop->api, LISTENER_CLOSED);
    if (loop->metrics.state != LISTENER_CLOSED)
        listener_set_state(&loop->metrics, LISTENER_CLOSED);
}

void http_dispose_loop(notesd_loop_t *loop)
{
    h2o_timeout_dispose(loop->ctx.loop, &loop->accept_backoff);
}
