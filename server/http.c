/*
 * http.c - h2o set-up: hosts, routes, listeners, one context per loop (see http.h).
 */
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
#include "metrics.h"

notesd_server_t server;
__thread notesd_loop_t *this_loop;

h2o_pathconf_t *http_register(h2o_hostconf_t *host, const char *path,
                              int (*on_req)(h2o_handler_t *, h2o_req_t *))
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, path, 0);
    h2o_handler_t *handler = h2o_create_handler(pathconf, sizeof(*handler));
    handler->on_req = on_req;
    return pathconf;
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

    h2o_hostconf_t *api =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    routes_notes_register(api);
    routes_misc_register(api);
    server.api_hosts[0] = api;

    h2o_hostconf_t *metrics =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("metrics")), 65535);
    metrics_register_routes(metrics);
    server.metrics_hosts[0] = metrics;
}

static void on_connection_closed(void *data)
{
    notesd_loop_t *loop = data;
    STAT_SUB(loop->open_connections, 1);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    h2o_accept_ctx_t *accept_ctx = listener->data;
    h2o_socket_t *sock;

    if (err != NULL)
        return;
    /* Accept everything that is waiting, so a burst costs one wake-up. */
    while ((sock = h2o_evloop_socket_accept(listener)) != NULL) {
        STAT_ADD(this_loop->open_connections, 1);
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
    }
    if (config.metrics_port != 0 &&
        (server.loops[0].metrics_fd = bind_listen(config.metrics_host, config.metrics_port, 0)) < 0)
        return -1;
    return 0;
}

static h2o_socket_t *watch_listener(notesd_loop_t *loop, int fd, h2o_accept_ctx_t *accept_ctx,
                                    h2o_hostconf_t **hosts)
{
    accept_ctx->ctx = &loop->ctx;
    accept_ctx->hosts = hosts;
    h2o_socket_t *sock = h2o_evloop_socket_create(loop->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    sock->data = accept_ctx;
    h2o_socket_read_start(sock, on_accept);
    return sock;
}

void http_start_loop(notesd_loop_t *loop)
{
    this_loop = loop;
    h2o_context_init(&loop->ctx, h2o_evloop_create(), &server.conf);
    loop->api_listener = watch_listener(loop, loop->api_fd, &loop->api_accept, server.api_hosts);
    if (loop->metrics_fd >= 0)
        loop->metrics_listener =
            watch_listener(loop, loop->metrics_fd, &loop->metrics_accept, server.metrics_hosts);
}

void http_stop_accepting(notesd_loop_t *loop)
{
    if (loop->api_listener != NULL) {
        h2o_socket_read_stop(loop->api_listener);
        h2o_socket_close(loop->api_listener);
        loop->api_listener = NULL;
    }
    if (loop->metrics_listener != NULL) {
        h2o_socket_read_stop(loop->metrics_listener);
        h2o_socket_close(loop->metrics_listener);
        loop->metrics_listener = NULL;
    }
}
