/*
 * ws_handshake.c - the WebSocket opening handshake (see ws_handshake.h).
 */
#include <string.h>
#include <openssl/sha.h>
#include "head.h"
#include "respond.h"
#include "ws_handshake.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* A Sec-WebSocket-Key is 16 bytes in base64: 22 characters and "==". */
static int key_is_valid(h2o_iovec_t key)
{
    if (key.len != 24 || key.base[22] != '=' || key.base[23] != '=')
        return 0;
    for (size_t i = 0; i < 22; i++) {
        char ch = key.base[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '+' || ch == '/'))
            return 0;
    }
    return 1;
}

/* A header's value, without the whitespace around it (RFC 9110 section 5.5). */
static h2o_iovec_t header_value(h2o_req_t *req, const char *name, size_t len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
    if (i < 0)
        return h2o_iovec_init(NULL, 0);
    h2o_iovec_t v = req->headers.entries[i].value;
    v.len = head_trim((const char **)&v.base, v.len);
    return v;
}

/* 426 Upgrade Required: the route speaks only WebSocket (RFC 9110 section 15.5.22). */
static void respond_upgrade_required(notesd_req_t *r, const char *message)
{
    h2o_add_header(&r->req->pool, &r->req->res.headers, H2O_TOKEN_UPGRADE, NULL,
                   H2O_STRLIT("websocket"));
    respond_error(r, 426, message);
}

int ws_handshake_check(notesd_req_t *r, h2o_iovec_t *key)
{
    h2o_req_t *req = r->req;

    if (req->version != 0x101) {
        respond_error(r, 400,
                      "WebSocket needs HTTP/1.1: h2o 2.2.5 upgrades neither HTTP/2 (no RFC 8441) "
                      "nor HTTP/1.0");
        return -1;
    }
    h2o_iovec_t upgrade = req->upgrade;
    if (upgrade.base != NULL)
        upgrade.len = head_trim((const char **)&upgrade.base, upgrade.len);
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || upgrade.base == NULL ||
        !h2o_lcstris(upgrade.base, upgrade.len, H2O_STRLIT("websocket"))) {
        respond_upgrade_required(r, "this route speaks WebSocket: send GET with "
                                    "Connection: Upgrade and Upgrade: websocket");
        return -1;
    }
    h2o_iovec_t version = header_value(req, H2O_STRLIT("sec-websocket-version"));
    if (!h2o_memis(version.base, version.len, H2O_STRLIT("13"))) {
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-version"), 0,
                              NULL, H2O_STRLIT("13"));
        respond_upgrade_required(r, "Sec-WebSocket-Version must be 13");
        return -1;
    }
    *key = header_value(req, H2O_STRLIT("sec-websocket-key"));
    if (!key_is_valid(*key)) {
        respond_error(r, 400, "Sec-WebSocket-Key must be 16 bytes in base64");
        return -1;
    }
    return 0;
}

void ws_handshake_switch(notesd_req_t *r, h2o_iovec_t key, h2o_http1_upgrade_cb on_upgraded,
                         void *data)
{
    h2o_req_t *req = r->req;
    char *accept = h2o_mem_alloc_pool(&req->pool, 28);

    ws_accept_key(key.base, accept);
    req->res.status = 101;
    req->res.reason = "Switching Protocols";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_UPGRADE, NULL, H2O_STRLIT("websocket"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-accept"), 0,
                          NULL, accept, 28);
    request_add_server_timing(r);
    h2o_http1_upgrade(req, NULL, 0, on_upgraded, data);
}

void ws_accept_key(const char key[24], char out[28])
{
    uint8_t src[24 + sizeof(WS_GUID) - 1], digest[SHA_DIGEST_LENGTH];
    char b64[32];
    memcpy(src, key, 24);
    memcpy(src + 24, WS_GUID, sizeof(WS_GUID) - 1);
    SHA1(src, sizeof(src), digest);
    h2o_base64_encode(b64, digest, sizeof(digest), 0);
    memcpy(out, b64, 28);
}
