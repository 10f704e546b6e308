/*
 * ws.h - WebSocket connections (RFC 6455): the handshake, the frames, the
 * limits, the closing handshake, and what every connection counts.
 *
 * Owns ws_conn_t and its state machine, and each loop's ws_loop_t: the list
 * of its connections (for the shutdown) and their counters (for the metrics
 * page). The frames are wslay's (libwslay), driven by ws.c over the socket
 * h2o hands over after the 101 (h2o_http1_upgrade), not by h2o's own
 * WebSocket glue, which reads as fast as the client writes and queues
 * without bound. Here every frame's header is checked before wslay sees it,
 * and a connection stops reading while its queue is full: more than
 * max_message_bytes waiting to go out, counting what each queued frame costs
 * beyond its payload, so a client that writes and never reads costs a bounded
 * amount of memory, however small its frames. What a connection does with messages
 * (echo them, send a feed) is its route's: routes_ws.c, through
 * ws_handlers_t.
 *
 * The handshake request is an ordinary request of its route: answered 101
 * (or 4xx), counted in http_requests_total with that status, its duration
 * the time until the 101 is written. The connection's life after that is
 * measured here, never in http_request_duration_seconds.
 *
 * One loop's connections are used by that loop's thread only; the counters
 * are read by the metrics page (STAT_READ).
 */
#ifndef NOTESD_WS_H
#define NOTESD_WS_H

#include <h2o.h>
#include "compiler.h"
#include "exposition.h"
#include "request.h"
#include "stats.h"
#include "timers.h"

/* The WebSocket routes, each with its counters. */
enum ws_kind {
    WS_ECHO, /* GET /ws/echo */
    WS_FEED, /* GET /ws/feed */
    WS_KIND__COUNT,
};

/* Their routes' templates (routes.h), the `path` label of the metrics. */
extern const char *const ws_kind_labels[WS_KIND__COUNT];

/* A connection's life; ws_set_state (ws.c) is the only writer, and asserts
 * the edge (server/diagrams/ws-states.dot draws them). */
enum ws_state {
    WS_HANDSHAKE, /* the 101 is being written; h2o still owns the socket */
    WS_OPEN,      /* messages both ways */
    WS_CLOSING,   /* a close is decided: nothing more is read or queued; what was queued goes
                     out, then the close frame */
    WS_DRAINING,  /* our close frame is written and our side shut: what the client still sends
                     is read and dropped until it closes, or the close deadline */
    WS_CLOSED,    /* the socket is closed; the memory goes */
};

/* Why a connection ended: the label of notes_ws_closes_total, and the close
 * code notesd sends. The first reason decided is the one counted. */
enum ws_close_reason {
    WS_CLOSE_CLIENT,        /* the client sent a close frame; notesd answers with its code */
    WS_CLOSE_DONE,          /* 1000: the route's work is done (the feed's last message) */
    WS_CLOSE_IDLE,          /* 1001: nothing received or written for the idle timeout */
    WS_CLOSE_SHUTDOWN,      /* 1001: the server is stopping */
    WS_CLOSE_PROTOCOL,      /* 1002: a frame RFC 6455 forbids (from its header, or wslay's
                               1002 for a close code it forbids); 1007 (wslay's): a text
                               message that is not UTF-8 */
    WS_CLOSE_MESSAGE_LIMIT, /* 1008: a message past max_messages */
    WS_CLOSE_TOO_BIG,       /* 1009: a frame past max_fragment_bytes, a message past
                               max_message_bytes, from the frame's header */
    WS_CLOSE_NOT_READING,   /* 1008: the queue was full and the client's TCP showed no reading
                               for idle_timeout_ms (ws_progress.h) */
    WS_CLOSE_ABNORMAL,      /* no close decided: the connection broke or the client left */
    WS_CLOSE__COUNT,
};

extern const char *const ws_close_labels[WS_CLOSE__COUNT];

/* Cumulative figures of one route on one loop; they only ever increase.
 * Written by the loop's thread (STAT_ADD), read by the metrics page. */
