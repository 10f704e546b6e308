/*
 * ws_frame.c - a WebSocket frame's header read and judged (see ws_frame.h).
 */
#include "ws_frame.h"

size_t ws_frame_head_read(const uint8_t *p, size_t n, ws_frame_head_t *h)
{
    if (n < 2)
        return 0;
    h->fin = p[0] >> 7;
    h->rsv = (p[0] >> 4) & 7;
    h->opcode = p[0] & 0x0f;
    h->masked = p[1] >> 7;
    h->payload_length = p[1] & 0x7f;
    h->length_bytes = h->payload_length == 126 ? 2 : h->payload_length == 127 ? 8 : 0;
    size_t head = 2 + h->length_bytes + (h->masked ? 4 : 0);
    if (n < head)
        return 0;
    if (h->length_bytes != 0) {
        h->payload_length = 0;
        for (size_t i = 0; i < h->length_bytes; i++)
            h->payload_length = h->payload_length << 8 | p[2 + i];
    }
    return head;
}

enum ws_frame_verdict ws_frame_judge(ws_frame_reader_t *rd, const ws_frame_head_t *h)
{
    uint64_t len = h->payload_length, message_len = rd->message_len;

    /* section 5.2: no extension is negotiated, the client masks, 3-7 and B-F are
     * reserved, and a length takes its shortest form with the top bit clear */
    if (h->rsv != 0 || !h->masked || (h->opcode > WS_OP_BINARY && h->opcode < WS_OP_CLOSE) ||
        h->opcode > WS_OP_PONG || (h->length_bytes == 2 && len < 126) ||
        (h->length_bytes == 8 && (len < 65536 || len >> 63 != 0)))
        return WS_FRAME_PROTOCOL;
    if (h->opcode >= WS_OP_CLOSE) {
        /* section 5.5: control frames are whole and short, and may come between
         * a message's frames; 5.5.1: a close body is empty or starts with a
         * 2-byte code */
        if (!h->fin || len > 125 || (h->opcode == WS_OP_CLOSE && len == 1))
            return WS_FRAME_PROTOCOL;
        return WS_FRAME_OK;
    }
    /* section 5.4: a continuation continues an open message; a new one waits
     * for the last frame of the one before */
    if ((h->opcode == WS_OP_CONTINUATION) != (rd->in_message != 0))
        return WS_FRAME_PROTOCOL;
    if (h->opcode != WS_OP_CONTINUATION)
        message_len = 0;
    if (len > rd->max_fragment_bytes || message_len > rd->max_message_bytes ||
        len > rd->max_message_bytes - message_len)
        return WS_FRAME_TOO_BIG;
    rd->message_len = message_len + len;
    rd->in_message = !h->fin;
    return WS_FRAME_OK;
}
