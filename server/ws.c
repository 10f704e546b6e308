/*
 * ws.c - WebSocket connections over h2o's upgraded sockets and wslay's frames
 * (see ws.h).
 *
 * Every entry point is a callback of h2o or of the loop's timers: the
 * upgrade's end, readable, written, a deadline, a route's timer. Each runs
 * `proceed`, which moves bytes between the socket and wslay as far as they
 * go. `release` is the one way out: the connection ends at once (its socket
 * closed, its close counted, its route told) and its memory, wslay's context
 * among it, goes on the loop's next turn (timers_defer), as every close in
 * notesd does, so code of wslay's or a route's still on the stack never
 * reads freed memory. wslay runs without buffering data messages (it would allocate a
 * frame's declared length before anything checks it), and is handed the
 * client's bytes one frame at a time (on_wslay_recv): each frame's header is
 * read and judged first (ws_frame_check), so a frame RFC 6455 forbids or one
 * past the limits is refused from its header alone, and a full queue stops
 * the reading at the next frame. ws.c gathers the messages itself.
 */
#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <h2o.h>
#include <h2o/http1.h>
#include <openssl/sha.h>
#include <wslay/wslay.h>
#include "head.h"
#include "log.h"
#include "respond.h"
#include "ws.h"
#include "ws_progress.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_WRITE_MAX 16384 /* bytes handed to the socket in one write */
#define WS_KEEP_BYTES 4096 /* a receive buffer up to this size is kept between messages */
/* From deciding a close to closing the socket, at most: room for the queue,
 * the close frame and the client's answer, and no more. */
#define WS_CLOSE_TIMEOUT_NS (2000 * 1000000ULL)

const char *const ws_kind_labels[WS_KIND__COUNT] = {"/ws/echo", "/ws/feed"};
const char *const ws_close_labels[WS_CLOSE__COUNT] = {"client",   "done",           "idle_timeout",
                                                      "shutdown", "protocol_error", "message_limit",
                                                      "too_big",  "not_reading",    "abnormal"};

/* The code and reason phrase notesd sends for a close it decides; code 0: none
 * of its own (the client's close is answered with its code, by wslay). */
static const struct {
    uint16_t code;
    const char *phrase;
} closes[WS_CLOSE__COUNT] = {
    [WS_CLOSE_DONE] = {1000, "done"},
    [WS_CLOSE_IDLE] = {1001, "idle timeout"},
    [WS_CLOSE_SHUTDOWN] = {1001, "server shutting down"},
    [WS_CLOSE_PROTOCOL] = {1002, "protocol error"},
    [WS_CLOSE_MESSAGE_LIMIT] = {1008, "too many messages"},
    [WS_CLOSE_TOO_BIG] = {1009, "message too big"},
    [WS_CLOSE_NOT_READING] = {1008, "not reading"},
};

/* Seconds, 10 ms to an hour: how long connections live. */
static const double lifetime_bounds[] = {0.01, 0.1, 0.5, 1,   2.5, 5,    10,
                                         30,   60,  120, 300, 600, 1800, 3600};

struct ws_conn {
    h2o_linklist_t link; /* in loop->conns until released */
    ws_loop_t *loop;
    const ws_handlers_t *h;
    enum ws_kind kind;
    enum ws_state state;
    enum ws_close_reason reason; /* once `decided` */
    uint8_t decided;             /* 1: a reason was decided; the first one counts */
    uint8_t close_queued;        /* our close frame went to wslay */
    uint8_t frame_is_data;       /* the frame being received belongs to a data message */
    uint8_t msg_binary;          /* the data message being received is binary */
    uint8_t traced;              /* the handshake came with a traceparent, in `trace` */
    request_ws_limits_t limits;
    h2o_socket_t *sock; /* ours once the 101 is written; NULL before */
    wslay_event_context_ptr ctx;
    timer_entry_t deadline;    /* OPEN: the idle check; CLOSING, DRAINING: the close deadline */
    timer_entry_t route_timer; /* the route's schedule (ws_timer_arm) */
    void (*on_route_timer)(ws_conn_t *c);
    uint64_t opened_ns;     /* the 101 written */
    uint64_t active_ns;     /* the last frame received or write finished */
    uint64_t backed_up_ns;  /* since when the queue is full (ws_is_backed_up), or since the
                               client last showed reading while it is; 0: it is not */
    ws_progress_t progress; /* what the client's TCP showed at the last look */
    uint64_t messages_in;
    uint64_t rx_left;        /* bytes of the frame being handed to wslay still to hand it */
    uint64_t rx_message_len; /* the declared payload of the open data message's frames */
    uint8_t rx_in_message;   /* a data message's last frame has not come yet */
    uint16_t client_code;    /* the code of the client's close frame */
    uint8_t *msg;            /* the data message being received */
    size_t msg_len, msg_cap; /* its bytes so far, and room */
    char *wbuf;              /* frames for the socket; one write in flight */
    size_t wlen;             /* bytes in wbuf (being written, or gathered) */
    traceparent_t trace;     /* the handshake's, for the log */
    struct ws_journal {      /* with JOURNAL on: what each message's record takes */
        uint64_t conn_id;    /* h2o's id of the connection, from the handshake */
        int64_t conn_at_us;
        uint8_t route, loop, request_id_len, request_id_cut;
        char request_id[JOURNAL_REQUEST_ID_MAX];
    } journal;
    _Alignas(max_align_t) uint8_t data[]; /* the route's room */
};