typedef struct ws_stats {
    uint64_t opened;                  /* connections upgraded (101 written) */
    uint64_t messages_in, bytes_in;   /* data messages received whole, and their payload */
    uint64_t messages_out, bytes_out; /* data messages queued to be sent, and their payload */
    uint64_t skipped;                 /* messages a route left out: the client's queue was
                                         full (the feed's gaps) */
    uint64_t closes[WS_CLOSE__COUNT]; /* connections ended, by reason */
    histogram_t lifetime;             /* seconds from the 101 to the socket's close */
} ws_stats_t;

/* One loop's WebSocket connections. */
typedef struct ws_loop {
    h2o_linklist_t conns;        /* every ws_conn_t not yet closed, for the shutdown */
    size_t open[WS_KIND__COUNT]; /* of them, those past the handshake (a gauge) */
    timers_t *timers;            /* the loop's: idle and close deadlines, routes' schedules */
    journal_t *journal;          /* the loop's request journal (a record per message); NULL: off */
    int shutting_down;           /* 1 after ws_shutdown: new handshakes get 503 */
    ws_stats_t stats[WS_KIND__COUNT];
} ws_loop_t;

typedef struct ws_conn ws_conn_t;

/* What a route does with its connections. Each is called from ws.c on the
 * loop's thread; none may free or close the connection itself (ws_close
 * asks for it). */
typedef struct ws_handlers {
    void (*on_open)(ws_conn_t *c); /* the 101 is written: messages may be sent */
    /* A whole data message from the client (text unless `binary`); `msg` is
     * ws.c's until the call returns. */
    void (*on_message)(ws_conn_t *c, int binary, const uint8_t *msg, size_t len);
    void (*on_close)(ws_conn_t *c); /* the last call: nothing may refer to c afterwards */
} ws_handlers_t;

/* In loops_init, before any thread starts; `journal` NULL when JOURNAL is off. */
void ws_loop_init(ws_loop_t *w, timers_t *timers, journal_t *journal);

/* Answers a GET to a WebSocket route: a valid RFC 6455 handshake over
 * HTTP/1.1 gets 101 and a connection with `limits` (copied), driven by `h`,
 * with `data_size` bytes of room for the route (ws_data), a copy of `data`
 * (zeroed when it is NULL); anything
 * else gets the 4xx that says why (426 with Upgrade: websocket to a request
 * that is not a handshake, 426 with Sec-WebSocket-Version: 13 to another
 * version, 400 to a bad key or to HTTP/2 and HTTP/1.0, which h2o 2.2.5
 * cannot upgrade), and 503 during the shutdown. Returns 0 (answered, one way
 * or the other). Ownership: the connection is ws.c's, allocated here and
 * freed after h->on_close. */
int ws_accept(notesd_req_t *r, ws_loop_t *w, enum ws_kind kind, const request_ws_limits_t *limits,
              const ws_handlers_t *h, const void *data, size_t data_size);

/* The route's room in the connection. */
void *ws_data(ws_conn_t *c);

/* The connection's limits (the route may read them; they are fixed at the handshake). */
const request_ws_limits_t *ws_limits(const ws_conn_t *c);

/* Queues one data message (text unless `binary`; copied). Returns 0, or -1
 * when the connection no longer sends (closing). */
NOTESD_MUSTCHECK int ws_send(ws_conn_t *c, int binary, const void *msg, size_t len);

/* What a queued frame costs beyond its payload, rounded up: wslay's message
 * (40 bytes) and queue cell (16), and the copy of its payload, each a malloc
 * chunk (glibc on 64 bits: 80 bytes in all for an empty frame, 112 with one
 * byte of payload, at most payload + 103). */
#define WS_FRAME_COST 128

/* What waits to go out to the client: the payload of every queued frame
 * plus WS_FRAME_COST for each (a pong, an echo, a feed message, a close). */
size_t ws_queued_bytes(const ws_conn_t *c);

/* 1 while the queue is full: ws_queued_bytes over max_message_bytes, so the
 * client is not reading, or more slowly than the queue fills. The connection
 * then stops reading (its client's writes wait in TCP), and is closed with
 * 1008 once its client's TCP has shown no reading for idle_timeout_ms
 * (ws_progress.h); the feed skips a message (ws_skip). */
