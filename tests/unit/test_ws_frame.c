/*
 * test_ws_frame.c - unit tests of server/ws_frame.c: a frame's header read
 * only once all of it is there, every frame RFC 6455 forbids judged a
 * protocol error from its header, the limits' verdicts from the declared
 * lengths alone, and the reader following a message across its frames.
 */
#include <string.h>
#include "check.h"
#include "ws_client_frames.h"
#include "ws_frame.h"

/* A reader with 64 KiB limits, in the middle of a message of `message_len`
 * bytes so far when `in_message`. */
static ws_frame_reader_t reader_64k(int in_message, uint64_t message_len)
{
    return (ws_frame_reader_t){.max_fragment_bytes = 65536,
                               .max_message_bytes = 65536,
                               .message_len = message_len,
                               .in_message = (uint8_t)in_message};
}

/* The verdict on a frame's header alone (its payload is never written). */
static enum ws_frame_verdict judge_in(ws_frame_reader_t *rd, frame_spec_t f)
{
    uint8_t buf[WS_FRAME_HEAD_MAX];
    ws_frame_head_t h;
    size_t n = frame_write(buf, f, NULL, 0);
    CHECK_INT_EQ(ws_frame_head_read(buf, n, &h), n);
    return ws_frame_judge(rd, &h);
}

static enum ws_frame_verdict judge(frame_spec_t f, int in_message, uint64_t message_len)
{
    ws_frame_reader_t rd = reader_64k(in_message, message_len);
    return judge_in(&rd, f);
}

static void a_header_is_read_only_once_all_of_it_is_there(void)
{
    uint8_t buf[WS_FRAME_HEAD_MAX];
    ws_frame_head_t h;
    size_t n = frame_write(buf, whole(OP_BINARY, (uint64_t)1 << 62), NULL, 0);
    CHECK_INT_EQ(n, 14); /* 2 + an 8-byte length + the key */
    for (size_t k = 0; k < n; k++)
        CHECK_INT_EQ(ws_frame_head_read(buf, k, &h), 0);
    CHECK_INT_EQ(ws_frame_head_read(buf, n, &h), 14);
    CHECK_INT_EQ(h.payload_length, (uint64_t)1 << 62);
    CHECK_INT_EQ(h.length_bytes, 8);
    CHECK(h.fin && h.masked && h.opcode == OP_BINARY && h.rsv == 0);
    n = frame_write(buf, whole(OP_TEXT, 300), NULL, 0);
    CHECK_INT_EQ(ws_frame_head_read(buf, n, &h), 8);
    CHECK_INT_EQ(h.payload_length, 300);
    frame_spec_t f = whole(OP_PING, 5);
    f.unmasked = 1;
    n = frame_write(buf, f, NULL, 0);
    CHECK_INT_EQ(ws_frame_head_read(buf, n, &h), 2); /* no key to wait for */
    CHECK(!h.masked);
}

static void frames_rfc_6455_forbids_are_protocol_errors(void)
{
    CHECK_INT_EQ(judge(whole(OP_TEXT, 5), 0, 0), WS_FRAME_OK);
    CHECK_INT_EQ(judge(whole(OP_PING, 125), 0, 0), WS_FRAME_OK);
    CHECK_INT_EQ(judge(whole(OP_CLOSE, 0), 0, 0), WS_FRAME_OK);
    CHECK_INT_EQ(judge(whole(OP_CLOSE, 2), 0, 0), WS_FRAME_OK);
    CHECK_INT_EQ(judge(whole(OP_PING, 3), 1, 100), WS_FRAME_OK); /* between fragments */
    /* control frames: 125 bytes at most, never fragmented; a close body of one byte */
    CHECK_INT_EQ(judge(whole(OP_PING, 126), 0, 0), WS_FRAME_PROTOCOL);
    CHECK_INT_EQ(judge((frame_spec_t){.opcode = OP_PING, .declared = 1}, 0, 0), WS_FRAME_PROTOCOL);
    CHECK_INT_EQ(judge(whole(OP_CLOSE, 1), 0, 0), WS_FRAME_PROTOCOL);
    CHECK_INT_EQ(judge(whole(OP_PONG, 200), 0, 0), WS_FRAME_PROTOCOL);
    /* lengths: the shortest form, the top bit clear */
    frame_spec_t f = whole(OP_BINARY, (uint64_t)1 << 63);
    CHECK_INT_EQ(judge(f, 0, 0), WS_FRAME_PROTOCOL);
    f = whole(OP_BINARY, 5), f.length_bytes = 2;
    CHECK_INT_EQ(judge(f, 0, 0), WS_FRAME_PROTOCOL);
    f = whole(OP_BINARY, 1000), f.length_bytes = 8;
    CHECK_INT_EQ(judge(f, 0, 0), WS_FRAME_PROTOCOL);
    /* no extension, a mask, no reserved opcode */
    f = whole(OP_TEXT, 1), f.rsv = 4;
    CHECK_INT_EQ(judge(f, 0, 0), WS_FRAME_PROTOCOL);
    f = whole(OP_TEXT, 1), f.unmasked = 1;
    CHECK_INT_EQ(judge(f, 0, 0), WS_FRAME_PROTOCOL);
    for (int op = 3; op <= 15; op++)
        if (op < OP_CLOSE || op > OP_PONG)
            CHECK_INT_EQ(judge(whole(op, 0), 0, 0), WS_FRAME_PROTOCOL);
    /* fragments: a continuation needs an open message, a new message a closed one */
    CHECK_INT_EQ(judge(whole(OP_CONT, 1), 0, 0), WS_FRAME_PROTOCOL);
    CHECK_INT_EQ(judge(whole(OP_TEXT, 1), 1, 10), WS_FRAME_PROTOCOL);
    CHECK_INT_EQ(judge(whole(OP_CONT, 1), 1, 10), WS_FRAME_OK);
}

