/*
 * http.c - h2o set-up: the shared configuration and its two hosts, TLS and h2c,
 * the listening sockets, one context per loop (see http.h).
 */
#include <stdio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include "dispatch.h"
#include "http.h"

void http_configure(const notesd_config_t *cfg, const request_settings_t *settings)
{
    h2o_config_init(&server.conf);
    /* Express sends no Server header; neither do we (len 0 omits it). */
    server.conf.server_name = h2o_iovec_init(H2O_STRLIT(""));
    /* MAX_BODY_BYTES is enforced while the body is read, not after: h2o
     * refuses a declared Content-Length over it from the head, stops reading a
     * chunked body (HTTP/1) or a stream's DATA (HTTP/2) at it, so a connection
     * (an HTTP/2 stream) never holds more than MAX_BODY_BYTES of body. Its
     * HTTP/1 answer, a 413, becomes notesd's (dispatch.c: JSON, counted);
     * HTTP/2 resets the stream. Compressed bodies are held to it twice: on the
     * wire here, and inflated in body.c. See docs/decisions.md, "Request bodies". */
    server.conf.max_request_entity_size = (size_t)cfg->max_body_bytes;
    /* The seed's clients speak HTTP/1.1: no h2c unless asked for. With it, h2o
     * takes both ways in: a connection that opens with HTTP/2's preface (prior
     * knowledge) and an HTTP/1.1 request with Upgrade: h2c. */
    server.conf.http1.upgrade_to_http2 = cfg->h2c;
    /* h2o 2.2.5's only HTTP/1 timeout: receiving a request, and idling between
     * requests; the same figure for HTTP/2's idle connections and TLS handshakes. */
    server.conf.http1.req_timeout = (uint64_t)cfg->client_timeout_ms;
    server.conf.http2.idle_timeout = (uint64_t)cfg->client_timeout_ms;
    server.conf.handshake_timeout = (uint64_t)cfg->client_timeout_ms;

    server.api_hosts[0] =
        h2o_config_register_host(&server.conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    dispatch_register(server.api_hosts[0], PORT_API, settings);

    /* The metrics port has a configuration of its own, so that it speaks
     * HTTP/1.1 only whatever H2C says: h2o decides h2c per configuration, and
     * on HTTP/2 one connection could ask for a hundred pages at once. Its
     * clients (Prometheus, a journal reader, a browser) need nothing else.
     * Its requests need no body: a connection holds at most 4 KiB of one. */
    h2o_config_init(&server.metrics_conf);
    server.metrics_conf.server_name = h2o_iovec_init(H2O_STRLIT(""));
    server.metrics_conf.max_request_entity_size = 4096;
    server.metrics_conf.http1.upgrade_to_http2 = 0;
    server.metrics_conf.http1.req_timeout = (uint64_t)cfg->client_timeout_ms;
    server.metrics_hosts[0] = h2o_config_register_host(
        &server.metrics_conf, h2o_iovec_init(H2O_STRLIT("metrics")), 65535);
    dispatch_register(server.metrics_hosts[0], PORT_METRICS, settings);
}

int http_tls_configure(const notesd_config_t *cfg, char *err, size_t len)
{
    if (cfg->tls_port == 0)
        return 0;
    if (cfg->tls_cert == NULL || cfg->tls_key == NULL) {
        snprintf(err, len, "TLS_PORT needs TLS_CERT and TLS_KEY (see --help)");
        return -1;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    const char *what = NULL, *path = NULL;
    if (ctx == NULL)
        what = "cannot create a TLS context", path = "";
    else if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1)
        what = "TLS_CERT: cannot load the certificate", path = cfg->tls_cert;
    else if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1)
        what = "TLS_KEY: cannot load the private key", path = cfg->tls_key;
    else if (SSL_CTX_check_private_key(ctx) != 1)
        what = "TLS_KEY: the key does not match the certificate", path = cfg->tls_key;
    if (what != NULL) {
        char reason[256];
        ERR_error_string_n(ERR_peek_last_error(), reason, sizeof(reason));
        snprintf(err, len, "%s %s (%s)", what, path, reason);
        SSL_CTX_free(ctx);
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* TLS 1.2's suites as Mozilla's "intermediate" profile has them, the usual
     * server default: forward secrecy and AEAD only, so no static-RSA key
     * exchange and no CBC. TLS 1.3's are OpenSSL's own, all of that kind. */
    SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                 "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                 "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
                                 "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:"
                                 "DHE-RSA-CHACHA20-POLY1305");
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    /* h2o_alpn_protocols is "h2" (and its drafts), then "http/1.1": h2o picks
     * HTTP/2 when the client offers it and HTTP/1.1 otherwise. */
    h2o_ssl_register_alpn_protocols(ctx, h2o_alpn_protocols);
    server.ssl_ctx = ctx;
    return 0;
}

int http_open_listeners(const notesd_config_t *cfg)
{
    int reuseport = server.nloops > 1;
    /* With PORT=0 (or TLS_PORT=auto) the first socket takes a free port and
     * the other loops' sockets join it. */
    server.api_port = cfg->port;
    server.tls_port = cfg->tls_port == CONFIG_PORT_AUTO ? 0 : cfg->tls_port;
    for (int i = 0; i < server.nloops; i++) {
        notesd_loop_t *loop = &server.loops[i];
        listeners_t *set = &loop->listen;
        if ((set->api.fd = listen_bind(cfg->host, server.api_port, reuseport, &server.api_port)) <
            0)
            return -1;
        if (server.ssl_ctx != NULL && (set->tls.fd = listen_bind(cfg->host, server.tls_port,
                                                                 reuseport, &server.tls_port)) < 0)
            return -1;
    }
    server.metrics_port = 0;
    if (cfg->metrics_port != 0) {
        int port = cfg->metrics_port == CONFIG_PORT_AUTO ? 0 : cfg->metrics_port;
        if ((server.loops[0].listen.metrics.fd =
                 listen_bind(cfg->metrics_host, port, 0, &server.metrics_port)) < 0)
            return -1;
    }
    return 0;
}

void http_start_loop(notesd_loop_t *loop, h2o_loop_t *evloop)
{
    h2o_context_init(&loop->ctx, evloop, &server.conf);
    if (loop->listen.metrics.fd >= 0)
        h2o_context_init(&loop->metrics_ctx, evloop, &server.metrics_conf);
    listen_start(&loop->listen, &loop->ctx, &loop->metrics_ctx, &loop->timers, server.api_hosts,
                 server.metrics_hosts, server.ssl_ctx, server.conf.http1.req_timeout);
}

void http_stop_loop(notesd_loop_t *loop)
{
    /* Only the handlers' part of each context (the routes' state): h2o's own
     * timeouts may still hold entries, which h2o_context_dispose asserts are
     * gone, and the process is about to exit. */
    h2o_context_dispose_pathconf_context(&loop->ctx, &server.api_hosts[0]->paths.entries[0]);
    if (loop->metrics_ctx.loop != NULL)
        h2o_context_dispose_pathconf_context(&loop->metrics_ctx,
                                             &server.metrics_hosts[0]->paths.entries[0]);
}
