/*
 * ws_handshake.h - the WebSocket opening handshake (RFC 6455 section 4): the
 * HTTP side of a WebSocket route, from its GET to the 101.
 *
 * Owns what a handshake request must carry and the answers to one that does
 * not (426 or 400, each saying why), Sec-WebSocket-Accept, and the 101 with
 * the socket handed over by h2o (h2o_http1_upgrade). What happens on the
 * socket after that, and whether the server takes connections at all (503
 * during the shutdown), is ws.c's.
 */
#ifndef NOTESD_WS_HANDSHAKE_H
#define NOTESD_WS_HANDSHAKE_H

#include <h2o.h>
#include <h2o/http1.h>
#include "compiler.h"
#include "request.h"

/* Checks that `r` is a handshake notesd can take: GET over HTTP/1.1 with
 * Upgrade: websocket, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key of
 * 16 bytes in base64 (values read without the whitespace around them).
 * Returns 0 with *key set (its 24 characters, in the request's headers), or
 * -1 after answering why not: 426 with Upgrade: websocket to a request that
 * is not a handshake, 426 with Sec-WebSocket-Version: 13 to another version,
 * 400 to a bad key, and to HTTP/2 and HTTP/1.0, which h2o 2.2.5 cannot
 * upgrade. */
NOTESD_MUSTCHECK int ws_handshake_check(notesd_req_t *r, h2o_iovec_t *key);

/* Answers a checked handshake (ws_handshake_check's `key`) with 101 Switching
 * Protocols, its Sec-WebSocket-Accept and Server-Timing, and has h2o write it
 * and then call on_upgraded(data, socket, request's size), or (data, NULL, 0)
 * when it could not. The request is disposed of by h2o either way, its
 * duration ending with the 101. */
void ws_handshake_switch(notesd_req_t *r, h2o_iovec_t key, h2o_http1_upgrade_cb on_upgraded,
                         void *data);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (24 characters): base64 of
 * the SHA-1 of the key and RFC 6455's GUID; 28 characters, no NUL. */
void ws_accept_key(const char key[24], char out[28]);

#endif
