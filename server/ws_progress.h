/*
 * ws_progress.h - whether a WebSocket client reads, as its TCP connection shows it.
 *
 * Owns the judgement ws.c makes of a connection whose queue is full: is the
 * client reading, only more slowly than its queue fills, or not at all? The
 * server never sees a client's reads, only what the client's kernel reports
 * of them: the room its reading made in its receive buffer, which it
 * advertises (the window), and which our kernel then fills and has
 * acknowledged. Both come in steps the client's kernel chooses: a window it
 * has shut is reopened only once whole received segments are freed and at
 * least one segment's worth and a sixteenth of its receive buffer are free
 * (RFC 1122's silly window avoidance, as Linux does it), so a slow reader
 * shows its reading in steps of up to its whole receive buffer
 * (docs/decisions.md, "WebSockets", says what notesd promises because of it;
 * test_ws.py holds a slow steady reader to that promise). TCP only: any
 * other socket shows nothing.
 * Knows nothing of frames or of h2o.
 */
#ifndef NOTESD_WS_PROGRESS_H
#define NOTESD_WS_PROGRESS_H

#include <stdint.h>

/* What one look at a connection shows (its TCP_INFO). */
typedef struct ws_progress {
    uint64_t acked;     /* bytes of ours the client's kernel has acknowledged */
    uint32_t window;    /* the receive window it advertises */
    uint32_t in_flight; /* our segments sent and not acknowledged yet */
} ws_progress_t;

/* On a new connection's socket: our kernel takes no more bytes once about
 * `unsent` of them wait unsent (TCP_NOTSENT_LOWAT; it still fills the segment
 * it is building), where it would take megabytes (tcp_wmem) from a client
 * that reads slowly. The rest waits in the connection's queue, where the
 * route sees that it is full. Does nothing to a socket that is not TCP. */
void ws_progress_start(int fd, int unsent);

/* The first look, when the queue has filled up. */
void ws_progress_mark(ws_progress_t *p, int fd);

/* 1 when the client has shown reading since the last look (see
 * ws_progress_shown); 0 when not, and on a socket that is not TCP. Takes the
 * next look. */
int ws_progress_seen(ws_progress_t *p, int fd);

/* The rule: between two looks a client has read when its kernel moved the
 * right edge of its window (took or offered bytes beyond what it offered
 * before), or when it offers room that ours has not filled yet (an open
 * window with nothing in flight). Pure. */
int ws_progress_shown(const ws_progress_t *before, const ws_progress_t *now);

#endif
