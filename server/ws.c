/*
 * ws.c - WebSocket connections over h2o's upgraded sockets and wslay's frames
 * (see ws.h): the connection's state machine and the wslay glue.
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
 * read and judged first (ws_frame_judge), so a frame RFC 6455 forbids or one
 * past the limits is refused from its header alone, and a full queue stops
 * the reading at the next frame. ws.c gathers the messages itself.
 */
#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <h2o.h>
#include <wslay/wslay.h>
#include "log.h"
#include "respond.h"
#include "ws.h"
#include "ws_frame.h"
#include "ws_handshake.h"
#include "ws_progress.h"

#define WS_WRITE_MAX 16384 /* bytes handed to the socket in one write */
#define WS_KEEP_BYTES 4096 /* a receive buffer up to this size is kept between messages */
/* From deciding a close to closing the socket, at most: room for the queue,
 * the close frame and the client's answer, and no more. */
#define WS_CLOSE_TIMEOUT_NS (2000 * 1000000ULL)

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

struct ws_conn {
    h2o_linklist_t link; /* in loop->conns until released */
    ws_loop_t *loop;
    const ws_handlers_t *h;
    const ws_route_t *route; /* its counters (route->slot) and name */
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
    uint64_t rx_left;           /* bytes of the frame being handed to wslay still to hand it */
    ws_frame_reader_t rx;       /* the frames judged so far: the limits, the open message */
    uint16_t client_code;       /* the code of the client's close frame */
    uint8_t *msg;               /* the data message being received */
    size_t msg_len, msg_cap;    /* its bytes so far, and room */
    char *wbuf;                 /* frames for the socket; one write in flight */
    size_t wlen;                /* bytes in wbuf (being written, or gathered) */
    traceparent_t trace;        /* the handshake's, for the log */
    journal_record_t handshake; /* with JOURNAL on: the handshake's record, each message's start */
    _Alignas(max_align_t) uint8_t data[]; /* the route's room */
};

static ws_stats_t *stats_of(ws_conn_t *c)
{
    return &c->loop->stats.route[c->route->slot];
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
        STAT_ADD(c->loop->stats.open[c->route->slot], 1);
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
            STAT_SUB(c->loop->stats.open[c->route->slot], 1);
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
    log_debug("ws %s: closed (%s) after %.3f s, %llu message(s) in%s%.*s", *c->route->label,
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
    switch (ws_frame_judge(&c->rx, &h)) {
    case WS_FRAME_OK:
        break;
    case WS_FRAME_PROTOCOL:
        ws_close(c, WS_CLOSE_PROTOCOL);
        return 0;
    case WS_FRAME_TOO_BIG:
        ws_close(c, WS_CLOSE_TOO_BIG);
        return 0;
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
        ws_report_journal(c->loop->journal, &c->handshake, JOURNAL_WS_IN, c->msg_len);
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

/* ---- a connection's start -------------------------------------------------------------------- */

/* A connection in its handshake, with its limits, handlers and route's room. */
static ws_conn_t *conn_new(ws_loop_t *w, const ws_route_t *route, const request_ws_limits_t *limits,
                           const ws_handlers_t *h, const void *data, size_t data_size)
{
    ws_conn_t *c = calloc(1, sizeof(*c) + data_size);
    if (c == NULL)
        abort(); /* out of memory: see the policy in main.c */
    assert(route->slot < WS_ROUTES_MAX);
    c->loop = w;
    c->h = h;
    c->route = route;
    c->state = WS_HANDSHAKE;
    c->limits = *limits;
    c->rx.max_fragment_bytes = limits->max_fragment_bytes;
    c->rx.max_message_bytes = limits->max_message_bytes;
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

ws_conn_t *ws_open(ws_loop_t *w, const ws_route_t *route, const request_ws_limits_t *limits,
                   const ws_handlers_t *h, const void *data, size_t data_size, h2o_socket_t *sock)
{
    return conn_start(conn_new(w, route, limits, h, data, data_size), sock);
}

int ws_accept(notesd_req_t *r, ws_loop_t *w, const ws_route_t *route,
              const request_ws_limits_t *limits, const ws_handlers_t *h, const void *data,
              size_t data_size)
{
    h2o_iovec_t key;

    if (ws_handshake_check(r, &key) != 0)
        return 0; /* answered: 426 or 400 */
    if (w->shutting_down) {
        respond_unavailable(r, "shutting down");
        return 0;
    }
    ws_conn_t *c = conn_new(w, route, limits, h, data, data_size);
    c->traced = (uint8_t)request_trace(r, &c->trace);
    if (w->journal != NULL) {
        request_journal_fill(r, stats_now_ns(), &c->handshake);
        c->handshake.status = 101;
    }
    ws_handshake_switch(r, key, on_upgraded, c);
    return 0;
}

/* ---- what routes call ------------------------------------------------------------------------ */

void ws_loop_init(ws_loop_t *w, timers_t *timers, journal_t *journal)
{
    memset(w, 0, sizeof(*w));
    h2o_linklist_init_anchor(&w->conns);
    w->timers = timers;
    w->journal = journal;
    ws_loop_stats_init(&w->stats);
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
        ws_report_journal(c->loop->journal, &c->handshake, JOURNAL_WS_OUT, len);
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
