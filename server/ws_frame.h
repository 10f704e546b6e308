/*
 * ws_frame.h - a WebSocket frame's header (RFC 6455 section 5.2), read and
 * judged before any of its payload: what a client's frame may declare.
 *
 * Owns ws_frame_head_t, the opcodes, the verdicts, and what a connection's
 * reader remembers from one frame to the next (ws_frame_reader_t: whether a
 * data message is open, and how long its frames say it is). Pure functions:
 * no socket, no wslay, no allocation, so tests/fuzz/fuzz_ws_frame.c runs
 * them on any bytes. What a verdict does to a connection (its close code, the
 * frame's bytes handed to wslay) is ws.c's.
 */
#ifndef NOTESD_WS_FRAME_H
#define NOTESD_WS_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* The opcodes RFC 6455 defines (section 5.2); 3-7 and 0xB-0xF are reserved. */
enum ws_opcode {
    WS_OP_CONTINUATION = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8, /* the first control opcode */
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xa,
};

/* What a frame's header declares. */
typedef struct ws_frame_head {
    uint8_t fin, rsv, opcode, masked;
    uint8_t length_bytes;    /* the extended length: 0, 2 (126) or 8 (127) */
    uint64_t payload_length; /* as declared, the top bit included */
} ws_frame_head_t;

/* Longest header: 2 bytes, an 8-byte length and the 4-byte masking key. */
#define WS_FRAME_HEAD_MAX 14

/* Reads the header at the start of `p` (`n` bytes): returns its length (2 to
 * WS_FRAME_HEAD_MAX bytes, the masking key included) and fills *h, or 0 while
 * it is not all there. Reads the bytes only: ws_frame_judge judges them. */
size_t ws_frame_head_read(const uint8_t *p, size_t n, ws_frame_head_t *h);

enum ws_frame_verdict {
    WS_FRAME_OK,
    WS_FRAME_PROTOCOL, /* RFC 6455 forbids it: close 1002 */
    WS_FRAME_TOO_BIG,  /* past a limit: close 1009 */
};

/* One connection's reader of frames from its client: its limits, and the
 * data message the frames so far leave open. Zeroed but for the limits at
 * the start of a connection. */
typedef struct ws_frame_reader {
    uint64_t max_fragment_bytes; /* a longer data frame: too big */
    uint64_t max_message_bytes;  /* a data frame taking its message past it: too big */
    uint64_t message_len;        /* the declared payload of the open message's frames so far */
    uint8_t in_message;          /* a data message's last frame has not come yet */
} ws_frame_reader_t;

/* Judges the next frame from the client by its header alone, before any of
 * its payload: RSV bits without an extension, a reserved opcode, no mask, a
 * length not in its shortest form or with its top bit set, a control frame
 * that is fragmented or over 125 bytes, a close frame with a 1-byte body, a
 * continuation with no message open or a new message while one is: 1002. A
 * data frame over max_fragment_bytes, or that takes its message over
 * max_message_bytes: 1009. An OK data frame is counted in the reader's open
 * message (a new one starts from nothing; its last frame closes it); any
 * other verdict leaves the reader as it was. */
enum ws_frame_verdict ws_frame_judge(ws_frame_reader_t *rd, const ws_frame_head_t *h);

#endif