int ws_is_backed_up(const ws_conn_t *c);

/* Counts one message the route left out (notes_ws_messages_skipped_total). */
void ws_skip(ws_conn_t *c);

/* Closes the connection for `reason` (not WS_CLOSE_CLIENT or _ABNORMAL):
 * nothing more is read or queued; what is queued goes out first, then the
 * close frame with the reason's code. Does nothing once a close is under way. */
void ws_close(ws_conn_t *c, enum ws_close_reason reason);

/* Calls cb(c) at `due_ns` (stats_now_ns's clock) on the loop's timers, for a
 * route's own schedule; unless the connection ends first. One per connection:
 * arming it again moves it. */
void ws_timer_arm(ws_conn_t *c, uint64_t due_ns, void (*cb)(ws_conn_t *c));

/* When the connection opened (the 101 written), stats_now_ns's clock. */
uint64_t ws_opened_ns(const ws_conn_t *c);

/* On SIGTERM: every connection gets a close with 1001 (after what is
 * queued), and new handshakes get 503. */
void ws_shutdown(ws_loop_t *w);

/* 1 once every connection of the loop has closed. */
int ws_is_empty(const ws_loop_t *w);

/* Starts a connection over `sock`, a socket whose handshake is done, as
 * ws_accept does once h2o has written the 101 (the unit tests hand it one end
 * of a socketpair). The connection owns the socket from here, and closes it.
 * Returns the connection, which lives until after h->on_close, or NULL when
 * it ended at once (a shutdown under way). */
ws_conn_t *ws_open(ws_loop_t *w, enum ws_kind kind, const request_ws_limits_t *limits,
                   const ws_handlers_t *h, const void *data, size_t data_size, h2o_socket_t *sock);

/* ---- the metrics page's figures ---------------------------------------------------------- */

/* Every loop's WebSocket figures, added up, per route. */
typedef struct ws_report {
    ws_stats_t all[WS_KIND__COUNT];
    size_t open[WS_KIND__COUNT];
} ws_report_t;

void ws_report_init(ws_report_t *r);

/* Adds one loop's figures; from any thread. */
void ws_report_add(ws_report_t *r, const ws_loop_t *w);

/* Writes the notes_ws_* families. */
void ws_report_write(const ws_report_t *r, exposition_t *o);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (24 characters): base64 of
 * the SHA-1 of the key and RFC 6455's GUID; 28 characters, no NUL. */
void ws_accept_key(const char key[24], char out[28]);

/* ---- a frame's header, read before wslay sees the frame -------------------------------------- */

/* What a frame's header declares (RFC 6455 section 5.2). */
typedef struct ws_frame_head {
    uint8_t fin, rsv, opcode, masked;
    uint8_t length_bytes;    /* the extended length: 0, 2 (126) or 8 (127) */
    uint64_t payload_length; /* as declared, the top bit included */
} ws_frame_head_t;

/* Reads the header at the start of `p` (`n` bytes): returns its length (2 to
 * 14 bytes, the masking key included) and fills *h, or 0 while it is not all
 * there. Reads the bytes only: ws_frame_check judges them. */
size_t ws_frame_head_read(const uint8_t *p, size_t n, ws_frame_head_t *h);

enum ws_frame_verdict {
    WS_FRAME_OK,
    WS_FRAME_PROTOCOL, /* RFC 6455 forbids it: close 1002 */
    WS_FRAME_TOO_BIG,  /* past a limit: close 1009 */
};

/* Judges a frame from a client by its header alone, before any of its
 * payload: RSV bits without an extension, a reserved opcode, no mask, a
 * length not in its shortest form or with its top bit set, a control frame
 * that is fragmented or over 125 bytes, a close frame with a 1-byte body, a
 * continuation with no message open or a new message while one is: 1002. A
 * data frame over max_fragment_bytes, or that takes its message over
 * max_message_bytes: 1009. `in_message`: a data message's last frame has not
 * come yet; `message_len`: its frames' payload so far. */
enum ws_frame_verdict ws_frame_check(const ws_frame_head_t *h, int in_message, uint64_t message_len,
                                     const request_ws_limits_t *limits);

#endif
