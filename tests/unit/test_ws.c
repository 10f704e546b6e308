/*
 * test_ws.c - unit tests of server/ws.c and ws_handshake.c: Sec-WebSocket-Accept,
 * against RFC 6455's own example (section 1.3) and one computed elsewhere
 * (Python's hashlib and base64); and whole connections driven over a
 * socketpair on a real h2o event loop (ws_open), with the test as the client
 * writing frames by hand: an echo, every frame RFC 6455 forbids refused from
 * its header with 1002, the limits' 1009 from a header alone, and the bound
 * on what a client that sends and never reads can make the server queue,
 * with the 1008 that ends it, each counted in its route's slot. The headers'
 * verdicts one by one are test_ws_frame.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <h2o.h>
#include "check.h"
#include "ws_client_frames.h"
#include "stats.h"
#include "timers.h"
#include "ws.h"
#include "ws_handshake.h"

#define DEADLINE_MS 5000 /* the longest any step below waits for the loop */

static void the_accept_key_is_rfc_6455s(void)
{
    char out[28];
    ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
    CHECK_MEM_EQ(out, sizeof(out), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    ws_accept_key("AAAAAAAAAAAAAAAAAAAAAA==", out);
    CHECK_MEM_EQ(out, sizeof(out), "ICX+Yqv66kxgM0FcWaLWlFLwTAI=");
}

static const request_ws_limits_t limits_64k = {
    .max_message_bytes = 65536, .max_fragment_bytes = 65536, .idle_timeout_ms = 60000};

/* ---- connections over a socketpair -------------------------------------------------------- */

static h2o_loop_t *loop;
static timers_t timers;
static ws_loop_t wsl;
/* The route the connections count in: a slot that is not the first, named
 * as a route module names its routes (a pointer to its label). */
static const char *const echo_label = "/ws/test";
static const ws_route_t echo_route = {.label = &echo_label, .slot = WS_ROUTES_MAX - 1};
static int conns_closed; /* on_close calls */

static void on_echo_message(ws_conn_t *c, int binary, const uint8_t *msg, size_t len)
{
    if (ws_send(c, binary, msg, len) != 0) {
        /* closing: not sent */
    }
}

static void on_conn_close(ws_conn_t *c)
{
    conns_closed++;
}

static const ws_handlers_t echo = {.on_message = on_echo_message, .on_close = on_conn_close};

typedef struct client {
    int fd;        /* the test's end */
    ws_conn_t *c;  /* the server's connection (valid until it closes) */
    uint8_t *in;   /* bytes read from the server, not yet parsed */
    size_t in_len; /* of them */
    int eof;       /* the server shut its side or closed */
} client_t;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A connection of `limits` to the echo; both socket buffers as small as the
 * kernel allows, so a client that does not read fills them at once. */
static void client_open(client_t *cl, const request_ws_limits_t *limits)
{
    int sv[2], small = 4096;
    memset(cl, 0, sizeof(*cl));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    cl->fd = sv[1];
    cl->in = malloc(1 << 20);
    h2o_socket_t *sock = h2o_evloop_socket_create(loop, sv[0], 0);
    cl->c = ws_open(&wsl, &echo_route, limits, &echo, NULL, 0, sock);
    CHECK(cl->c != NULL);
}

static void client_close(client_t *cl)
{
    close(cl->fd);
    free(cl->in);
    cl->fd = -1;
}

/* Writes what the socket takes of `data`; returns how much. */
static size_t client_send(client_t *cl, const void *data, size_t len)
{
    ssize_t n = write(cl->fd, data, len);
    return n > 0 ? (size_t)n : 0;
}

/* Reads what the server has written (up to 1 MiB kept). */
static void client_read(client_t *cl)
{
    for (;;) {
        ssize_t n = read(cl->fd, cl->in + cl->in_len, (1 << 20) - cl->in_len);
        if (n > 0) {
            cl->in_len += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            cl->eof = 1;
        return;
    }
}

/* A frame from the server (unmasked, short: none here is over 64 KiB). */
typedef struct server_frame {
    int fin, opcode;
    const uint8_t *payload;
    size_t len;
} server_frame_t;

/* Takes the next whole frame the server wrote, reading as the loop runs;
 * 0 when none came in DEADLINE_MS. */
static int client_next_frame(client_t *cl, server_frame_t *f, size_t *consumed)
{
    uint64_t deadline = now_ms() + DEADLINE_MS;
    for (;;) {
        client_read(cl);
        const uint8_t *p = cl->in + *consumed;
        size_t avail = cl->in_len - *consumed;
        if (avail >= 2) {
            size_t head = 2, len = p[1] & 0x7f;
            if (len == 126 && avail >= 4)
                head = 4, len = (size_t)p[2] << 8 | p[3];
            if ((p[1] & 0x7f) != 126 || avail >= 4) {
                if (avail >= head + len) {
                    *f = (server_frame_t){p[0] >> 7, p[0] & 0x0f, p + head, len};
                    *consumed += head + len;
                    return 1;
                }
            }
        }
        if (cl->eof || now_ms() > deadline)
            return 0;
        h2o_evloop_run(loop, 10);
    }
}

/* The close frame the server sends next (data frames before it are skipped,
 * and counted in *data_frames when given); its code, or -1 when none came. */
static int client_close_code(client_t *cl, size_t *consumed, size_t *data_frames)
{
    server_frame_t f;
    while (client_next_frame(cl, &f, consumed)) {
        if (f.opcode == OP_CLOSE)
            return f.len >= 2 ? f.payload[0] << 8 | f.payload[1] : 0;
        if (data_frames != NULL && f.opcode != OP_PONG)
            ++*data_frames;
    }
    return -1;
}

/* Runs the loop until the server closes the connection (it is released). */
static int run_until_released(int closed_before)
{
    uint64_t deadline = now_ms() + DEADLINE_MS;
    while (conns_closed == closed_before) {
        if (now_ms() > deadline)
            return 0;
        h2o_evloop_run(loop, 10);
    }
    return 1;
}

static void an_echo_comes_back_whole(void)
{
    client_t cl;
    uint8_t buf[64];
    size_t consumed = 0;
    server_frame_t f;

    client_open(&cl, &limits_64k);
    size_t n = frame_write(buf, (frame_spec_t){.opcode = OP_TEXT, .declared = 3}, "hel", 3);
    n += frame_write(buf + n, whole(OP_PING, 2), "hi", 2);
    n += frame_write(buf + n, whole(OP_CONT, 2), "lo", 2);
    CHECK_INT_EQ(client_send(&cl, buf, n), n);
    CHECK(client_next_frame(&cl, &f, &consumed));
    CHECK_INT_EQ(f.opcode, OP_PONG);
    CHECK_MEM_EQ(f.payload, f.len, "hi");
    CHECK(client_next_frame(&cl, &f, &consumed));
    CHECK(f.fin && f.opcode == OP_TEXT);
    CHECK_MEM_EQ(f.payload, f.len, "hello");
    int closed = conns_closed;
    client_close(&cl);
    CHECK(run_until_released(closed));
}

/* Sends `bytes` on a new connection and expects a close with `code`, and
 * nothing echoed before it. */
static void refused_with(const uint8_t *bytes, size_t n, int code, enum ws_close_reason reason,
                         const request_ws_limits_t *limits)
{
    client_t cl;
    size_t consumed = 0, echoed = 0;
    uint64_t counted = wsl.stats.route[echo_route.slot].closes[reason];
    int closed = conns_closed;

    client_open(&cl, limits);
    CHECK_INT_EQ(client_send(&cl, bytes, n), n);
    CHECK_INT_EQ(client_close_code(&cl, &consumed, &echoed), code);
    CHECK_INT_EQ(echoed, 0);
    client_close(&cl);
    CHECK(run_until_released(closed));
    CHECK_INT_EQ(wsl.stats.route[echo_route.slot].closes[reason], counted + 1);
}

static void forbidden_control_frames_close_1002_counted_as_protocol_errors(void)
{
    uint8_t buf[256], payload[126] = {0};
    frame_spec_t f;

    refused_with(buf, frame_write(buf, whole(OP_PING, 126), payload, 126), 1002, WS_CLOSE_PROTOCOL,
                 &limits_64k);
    f = whole(OP_PING, 4), f.fin = 0;
    refused_with(buf, frame_write(buf, f, "ping", 4), 1002, WS_CLOSE_PROTOCOL, &limits_64k);
    refused_with(buf, frame_write(buf, whole(OP_CLOSE, 1), "x", 1), 1002, WS_CLOSE_PROTOCOL,
                 &limits_64k);
    /* a 64-bit length with its top bit set: refused from the header alone */
    refused_with(buf, frame_write(buf, whole(OP_BINARY, (uint64_t)1 << 63), NULL, 0), 1002,
                 WS_CLOSE_PROTOCOL, &limits_64k);
    f = whole(OP_TEXT, 3), f.unmasked = 1;
    refused_with(buf, frame_write(buf, f, "abc", 3), 1002, WS_CLOSE_PROTOCOL, &limits_64k);
}

static void a_declared_length_past_the_limits_closes_1009_from_the_header_alone(void)
{
    uint8_t buf[64];
    request_ws_limits_t small = limits_64k;
    small.max_fragment_bytes = 100;

    refused_with(buf, frame_write(buf, whole(OP_BINARY, (uint64_t)1 << 62), NULL, 0), 1009,
                 WS_CLOSE_TOO_BIG, &limits_64k);
    refused_with(buf, frame_write(buf, whole(OP_BINARY, 101), NULL, 0), 1009, WS_CLOSE_TOO_BIG,
                 &small);
}

/* A client sends `frame` (an empty ping, an empty message, a 1-byte message)
 * as fast as the socket takes it and reads nothing: the server's queue never
 * holds more than max_message_bytes and one frame's answer, and it stops
 * reading, so the client's writes stop; once the queue has stayed full for
 * idle_timeout_ms the server decides a close with 1008, which the client
 * finds after everything queued before it when it reads at last. */
static void a_client_that_never_reads_is_bounded_then_closed(const uint8_t *frame, size_t n,
                                                             const char *what)
{
    request_ws_limits_t limits = limits_64k;
    limits.max_message_bytes = 8192;
    limits.idle_timeout_ms = 300;
    client_t cl;
    uint8_t batch[6 * 1024];
    size_t per = sizeof(batch) / n, most = 0, sent = 0, stalled = 0;
    uint64_t counted = wsl.stats.route[echo_route.slot].closes[WS_CLOSE_NOT_READING];
    int closed = conns_closed;

    for (size_t i = 0; i < per; i++)
        memcpy(batch + i * n, frame, n);
    client_open(&cl, &limits);
    uint64_t deadline = now_ms() + DEADLINE_MS;
    /* until the client's writes have made no headway for 20 turns of the loop;
     * each write starts where the last one stopped, mid-frame or not */
    while (stalled < 20 && now_ms() < deadline) {
        size_t k = client_send(&cl, batch + sent % n, per * n - sent % n);
        sent += k;
        stalled = k == 0 ? stalled + 1 : 0;
        h2o_evloop_run(loop, 1);
        size_t q = ws_queued_bytes(cl.c);
        if (q > most)
            most = q;
    }
    CHECK(stalled >= 20); /* the server stopped reading */
    CHECK(ws_is_backed_up(cl.c));
    CHECK(most <= limits.max_message_bytes + WS_FRAME_COST + 1);
    printf("    %s: %zu frames sent before the server stopped reading; its queue held "
           "%zu bytes at most\n",
           what, sent / n, most);
    /* the queue stays full: 1008 after idle_timeout_ms, behind what was queued
     * (the loop runs a second longer than that, for a busy machine) */
    size_t consumed = 0;
    uint64_t full_at = now_ms();
    while (now_ms() < full_at + limits.idle_timeout_ms + 1000)
        h2o_evloop_run(loop, 10);
    CHECK_INT_EQ(client_close_code(&cl, &consumed, NULL), 1008);
    client_close(&cl);
    CHECK(run_until_released(closed));
    CHECK_INT_EQ(wsl.stats.route[echo_route.slot].closes[WS_CLOSE_NOT_READING], counted + 1);
}

static void empty_frames_from_a_client_that_never_reads_are_bounded(void)
{
    uint8_t frame[16];
    size_t n = frame_write(frame, whole(OP_PING, 0), NULL, 0);
    a_client_that_never_reads_is_bounded_then_closed(frame, n, "empty pings");
    n = frame_write(frame, whole(OP_TEXT, 0), NULL, 0);
    a_client_that_never_reads_is_bounded_then_closed(frame, n, "empty messages");
    n = frame_write(frame, whole(OP_BINARY, 1), "x", 1);
    a_client_that_never_reads_is_bounded_then_closed(frame, n, "1-byte messages");
}

/* What the connections above counted is in their route's slot alone, and the
 * metrics page names it with the route's label: one series per family for the
 * one route asked for. */
static void the_route_names_and_holds_its_counters(void)
{
    const ws_stats_t *mine = &wsl.stats.route[echo_route.slot];
    CHECK(mine->opened > 0);
    CHECK(mine->closes[WS_CLOSE_PROTOCOL] > 0);
    for (size_t k = 0; k < WS_ROUTES_MAX; k++)
        if (k != echo_route.slot)
            CHECK_INT_EQ(wsl.stats.route[k].opened + wsl.stats.route[k].closes[WS_CLOSE_PROTOCOL],
                         0);

    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    ws_report_t report;
    ws_report_init(&report);
    ws_report_add(&report, &wsl.stats);
    exposition_t o;
    exposition_init(&o, &pool, 4096, 0);
    ws_report_write(&report, &o, &echo_route, 1);
    char *page = strndup(o.start, exposition_len(&o));
    char want[128];
    snprintf(want, sizeof(want),
             "\nnotes_ws_closes_total{path=\"/ws/test\",reason=\"protocol_error\"} %llu\n",
             (unsigned long long)mine->closes[WS_CLOSE_PROTOCOL]);
    CHECK(strstr(page, want) != NULL);
    snprintf(want, sizeof(want), "\nnotes_ws_connections_opened_total{path=\"/ws/test\"} %llu\n",
             (unsigned long long)mine->opened);
    CHECK(strstr(page, want) != NULL);
    size_t series = 0;
    for (const char *p = page; (p = strstr(p, "\nnotes_ws_connections{")) != NULL; p++)
        series++;
    CHECK_INT_EQ(series, 1);
    free(page);
    h2o_mem_clear_pool(&pool);
}

int main(void)
{
    CHECK_RUN(the_accept_key_is_rfc_6455s);

    loop = h2o_evloop_create();
    if (timers_start(&timers, loop) != 0)
        abort();
    ws_loop_init(&wsl, &timers, NULL);
    CHECK_RUN(an_echo_comes_back_whole);
    CHECK_RUN(forbidden_control_frames_close_1002_counted_as_protocol_errors);
    CHECK_RUN(a_declared_length_past_the_limits_closes_1009_from_the_header_alone);
    CHECK_RUN(empty_frames_from_a_client_that_never_reads_are_bounded);
    CHECK_RUN(the_route_names_and_holds_its_counters);
    CHECK(ws_is_empty(&wsl));
    timers_stop(&timers);
    h2o_evloop_run(loop, 0); /* frees the closed sockets */
    h2o_evloop_destroy(loop);
    return check_summary();
}
