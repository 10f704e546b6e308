/*
 * ws_report.h - what the WebSocket connections report: their counters, the
 * notes_ws_* families of the metrics page, and a record of the request
 * journal per data message.
 *
 * Owns ws_stats_t (one route's figures on one loop), ws_loop_stats_t (a
 * loop's, a slot per route), the reasons a connection ends, and ws_route_t:
 * how a route module (routes_ws.c) names a route to ws.c, so that neither
 * ws.c nor this file names one. The counters are written by their loop's
 * thread only (STAT_ADD, in ws.c); the metrics page adds up every loop's
 * (STAT_READ) from its own thread.
 */
#ifndef NOTESD_WS_REPORT_H
#define NOTESD_WS_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include "exposition.h"
#include "journal.h"
#include "stats.h"

/* Most WebSocket routes; each counts in a slot of its own. */
#define WS_ROUTES_MAX 4

/* A WebSocket route as ws.c knows it, declared by its route module: where
 * its connections are counted, and under what name. */
typedef struct ws_route {
    /* Its row's label in the route table (routes.h), where the name is kept
     * once: the `path` label of its series, and the log's. */
    const char *const *label;
    /* Its counters on every loop, ws_loop_stats_t's [slot]: below
     * WS_ROUTES_MAX, and every route's its own. */
    uint8_t slot;
} ws_route_t;

/* Why a connection ended: the label of notes_ws_closes_total, and the close
 * code notesd sends. The first reason decided is the one counted. */
enum ws_close_reason {
    WS_CLOSE_CLIENT,        /* the client sent a close frame; notesd answers with its code */
    WS_CLOSE_DONE,          /* 1000: the route's work is done (its last message sent) */
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

/* Cumulative figures of one route on one loop; they only ever increase. */
typedef struct ws_stats {
    uint64_t opened;                  /* connections upgraded (101 written) */
    uint64_t messages_in, bytes_in;   /* data messages received whole, and their payload */
    uint64_t messages_out, bytes_out; /* data messages queued to be sent, and their payload */
    uint64_t skipped;                 /* messages a route left out: the client's queue was
                                         full (gaps in a route's schedule) */
    uint64_t closes[WS_CLOSE__COUNT]; /* connections ended, by reason */
    histogram_t lifetime;             /* seconds from the 101 to the socket's close */
} ws_stats_t;

/* One loop's figures, a slot per route (ws_route_t.slot). */
typedef struct ws_loop_stats {
    ws_stats_t route[WS_ROUTES_MAX];
    size_t open[WS_ROUTES_MAX]; /* connections past the handshake, not yet closed (a gauge) */
} ws_loop_stats_t;

/* Zeroes a loop's figures and sets up their histograms; before its thread starts. */
void ws_loop_stats_init(ws_loop_stats_t *s);

/* Records one data message in the loop's journal: its handshake's record
 * (request_journal_fill, status 101) with the message's kind (JOURNAL_WS_IN:
 * received whole; JOURNAL_WS_OUT: queued), its payload `len` in bytes_in or
 * bytes_out, and now as its three times. */
void ws_report_journal(journal_t *j, const journal_record_t *handshake, enum journal_kind kind,
                       size_t len);

/* ---- the metrics page's figures ---------------------------------------------------------- */

/* Every loop's WebSocket figures, added up, per route slot. */
typedef struct ws_report {
    ws_loop_stats_t all;
} ws_report_t;

void ws_report_init(ws_report_t *r);

/* Adds one loop's figures; from any thread. */
void ws_report_add(ws_report_t *r, const ws_loop_stats_t *s);

/* Writes the notes_ws_* families: for each family, a series per route of
 * `routes`, in their order. */
void ws_report_write(const ws_report_t *r, exposition_t *o, const ws_route_t *routes,
                     size_t nroutes);

#endif