static ws_stats_t *stats_of(ws_conn_t *c)
{
    return &c->loop->stats[c->kind];
}

/* ---- the journal: a record per data message ---------------------------------------------------
 */

/* What the messages' records take from the handshake request (with JOURNAL on). */
static void journal_handshake(ws_conn_t *c, notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    c->journal.conn_id = req->conn->id;
    c->journal.conn_at_us =
        (int64_t)req->conn->connected_at.tv_sec * 1000000 + req->conn->connected_at.tv_usec;
    c->journal.route = r->route;
    c->journal.loop = (uint8_t)r->loop->index;
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
    if (i >= 0) {
        journal_record_t id; /* the header's value as every record keeps it */
        journal_set_request_id(&id, req->headers.entries[i].value.base,
                               req->headers.entries[i].value.len);
        c->journal.request_id_cut = id.request_id_cut;
        c->journal.request_id_len = id.request_id_len;
        memcpy(c->journal.request_id, id.request_id, id.request_id_len);
    }
}

/* One message, received whole (JOURNAL_WS_IN) or queued (JOURNAL_WS_OUT), with
 * the handshake's connection, route, trace id and X-Request-Id. */
static void journal_message(ws_conn_t *c, enum journal_kind kind, size_t len)
{
    struct timespec wall;
    journal_record_t rec;

    clock_gettime(CLOCK_REALTIME, &wall);
    memset(&rec, 0, sizeof(rec));
    rec.kind = (uint8_t)kind;
    rec.loop = c->journal.loop;
    rec.conn_id = c->journal.conn_id;
    rec.conn_at_us = c->journal.conn_at_us;
    rec.arrived_us = rec.started_us = rec.ended_us =
        (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000;
    rec.proto = JOURNAL_H1;
    rec.method = 0; /* the handshake's GET */
    rec.route = c->journal.route;
    rec.status = 101;
    if (kind == JOURNAL_WS_IN)
        rec.bytes_in = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
    else
        rec.bytes_out = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
    if (c->traced)
        rec.trace_hi = c->trace.trace_hi, rec.trace_lo = c->trace.trace_lo;
    rec.request_id_len = c->journal.request_id_len;
    rec.request_id_cut = c->journal.request_id_cut;
    memcpy(rec.request_id, c->journal.request_id, rec.request_id_len);
    journal_add(c->loop->journal, &rec);
}

/* The one writer of c->state: asserts the edge, keeps the open gauge and
 * the deadline that belongs to the new state. */
static void ws_set_state(ws_conn_t *c, enum ws_state to)
{
    enum ws_state from = c->state;
    timers_t *timers = c->loop->timers;

    switch (to) {
    case WS_OPEN:
        assert(from == WS_HANDSHAKE);
        STAT_ADD(c->loop->open[c->kind], 1);
        timers_link(timers, &c->deadline, c->active_ns + c->limits.idle_timeout_ms * 1000000);
        break;
    case WS_CLOSING:
        assert(from == WS_OPEN);
        timers_unlink(timers, &c->deadline);
        timers_unlink(timers, &c->route_timer);
        timers_link(timers, &c->deadline, stats_now_ns() + WS_CLOSE_TIMEOUT_NS);
        break;
    case WS_DRAINING:
        assert(from == WS_CLOSING);
        break;
    case WS_CLOSED:
        assert(from != WS_CLOSED);
        timers_unlink(timers, &c->deadline);
        timers_unlink(timers, &c->route_timer);
        if (from != WS_HANDSHAKE)
            STAT_SUB(c->loop->open[c->kind], 1);
        break;
    case WS_HANDSHAKE:
        assert(!"a connection never goes back to its handshake");
    }
    c->state = to;
}

static void decide(ws_conn_t *c, enum ws_close_reason reason)
{
    if (!c->decided) {
        c->decided = 1;
        c->reason = reason;
    }
}

/* ---- the end of a connection ---------------------------------------------------------------- */

static void log_closed(ws_conn_t *c, double seconds)
{
    char id[TRACEPARENT_TRACE_ID_HEX];
    if (c->traced)
        traceparent_trace_id_hex(c->trace.trace_hi, c->trace.trace_lo, id);
    log_debug("ws %s: closed (%s) after %.3f s, %llu message(s) in%s%.*s", ws_kind_labels[c->kind],
              ws_close_labels[c->reason], seconds, (unsigned long long)c->messages_in,
              c->traced ? ", trace=" : "", c->traced ? (int)sizeof(id) : 0, id);
}

/* On the turn after release: the memory. */
static void on_released(timer_entry_t *entry)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, deadline, entry);
    if (c->ctx != NULL)
        wslay_event_context_free(c->ctx);
    free(c->msg);
    free(c->wbuf);
    free(c);
}