static void lengths_past_the_limits_are_too_big_from_the_header(void)
{
    CHECK_INT_EQ(judge(whole(OP_BINARY, 65536), 0, 0), WS_FRAME_OK);
    CHECK_INT_EQ(judge(whole(OP_BINARY, 65537), 0, 0), WS_FRAME_TOO_BIG);
    CHECK_INT_EQ(judge(whole(OP_BINARY, (uint64_t)1 << 62), 0, 0), WS_FRAME_TOO_BIG);
    CHECK_INT_EQ(judge(whole(OP_CONT, 36), 1, 65500), WS_FRAME_OK);
    CHECK_INT_EQ(judge(whole(OP_CONT, 37), 1, 65500), WS_FRAME_TOO_BIG);
    CHECK_INT_EQ(judge(whole(OP_CONT, 0), 1, 65537), WS_FRAME_TOO_BIG);
    /* a new message starts from nothing, whatever the one before had */
    CHECK_INT_EQ(judge(whole(OP_TEXT, 65536), 0, 65536), WS_FRAME_OK);
    /* a fragment's own limit, below the message's */
    ws_frame_reader_t rd = reader_64k(0, 0);
    rd.max_fragment_bytes = 100;
    CHECK_INT_EQ(judge_in(&rd, whole(OP_BINARY, 100)), WS_FRAME_OK);
    CHECK_INT_EQ(judge_in(&rd, whole(OP_BINARY, 101)), WS_FRAME_TOO_BIG);
}

static void the_reader_follows_a_message_across_its_frames(void)
{
    ws_frame_reader_t rd = reader_64k(0, 0);
    frame_spec_t first = {.opcode = OP_TEXT, .declared = 40000};
    CHECK_INT_EQ(judge_in(&rd, first), WS_FRAME_OK);
    CHECK(rd.in_message);
    CHECK_INT_EQ(rd.message_len, 40000);
    /* a control frame between fragments leaves the message as it is */
    CHECK_INT_EQ(judge_in(&rd, whole(OP_PING, 4)), WS_FRAME_OK);
    CHECK(rd.in_message);
    CHECK_INT_EQ(rd.message_len, 40000);
    /* a refused frame leaves it too: one that takes the message past 64 KiB */
    CHECK_INT_EQ(judge_in(&rd, (frame_spec_t){.opcode = OP_CONT, .declared = 25537}),
                 WS_FRAME_TOO_BIG);
    CHECK(rd.in_message);
    CHECK_INT_EQ(rd.message_len, 40000);
    CHECK_INT_EQ(judge_in(&rd, (frame_spec_t){.opcode = OP_CONT, .declared = 25000}), WS_FRAME_OK);
    CHECK_INT_EQ(rd.message_len, 65000);
    /* its last frame closes it, at the limit exactly */
    CHECK_INT_EQ(judge_in(&rd, whole(OP_CONT, 536)), WS_FRAME_OK);
    CHECK(!rd.in_message);
    CHECK_INT_EQ(rd.message_len, 65536);
    /* and the next message counts from nothing */
    CHECK_INT_EQ(judge_in(&rd, whole(OP_BINARY, 7)), WS_FRAME_OK);
    CHECK(!rd.in_message);
    CHECK_INT_EQ(rd.message_len, 7);
}

int main(void)
{
    CHECK_RUN(a_header_is_read_only_once_all_of_it_is_there);
    CHECK_RUN(frames_rfc_6455_forbids_are_protocol_errors);
    CHECK_RUN(lengths_past_the_limits_are_too_big_from_the_header);
    CHECK_RUN(the_reader_follows_a_message_across_its_frames);
    return check_summary();
}
