/*
 * ws.h - WebSocket connections (RFC 6455) after their handshake: the frames
 * moved between the socket and wslay, the limits, the closing handshake.
 *
 * Owns ws_conn_t and its state machine, and each loop's ws_loop_t: the list
 * of its connections (for the shutdown) and their counters (for the metrics
 * page). The frames are wslay's (libwslay), driven by ws.c over the socket
 * h2o hands over after the 101 (h2o_http1_upgrade), not by h2o's own
 * WebSocket glue, which reads as fast as the client writes and queues
 * without bound. Here every frame's header is judged before wslay sees it
 * (ws_frame.h), and a connection stops reading while its queue is full: more
 * than max_message_bytes waiting to go out, counting what each queued frame
 * costs beyond its payload, so a client that writes and never reads costs a
 * bounded amount of memory, however small its frames. The handshake is
 * ws_handshake.h's, the counters' families and journal records ws_report.h's.
 * What a connection does with messages (send them back, send its own), and
 * which route it belongs to (ws_route_t), is its route module's (routes_ws.c,
 * through ws_handlers_t): ws.c names no route.
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
#include "request.h"
#include "stats.h"
#include "timers.h"
#include "ws_report.h"

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

/* One loop's WebSocket connections. */
typedef struct ws_loop {
    h2o_linklist_t conns;  /* every ws_conn_t not yet closed, for the shutdown */
    timers_t *timers;      /* the loop's: idle and close deadlines, routes' schedules */
    journal_t *journal;    /* the loop's request journal (a record per message); NULL: off */
    int shutting_down;     /* 1 after ws_shutdown: new handshakes get 503 */
    ws_loop_stats_t stats; /* its routes' counters, the open gauge among them, a slot each */
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

/* Answers a GET to a WebSocket route (`route`: its counters and name): a
 * valid RFC 6455 handshake gets 101 and a connection with `limits` (copied),
 * driven by `h`, with `data_size` bytes of room for the route (ws_data), a
 * copy of `data` (zeroed when it is NULL); anything else gets the 4xx that
 * says why (ws_handshake_check), and 503 during the shutdown. Returns 0
 * (answered, one way or the other). Ownership: the connection is ws.c's,
 * allocated here and freed after h->on_close; `route` and `h` must outlive
 * it (they are static). */
int ws_accept(notesd_req_t *r, ws_loop_t *w, const ws_route_t *route,
              const request_ws_limits_t *limits, const ws_handlers_t *h, const void *data,
              size_t data_size);

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
 * plus WS_FRAME_COST for each (a pong, a route's message, a close). */
size_t ws_queued_bytes(const ws_conn_t *c);

/* 1 while the queue is full: ws_queued_bytes over max_message_bytes, so the
 * client is not reading, or more slowly than the queue fills. The connection
 * then stops reading (its client's writes wait in TCP), and is closed with
 * 1008 once its client's TCP has shown no reading for idle_timeout_ms
 * (ws_progress.h); a route sending on a schedule skips a message (ws_skip). */
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
ws_conn_t *ws_open(ws_loop_t *w, const ws_route_t *route, const request_ws_limits_t *limits,
                   const ws_handlers_t *h, const void *data, size_t data_size, h2o_socket_t *sock);

#endif