/* Ends the connection now: closes the socket, counts the close, tells the
 * route, leaves the loop's list; frees it on the loop's next turn. Once. */
static void release(ws_conn_t *c)
{
    enum ws_state was = c->state;
    ws_stats_t *st = stats_of(c);

    if (was == WS_CLOSED)
        return;
    decide(c, WS_CLOSE_ABNORMAL);
    ws_set_state(c, WS_CLOSED);
    if (c->h->on_close != NULL)
        c->h->on_close(c);
    if (c->sock != NULL) {
        h2o_socket_close(c->sock);
        c->sock = NULL;
    }
    if (was != WS_HANDSHAKE) {
        double seconds = (double)(stats_now_ns() - c->opened_ns) / 1e9;
        STAT_ADD(st->closes[c->reason], 1);
        histogram_observe(&st->lifetime, seconds);
        if (log_level_current >= LOG_DEBUG)
            log_closed(c, seconds);
    }
    h2o_linklist_unlink(&c->link);
    /* ws_set_state(WS_CLOSED) took the deadline off the timers: it frees the memory now */
    c->deadline.cb = on_released;
    timers_defer(c->loop->timers, &c->deadline);
}

/* Starts the close: nothing more is read or queued. A close of ours goes
 * out after what is queued (proceed); wslay queued its own already. */
static void begin_closing(ws_conn_t *c, enum ws_close_reason reason)
{
    decide(c, reason);
    ws_set_state(c, WS_CLOSING);
}

/* ---- moving bytes -----------------------------------------------------------------------------
 */

static void on_read(h2o_socket_t *sock, const char *err);
static void on_written(h2o_socket_t *sock, const char *err);

static void on_drain(h2o_socket_t *sock, const char *err)
{
    ws_conn_t *c = sock->data;
    if (err != NULL) {
        release(c); /* the client closed its side too: the end */
        return;
    }
    h2o_buffer_consume(&sock->input, sock->input->size);
}

/* Moves what it can: queues our close once the queue ahead of it is out,
 * hands wslay's frames to the socket, feeds wslay what the socket read
 * (unless too much waits to go out), and decides what to wait for next.
 * Returns 1 when the connection is over (the caller releases it). */
static int proceed(ws_conn_t *c)
{
    wslay_event_context_ptr ctx = c->ctx;
    h2o_socket_t *sock = c->sock;

    if (c->state == WS_DRAINING)
        return 0;
    for (;;) {
        int progress = 0;
        if (c->state == WS_CLOSING && closes[c->reason].code != 0 && !c->close_queued &&
            !wslay_event_want_write(ctx)) {
            const char *phrase = closes[c->reason].phrase;
            /* NO_MORE_MSG: a close is queued already (wslay's own); that one goes. */
            if (wslay_event_queue_close(ctx, closes[c->reason].code, (const uint8_t *)phrase,
                                        strlen(phrase)) != 0) {
            }
            c->close_queued = 1;
        }
        if (!h2o_socket_is_writing(sock)) {
            if (wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0)
                return 1; /* out of memory in wslay */
            if (c->wlen > 0) {
                h2o_iovec_t buf = h2o_iovec_init(c->wbuf, c->wlen);
                h2o_socket_write(sock, &buf, 1, on_written);
            }
        }
        if (c->state == WS_OPEN && sock->input->size > 0 && wslay_event_want_read(ctx) &&
            !ws_is_backed_up(c)) {
            size_t before = sock->input->size;
            if (wslay_event_recv(ctx) != 0)
                return 1;
            /* wslay stops reading when it answers a bad frame with a close of its own */
            if (c->state == WS_OPEN && !wslay_event_get_read_enabled(ctx))
                begin_closing(c, WS_CLOSE_PROTOCOL);
            /* a frame refused from its header leaves its bytes, but closes */
            progress = sock->input->size != before || c->state != WS_OPEN;
        }
        if (!progress)
            break;
    }

    if (c->state == WS_OPEN) {
        int backed_up = ws_is_backed_up(c);
        if (!backed_up)
            c->backed_up_ns = 0;
        else if (c->backed_up_ns == 0) {
            c->backed_up_ns = stats_now_ns(); /* on_deadline judges it if it stays full */
            ws_progress_mark(&c->progress, h2o_socket_get_fd(sock));
        }
        if (wslay_event_want_read(ctx) && !backed_up)
            h2o_socket_read_start(sock, on_read);
        else
            h2o_socket_read_stop(sock);
        return 0;
    }
    /* WS_CLOSING: wait until the close frame is written */
    h2o_socket_read_stop(sock);
    if (!wslay_event_get_close_sent(ctx) || h2o_socket_is_writing(sock) || c->wlen > 0)
        return 0;
    if (wslay_event_get_close_received(ctx))
        return 1; /* the closing handshake is complete; the server closes TCP first */
    /* Our close is out: shut our side, so the client sees the end right after
     * it, and read what it still sends (its close among it) until it closes. */
    shutdown(h2o_socket_get_fd(sock), SHUT_WR);
    ws_set_state(c, WS_DRAINING);
    h2o_buffer_consume(&sock->input, sock->input->size);
    h2o_socket_read_start(sock, on_drain);
    return 0;
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    ws_conn_t *c = sock->data;
    if (err != NULL || proceed(c))
        release(c);
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    ws_conn_t *c = sock->data;
    c->wlen = 0;
    if (err != NULL) {
        release(c);
        return;
    }
    c->active_ns = stats_now_ns();
    if (!wslay_event_want_write(c->ctx)) {
        /* nothing more to send: an idle connection keeps no write buffer */
        free(c->wbuf);
        c->wbuf = NULL;
    }
    if (proceed(c))
        release(c);
}

