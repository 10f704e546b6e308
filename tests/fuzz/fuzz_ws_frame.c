/*
 * fuzz_ws_frame.c - libFuzzer target for ws_frame_head_read and
 * ws_frame_judge (server/ws_frame.c): what a WebSocket client's frames may
 * declare, judged from their headers as a connection reads them.
 *
 * The input's first byte picks the two limits (max_fragment_bytes and
 * max_message_bytes, from 0 to 2^64 - 1); the rest is what a client sends,
 * read frame after frame: each header, then as much of its payload as the
 * input holds, until a frame is refused or the bytes run out. Invariants: a
 * header is read once all of it is there and not before, its fields are the
 * bytes as a second reading of RFC 6455 decodes them, and written again as a
 * client writes them (tests/unit/ws_client_frames.h) they are the same bytes;
 * every verdict is the one a plainly written judge of section 5 gives (with
 * 128-bit sums, where the server's subtracts); a refused frame leaves the
 * reader as it was; an accepted one is in its shortest form, a control frame
 * whole and short, a data frame and its message within the limits, and the
 * reader's open message is what the frames so far make it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../unit/ws_client_frames.h"
#include "ws_frame.h"

/* A header as a second reading decodes it: `need` bytes in all. */
typedef struct reference_head {
    int fin, rsv, opcode, masked, length_bytes;
    uint64_t len;
    size_t need;
} reference_head_t;

/* 0 while the header is not all in `n` bytes. */
static int reference_read(const uint8_t *p, size_t n, reference_head_t *f)
{
    if (n < 2)
        return 0;
    int len7 = p[1] & 0x7f;
    f->fin = (p[0] & 0x80) != 0;
    f->rsv = (p[0] & 0x70) >> 4;
    f->opcode = p[0] & 0x0f;
    f->masked = (p[1] & 0x80) != 0;
    f->length_bytes = len7 == 127 ? 8 : len7 == 126 ? 2 : 0;
    f->need = 2 + (size_t)f->length_bytes + (f->masked ? 4 : 0);
    if (n < f->need)
        return 0;
    f->len = f->length_bytes == 0 ? (uint64_t)len7 : 0;
    for (int i = 0; i < f->length_bytes; i++)
        f->len = f->len * 256 + p[2 + i];
    return 1;
}

/* RFC 6455 section 5 as a list of rules, on the reader before the frame. */
static enum ws_frame_verdict reference_judge(const reference_head_t *f, const ws_frame_reader_t *rd)
{
    int control = f->opcode >= 8;
    int known = f->opcode <= 2 || (f->opcode >= 8 && f->opcode <= 10);
    int shortest = f->len < 126 ? 0 : f->len < 65536 ? 2 : 8;
    if (!known || f->rsv != 0 || !f->masked || f->len >= (uint64_t)1 << 63 ||
        f->length_bytes != shortest)
        return WS_FRAME_PROTOCOL;
    if (control)
        return !f->fin || f->len > 125 || (f->opcode == 8 && f->len == 1) ? WS_FRAME_PROTOCOL
                                                                          : WS_FRAME_OK;
    int continuation = f->opcode == 0;
    if (continuation != (rd->in_message != 0))
        return WS_FRAME_PROTOCOL;
    unsigned __int128 total = (unsigned __int128)(continuation ? rd->message_len : 0) + f->len;
    if (f->len > rd->max_fragment_bytes || total > rd->max_message_bytes)
        return WS_FRAME_TOO_BIG;
    return WS_FRAME_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t limits[] = {
        0, 1, 125, 126, 65535, 65536, 1 << 20, (uint64_t)1 << 62, UINT64_MAX};
    const size_t nlimits = sizeof(limits) / sizeof(limits[0]);

    if (size < 1)
        return 0;
    ws_frame_reader_t rd = {.max_fragment_bytes = limits[(data[0] & 0x0f) % nlimits],
                            .max_message_bytes = limits[(data[0] >> 4) % nlimits]};
    const uint8_t *p = data + 1;
    size_t left = size - 1;

    for (;;) {
        ws_frame_head_t h;
        reference_head_t f;
        size_t n = ws_frame_head_read(p, left, &h);
        if (!reference_read(p, left, &f)) {
            if (n != 0)
                abort(); /* read before all of it was there */
            return 0;
        }
        if (n != f.need || h.fin != f.fin || h.rsv != f.rsv || h.opcode != f.opcode ||
            h.masked != f.masked || h.length_bytes != f.length_bytes || h.payload_length != f.len)
            abort();
        for (size_t k = 0; k < n; k++) {
            ws_frame_head_t part;
            if (ws_frame_head_read(p, k, &part) != 0)
                abort();
        }

        /* the same bytes, written as a client writes them (up to the masking key,
         * which frame_write would replace when it is all zero) */
        uint8_t again[WS_FRAME_HEAD_MAX];
        frame_spec_t spec = {.fin = h.fin,
                             .rsv = h.rsv,
                             .opcode = h.opcode,
                             .unmasked = !h.masked,
                             .length_bytes = h.length_bytes,
                             .declared = h.payload_length};
        size_t key_at = n - (h.masked ? 4 : 0);
        if (frame_write(again, spec, NULL, 0) != n || memcmp(again, p, key_at) != 0)
            abort();

        ws_frame_reader_t before = rd;
        enum ws_frame_verdict verdict = ws_frame_judge(&rd, &h);
        if (verdict != reference_judge(&f, &before))
            abort();
        if (verdict != WS_FRAME_OK) {
            if (memcmp(&rd, &before, sizeof(rd)) != 0)
                abort(); /* a refused frame changes nothing: the connection closes */
            return 0;
        }
        /* accepted: its shortest form, as a client writes it by default */
        spec.length_bytes = 0;
        if (frame_write(again, spec, NULL, 0) != n || memcmp(again, p, key_at) != 0)
            abort();
        if (h.opcode >= WS_OP_CLOSE) {
            if (!h.fin || h.payload_length > 125 || memcmp(&rd, &before, sizeof(rd)) != 0)
                abort();
        } else {
            uint64_t start = h.opcode == WS_OP_CONTINUATION ? before.message_len : 0;
            if (h.payload_length > rd.max_fragment_bytes || rd.message_len > rd.max_message_bytes ||
                rd.message_len != start + h.payload_length || rd.in_message != !h.fin)
                abort();
        }

        p += n, left -= n;
        if (h.payload_length > left)
            return 0; /* the rest of the input is this frame's payload */
        p += h.payload_length, left -= (size_t)h.payload_length;
    }
}
