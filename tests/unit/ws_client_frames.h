/*
 * ws_client_frames.h - WebSocket frames as a client writes them (RFC 6455
 * section 5.2), written here by hand rather than with server/ws_frame.c, so
 * the tests that send them (test_ws.c, test_ws_frame.c) and the fuzz target
 * that re-writes what it read (tests/fuzz/fuzz_ws_frame.c) check the server's
 * reading against a second reading of the RFC.
 */
#ifndef NOTESD_TESTS_WS_CLIENT_FRAMES_H
#define NOTESD_TESTS_WS_CLIENT_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { OP_CONT = 0, OP_TEXT = 1, OP_BINARY = 2, OP_CLOSE = 8, OP_PING = 9, OP_PONG = 10 };

/* What a frame's header says. `declared` is the length the header states
 * (normally the payload's), `length_bytes` forces the extended form (0: the
 * shortest), and the payload is masked with `key` (a fixed one when it is
 * all zero) unless `unmasked`. */
typedef struct frame_spec {
    int fin, rsv, opcode, unmasked, length_bytes;
    uint64_t declared;
    uint8_t key[4];
} frame_spec_t;

/* Writes one frame into `out` (room for 14 + len bytes); returns its length. */
static inline size_t frame_write(uint8_t *out, frame_spec_t f, const void *payload, size_t len)
{
    static const uint8_t fixed[4] = {0x37, 0xfa, 0x21, 0x3d};
    const uint8_t *key = f.key[0] | f.key[1] | f.key[2] | f.key[3] ? f.key : fixed;
    size_t n = 0;
    int lb = f.length_bytes != 0  ? f.length_bytes
             : f.declared < 126   ? 0
             : f.declared < 65536 ? 2
                                  : 8;
    out[n++] = (uint8_t)((f.fin ? 0x80 : 0) | f.rsv << 4 | f.opcode);
    uint8_t mask = f.unmasked ? 0 : 0x80;
    if (lb == 0) {
        out[n++] = mask | (uint8_t)f.declared;
    } else {
        out[n++] = mask | (lb == 2 ? 126 : 127);
        for (int i = lb - 1; i >= 0; i--)
            out[n++] = (uint8_t)(f.declared >> (8 * i));
    }
    if (!f.unmasked) {
        memcpy(out + n, key, 4);
        n += 4;
    }
    for (size_t i = 0; i < len; i++)
        out[n + i] = ((const uint8_t *)payload)[i] ^ (f.unmasked ? 0 : key[i % 4]);
    return n + len;
}

/* A whole frame: FIN set, masked, its real length declared. */
static inline frame_spec_t whole(int opcode, size_t len)
{
    return (frame_spec_t){.fin = 1, .opcode = opcode, .declared = len};
}

#endif