/* OPEN: idle_timeout_ms, checked lazily (activity only moves active_ns, a
 * full queue sets backed_up_ns, and either only ever moves the instant
 * later), counted from the queue filling up while it is full (nothing can be
 * received), else from the last activity. A full queue whose client's TCP
 * showed reading since the last look is judged again idle_timeout_ms later;
 * one that showed none is not reading. CLOSING or DRAINING: the close took
 * too long. */
static void on_deadline(timer_entry_t *entry)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, deadline, entry);
    if (c->state == WS_OPEN) {
        uint64_t since = c->backed_up_ns != 0 ? c->backed_up_ns : c->active_ns;
        uint64_t due = since + c->limits.idle_timeout_ms * 1000000;
        if (due > stats_now_ns()) {
            timers_link(c->loop->timers, entry, due);
            return;
        }
        if (c->backed_up_ns != 0 && ws_progress_seen(&c->progress, h2o_socket_get_fd(c->sock))) {
            c->backed_up_ns = stats_now_ns();
            timers_link(c->loop->timers, entry,
                        c->backed_up_ns + c->limits.idle_timeout_ms * 1000000);
            return;
        }
        ws_close(c, c->backed_up_ns != 0 ? WS_CLOSE_NOT_READING : WS_CLOSE_IDLE);
        if (proceed(c))
            release(c);
        return;
    }
    release(c);
}

static void on_route_timer(timer_entry_t *entry)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, route_timer, entry);
    c->on_route_timer(c);
    if (proceed(c))
        release(c);
}

/* ---- wslay's callbacks -------------------------------------------------------------------- */

/* At the first byte of a frame: reads its header, still in the socket's
 * input, and judges it. Returns 1 when the frame may go to wslay (rx_left is
 * then its whole length), 0 while its header is not all there, or when it is
 * refused: the connection is then closing, with 1002 or 1009, before any of
 * the frame reached wslay. */
static int frame_begins(ws_conn_t *c)
{
    h2o_buffer_t *in = c->sock->input;
    ws_frame_head_t h;
    size_t head = ws_frame_head_read((const uint8_t *)in->bytes, in->size, &h);
    if (head == 0)
        return 0;
    switch (ws_frame_check(&h, c->rx_in_message, c->rx_message_len, &c->limits)) {
    case WS_FRAME_OK:
        break;
    case WS_FRAME_PROTOCOL:
        ws_close(c, WS_CLOSE_PROTOCOL);
        return 0;
    case WS_FRAME_TOO_BIG:
        ws_close(c, WS_CLOSE_TOO_BIG);
        return 0;
    }
    if (h.opcode <= WSLAY_BINARY_FRAME) { /* a data frame: the message it belongs to */
        if (h.opcode != WSLAY_CONTINUATION_FRAME)
            c->rx_message_len = 0;
        c->rx_message_len += h.payload_length;
        c->rx_in_message = !h.fin;
    }
    c->rx_left = head + h.payload_length;
    return 1;
}

/* wslay asks for bytes: it gets the socket's, up to the end of the frame it
 * is reading, so the next frame's header is judged before wslay sees it, and
 * nothing at all while the queue is full (or the connection closing). */
static ssize_t on_wslay_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                             void *user)
{
    ws_conn_t *c = user;
    h2o_buffer_t *in = c->sock->input;
    if (in->size == 0 || c->state != WS_OPEN || ws_is_backed_up(c) ||
        (c->rx_left == 0 && !frame_begins(c))) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (len > in->size)
        len = in->size;
    if (len > c->rx_left)
        len = (size_t)c->rx_left;
    memcpy(buf, in->bytes, len);
    h2o_buffer_consume(&c->sock->input, len);
    c->rx_left -= len;
    return (ssize_t)len;
}

/* Gathers frames into one write of at most WS_WRITE_MAX bytes; proceed
 * writes it once wslay has given all it can. */
static ssize_t on_wslay_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
                             int flags, void *user)
{
    ws_conn_t *c = user;
    if (h2o_socket_is_writing(c->sock) || c->wlen == WS_WRITE_MAX) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (c->wbuf == NULL && (c->wbuf = malloc(WS_WRITE_MAX)) == NULL)
        abort(); /* out of memory: see the policy in main.c */
    size_t n = len < WS_WRITE_MAX - c->wlen ? len : WS_WRITE_MAX - c->wlen;
    memcpy(c->wbuf + c->wlen, data, n);
    c->wlen += n;
    return (ssize_t)n;
}

/* A frame wslay has begun: its payload is kept in the message being
 * gathered, whose room is made here (the limits were checked from the
 * frame's header, in frame_begins). */
static void on_frame_start(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
    ws_conn_t *c = user;
    c->active_ns = stats_now_ns();
    c->frame_is_data = arg->opcode < WSLAY_CONNECTION_CLOSE; /* control frames are wslay's */
    if (c->state != WS_OPEN || !c->frame_is_data)
        return;
    if (arg->opcode != WSLAY_CONTINUATION_FRAME) {
        c->msg_len = 0;
        c->msg_binary = arg->opcode == WSLAY_BINARY_FRAME;
    }
    assert(c->msg_len + arg->payload_length <= c->limits.max_message_bytes);
    size_t need = c->msg_len + (size_t)arg->payload_length;
    if (need > c->msg_cap) {
        if ((c->msg = realloc(c->msg, need)) == NULL)
            abort(); /* out of memory: see the policy in main.c */
        c->msg_cap = need;
    }
}

static void on_frame_chunk(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_chunk_arg *arg, void *user)
{
    ws_conn_t *c = user;
    if (c->state != WS_OPEN || !c->frame_is_data || arg->data_length == 0)
        return;
    assert(c->msg_len + arg->data_length <= c->msg_cap); /* reserved by on_frame_start */
    memcpy(c->msg + c->msg_len, arg->data, arg->data_length);
    c->msg_len += arg->data_length;
}

static void on_wslay_message(wslay_event_context_ptr ctx,
                             const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
    ws_conn_t *c = user;
    ws_stats_t *st = stats_of(c);

    if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
        /* wslay has queued the answer and stopped reading */
        c->client_code = arg->status_code;
        if (c->state == WS_OPEN)
            begin_closing(c, WS_CLOSE_CLIENT);
        return;
    }
    if (c->state != WS_OPEN ||
        (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME))
        return; /* a ping (wslay answers it) or a pong */
    c->messages_in++;
    STAT_ADD(st->messages_in, 1);
    STAT_ADD(st->bytes_in, c->msg_len);
    if (c->loop->journal != NULL)
        journal_message(c, JOURNAL_WS_IN, c->msg_len);
    if (c->limits.max_messages != 0 && c->messages_in > c->limits.max_messages)
        ws_close(c, WS_CLOSE_MESSAGE_LIMIT);
    else if (c->h->on_message != NULL)
        c->h->on_message(c, c->msg_binary, c->msg, c->msg_len);
    c->msg_len = 0;
    if (c->msg_cap > WS_KEEP_BYTES) {
        free(c->msg);
        c->msg = NULL;
        c->msg_cap = 0;
    }
}

static const struct wslay_event_callbacks wslay_callbacks = {
    .recv_callback = on_wslay_recv,
    .send_callback = on_wslay_send,
    .on_frame_recv_start_callback = on_frame_start,
    .on_frame_recv_chunk_callback = on_frame_chunk,
    .on_msg_recv_callback = on_wslay_message,
};

/* ---- the handshake ------------------------------------------------------------------------- */

/* A connection in its handshake, with its limits, handlers and route's room. */
static ws_conn_t *conn_new(ws_loop_t *w, enum ws_kind kind, const request_ws_limits_t *limits,
                           const ws_handlers_t *h, const void *data, size_t data_size)
{
    ws_conn_t *c = calloc(1, sizeof(*c) + data_size);
    if (c == NULL)
        abort(); /* out of memory: see the policy in main.c */
    c->loop = w;
    c->h = h;
    c->kind = kind;
    c->state = WS_HANDSHAKE;
    c->limits = *limits;
    c->deadline.cb = on_deadline;
    c->route_timer.cb = on_route_timer;
    if (data != NULL)
        memcpy(c->data, data, data_size);
    h2o_linklist_insert(&w->conns, &c->link);
    return c;
}

/* The handshake is done: the connection takes the socket, its frames start.
 * Returns the connection, or NULL when it has ended already. */
static ws_conn_t *conn_start(ws_conn_t *c, h2o_socket_t *sock)
{
    c->sock = sock;
    sock->data = c;
    /* h2o reads whatever the kernel holds when the socket becomes readable, so
     * a client that writes fast could put megabytes into sock->input (TCP's
     * autotuned window) before flow control stops reading. A fixed receive
     * buffer, about two messages (the kernel caps it at net.core.rmem_max),
     * bounds that too. */
    int rcvbuf = c->limits.max_message_bytes < 32768 ? 65536
                 : c->limits.max_message_bytes > INT_MAX / 2
                     ? INT_MAX
                     : (int)(2 * c->limits.max_message_bytes);
    setsockopt(h2o_socket_get_fd(sock), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    /* little waits unsent in the kernel: a slow reader gets recent messages */
    ws_progress_start(h2o_socket_get_fd(sock), WS_WRITE_MAX);
    if (wslay_event_context_server_init(&c->ctx, &wslay_callbacks, c) != 0)
        abort(); /* out of memory: see the policy in main.c */
    wslay_event_config_set_no_buffering(c->ctx, 1);
    /* the limits are ws.c's (frame_begins); wslay's own check would close first */
    wslay_event_config_set_max_recv_msg_length(c->ctx, UINT64_MAX >> 1);
    c->opened_ns = c->active_ns = stats_now_ns();
    ws_set_state(c, WS_OPEN);
    STAT_ADD(stats_of(c)->opened, 1);
    if (c->h->on_open != NULL)
        c->h->on_open(c);
    if (c->loop->shutting_down)
        ws_close(c, WS_CLOSE_SHUTDOWN);
    if (proceed(c)) {
        release(c);
        return NULL;
    }
    return c;
}

/* The 101 is written (sock), or could not be (NULL): h2o has disposed of the
 * request either way, and hands the socket over with the request's bytes
 * still at the start of its input. */
static void on_upgraded(void *data, h2o_socket_t *sock, size_t reqsize)
{
    ws_conn_t *c = data;
    if (sock == NULL) {
        release(c);
        return;
    }
    h2o_buffer_consume(&sock->input, reqsize);
    if (conn_start(c, sock) == NULL) {
        /* over already */
    }
}

ws_conn_t *ws_open(ws_loop_t *w, enum ws_kind kind, const request_ws_limits_t *limits,
                   const ws_handlers_t *h, const void *data, size_t data_size, h2o_socket_t *sock)
{
    return conn_start(conn_new(w, kind, limits, h, data, data_size), sock);
}

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

int ws_accept(notesd_req_t *r, ws_loop_t *w, enum ws_kind kind, const request_ws_limits_t *limits,
              const ws_handlers_t *h, const void *data, size_t data_size)
{
    h2o_req_t *req = r->req;

    if (req->version != 0x101) {
        respond_error(r, 400,
                      "WebSocket needs HTTP/1.1: h2o 2.2.5 upgrades neither HTTP/2 (no RFC 8441) "
                      "nor HTTP/1.0");
        return 0;
    }
    h2o_iovec_t upgrade = req->upgrade;
    if (upgrade.base != NULL)
        upgrade.len = head_trim((const char **)&upgrade.base, upgrade.len);
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || upgrade.base == NULL ||
        !h2o_lcstris(upgrade.base, upgrade.len, H2O_STRLIT("websocket"))) {
        respond_upgrade_required(r, "this route speaks WebSocket: send GET with "
                                    "Connection: Upgrade and Upgrade: websocket");
        return 0;
    }
    h2o_iovec_t version = header_value(req, H2O_STRLIT("sec-websocket-version"));
    if (!h2o_memis(version.base, version.len, H2O_STRLIT("13"))) {
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-version"), 0,
                              NULL, H2O_STRLIT("13"));
        respond_upgrade_required(r, "Sec-WebSocket-Version must be 13");
        return 0;
    }
    h2o_iovec_t key = header_value(req, H2O_STRLIT("sec-websocket-key"));
    if (!key_is_valid(key)) {
        respond_error(r, 400, "Sec-WebSocket-Key must be 16 bytes in base64");
        return 0;
    }
    if (w->shutting_down) {
        respond_unavailable(r, "shutting down");
        return 0;
    }

    ws_conn_t *c = conn_new(w, kind, limits, h, data, data_size);
    c->traced = (uint8_t)request_trace(r, &c->trace);
    if (w->journal != NULL)
        journal_handshake(c, r);

    char *accept = h2o_mem_alloc_pool(&req->pool, 28);
    ws_accept_key(key.base, accept);
    req->res.status = 101;
    req->res.reason = "Switching Protocols";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_UPGRADE, NULL, H2O_STRLIT("websocket"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-accept"), 0,
                          NULL, accept, 28);
    request_add_server_timing(r);
    h2o_http1_upgrade(req, NULL, 0, on_upgraded, c);
    return 0;
}

/* ---- what routes call ------------------------------------------------------------------------ */

void ws_loop_init(ws_loop_t *w, timers_t *timers, journal_t *journal)
{
    memset(w, 0, sizeof(*w));
    h2o_linklist_init_anchor(&w->conns);
    w->timers = timers;
    w->journal = journal;
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        histogram_init(&w->stats[k].lifetime, lifetime_bounds,
                       sizeof(lifetime_bounds) / sizeof(lifetime_bounds[0]));
}

void *ws_data(ws_conn_t *c)
{
    return c->data;
}

const request_ws_limits_t *ws_limits(const ws_conn_t *c)
{
    return &c->limits;
}

uint64_t ws_opened_ns(const ws_conn_t *c)
{
    return c->opened_ns;
}

int ws_send(ws_conn_t *c, int binary, const void *msg, size_t len)
{
    if (c->state != WS_OPEN)
        return -1;
    struct wslay_event_msg m = {binary ? WSLAY_BINARY_FRAME : WSLAY_TEXT_FRAME, msg, len};
    if (wslay_event_queue_msg(c->ctx, &m) != 0)
        return -1;
    ws_stats_t *st = stats_of(c);
    STAT_ADD(st->messages_out, 1);
    STAT_ADD(st->bytes_out, len);
    if (c->loop->journal != NULL)
        journal_message(c, JOURNAL_WS_OUT, len);
    return 0;
}

size_t ws_queued_bytes(const ws_conn_t *c)
{
    return wslay_event_get_queued_msg_length(c->ctx) +
           WS_FRAME_COST * wslay_event_get_queued_msg_count(c->ctx);
}

int ws_is_backed_up(const ws_conn_t *c)
{
    return ws_queued_bytes(c) > c->limits.max_message_bytes;
}

void ws_skip(ws_conn_t *c)
{
    STAT_ADD(stats_of(c)->skipped, 1);
}

void ws_close(ws_conn_t *c, enum ws_close_reason reason)
{
    assert(closes[reason].code != 0);
    if (c->state == WS_HANDSHAKE) {
        decide(c, reason); /* on_upgraded closes it once open */
        return;
    }
    if (c->state != WS_OPEN)
        return;
    begin_closing(c, reason);
    wslay_event_shutdown_read(c->ctx);
}

void ws_timer_arm(ws_conn_t *c, uint64_t due_ns, void (*cb)(ws_conn_t *c))
{
    if (c->state != WS_OPEN)
        return;
    timers_unlink(c->loop->timers, &c->route_timer);
    c->on_route_timer = cb;
    timers_link(c->loop->timers, &c->route_timer, due_ns);
}

void ws_shutdown(ws_loop_t *w)
{
    w->shutting_down = 1;
    h2o_linklist_t *node = w->conns.next, *next;
    for (; node != &w->conns; node = next) {
        next = node->next; /* release unlinks node */
        ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, link, node);
        if (c->state != WS_OPEN)
            continue; /* already closing, or closed once its 101 is out */
        ws_close(c, WS_CLOSE_SHUTDOWN);
        if (proceed(c))
            release(c);
    }
}

int ws_is_empty(const ws_loop_t *w)
{
    return h2o_linklist_is_empty((h2o_linklist_t *)&w->conns);
}

/* ---- a frame's header ----------------------------------------------------------------------- */

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

enum ws_frame_verdict ws_frame_check(const ws_frame_head_t *h, int in_message, uint64_t message_len,
                                     const request_ws_limits_t *limits)
{
    uint64_t len = h->payload_length;

    /* section 5.2: no extension is negotiated, the client masks, 3-7 and B-F are
     * reserved, and a length takes its shortest form with the top bit clear */
    if (h->rsv != 0 || !h->masked || (h->opcode > WSLAY_BINARY_FRAME && h->opcode < 0x8) ||
        h->opcode > WSLAY_PONG || (h->length_bytes == 2 && len < 126) ||
        (h->length_bytes == 8 && (len < 65536 || len >> 63 != 0)))
        return WS_FRAME_PROTOCOL;
    if (h->opcode >= WSLAY_CONNECTION_CLOSE) {
        /* section 5.5: control frames are whole and short; 5.5.1: a close body
         * is empty or starts with a 2-byte code */
        if (!h->fin || len > 125 || (h->opcode == WSLAY_CONNECTION_CLOSE && len == 1))
            return WS_FRAME_PROTOCOL;
        return WS_FRAME_OK;
    }
    /* section 5.4: a continuation continues an open message; a new one waits
     * for the last frame of the one before */
    if ((h->opcode == WSLAY_CONTINUATION_FRAME) != (in_message != 0))
        return WS_FRAME_PROTOCOL;
    if (h->opcode != WSLAY_CONTINUATION_FRAME)
        message_len = 0;
    if (len > limits->max_fragment_bytes || message_len > limits->max_message_bytes ||
        len > limits->max_message_bytes - message_len)
        return WS_FRAME_TOO_BIG;
    return WS_FRAME_OK;
}

/* ---- the metrics page's figures ---------------------------------------------------------- */

void ws_report_init(ws_report_t *r)
{
    memset(r, 0, sizeof(*r));
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        histogram_init(&r->all[k].lifetime, lifetime_bounds,
                       sizeof(lifetime_bounds) / sizeof(lifetime_bounds[0]));
}

void ws_report_add(ws_report_t *r, const ws_loop_t *w)
{
    for (size_t k = 0; k < WS_KIND__COUNT; k++) {
        const ws_stats_t *st = &w->stats[k];
        ws_stats_t *all = &r->all[k];
        r->open[k] += STAT_READ(w->open[k]);
        all->opened += STAT_READ(st->opened);
        all->messages_in += STAT_READ(st->messages_in);
        all->bytes_in += STAT_READ(st->bytes_in);
        all->messages_out += STAT_READ(st->messages_out);
        all->bytes_out += STAT_READ(st->bytes_out);
        all->skipped += STAT_READ(st->skipped);
        for (size_t c = 0; c < WS_CLOSE__COUNT; c++)
            all->closes[c] += STAT_READ(st->closes[c]);
        histogram_accumulate(&all->lifetime, &st->lifetime);
    }
}

void ws_report_write(const ws_report_t *r, exposition_t *o)
{
    const char *const *path = ws_kind_labels;

    exposition_family(o, "notes_ws_connections", "gauge",
                      "WebSocket connections open now (past the 101, not yet closed), by route.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        exposition_printf(o, "notes_ws_connections{path=\"%s\"} %zu\n", path[k], r->open[k]);
    exposition_family(o, "notes_ws_connections_opened_total", "counter",
                      "WebSocket connections opened (101 written), by route.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        exposition_printf(o, "notes_ws_connections_opened_total{path=\"%s\"} %llu\n", path[k],
                          (unsigned long long)r->all[k].opened);
    exposition_family(o, "notes_ws_messages_total", "counter",
                      "WebSocket data messages: received whole from clients, and queued to be "
                      "sent.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        exposition_printf(o,
                          "notes_ws_messages_total{path=\"%s\",direction=\"received\"} %llu\n"
                          "notes_ws_messages_total{path=\"%s\",direction=\"sent\"} %llu\n",
                          path[k], (unsigned long long)r->all[k].messages_in, path[k],
                          (unsigned long long)r->all[k].messages_out);
    exposition_family(o, "notes_ws_message_bytes_total", "counter",
                      "Payload bytes of those WebSocket messages (frame headers not counted).");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        exposition_printf(o,
                          "notes_ws_message_bytes_total{path=\"%s\",direction=\"received\"} %llu\n"
                          "notes_ws_message_bytes_total{path=\"%s\",direction=\"sent\"} %llu\n",
                          path[k], (unsigned long long)r->all[k].bytes_in, path[k],
                          (unsigned long long)r->all[k].bytes_out);
    exposition_family(o, "notes_ws_messages_skipped_total", "counter",
                      "Messages a route left out because the client was not reading (the feed's "
                      "gaps).");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        exposition_printf(o, "notes_ws_messages_skipped_total{path=\"%s\"} %llu\n", path[k],
                          (unsigned long long)r->all[k].skipped);
    exposition_family(o, "notes_ws_closes_total", "counter",
                      "WebSocket connections ended, by reason.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++)
        for (size_t c = 0; c < WS_CLOSE__COUNT; c++)
            exposition_printf(o, "notes_ws_closes_total{path=\"%s\",reason=\"%s\"} %llu\n", path[k],
                              ws_close_labels[c], (unsigned long long)r->all[k].closes[c]);
    exposition_family(o, "notes_ws_connection_duration_seconds", "histogram",
                      "Seconds from the 101 being written to the WebSocket's socket closing.");
    for (size_t k = 0; k < WS_KIND__COUNT; k++) {
        char labels[48];
        snprintf(labels, sizeof(labels), "path=\"%s\",", path[k]);
        exposition_histogram(o, "notes_ws_connection_duration_seconds", labels, &r->all[k].lifetime,
                             NULL);
    }
}
