/*
 * ws_report.c - the WebSocket connections' counters set up, added up and
 * written, and their messages' journal records (see ws_report.h).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "ws_report.h"

const char *const ws_close_labels[WS_CLOSE__COUNT] = {"client",   "done",           "idle_timeout",
                                                      "shutdown", "protocol_error", "message_limit",
                                                      "too_big",  "not_reading",    "abnormal"};

/* Seconds, 10 ms to an hour: how long connections live. */
static const double lifetime_bounds[] = {0.01, 0.1, 0.5, 1,   2.5, 5,    10,
                                         30,   60,  120, 300, 600, 1800, 3600};

void ws_loop_stats_init(ws_loop_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    for (size_t k = 0; k < WS_ROUTES_MAX; k++)
        histogram_init(&s->route[k].lifetime, lifetime_bounds,
                       sizeof(lifetime_bounds) / sizeof(lifetime_bounds[0]));
}

void ws_report_journal(journal_t *j, const journal_record_t *handshake, enum journal_kind kind,
                       size_t len)
{
    struct timespec wall;
    journal_record_t rec = *handshake;
    uint32_t bytes = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;

    clock_gettime(CLOCK_REALTIME, &wall);
    rec.kind = (uint8_t)kind;
    rec.arrived_us = rec.started_us = rec.ended_us =
        (int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000;
    rec.answer_us = 0;
    rec.bytes_in = kind == JOURNAL_WS_IN ? bytes : 0;
    rec.bytes_out = kind == JOURNAL_WS_OUT ? bytes : 0;
    journal_add(j, &rec);
}

/* ---- the metrics page's figures ---------------------------------------------------------- */

void ws_report_init(ws_report_t *r)
{
    ws_loop_stats_init(&r->all);
}

void ws_report_add(ws_report_t *r, const ws_loop_stats_t *s)
{
    for (size_t k = 0; k < WS_ROUTES_MAX; k++) {
        const ws_stats_t *st = &s->route[k];
        ws_stats_t *all = &r->all.route[k];
        r->all.open[k] += STAT_READ(s->open[k]);
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

void ws_report_write(const ws_report_t *r, exposition_t *o, const ws_route_t *routes,
                     size_t nroutes)
{
    const ws_stats_t *all = r->all.route;
    const char *path;

    exposition_family(o, "notes_ws_connections", "gauge",
                      "WebSocket connections open now (past the 101, not yet closed), by route.");
    for (size_t k = 0; k < nroutes; k++)
        exposition_printf(o, "notes_ws_connections{path=\"%s\"} %zu\n", *routes[k].label,
                          r->all.open[routes[k].slot]);
    exposition_family(o, "notes_ws_connections_opened_total", "counter",
                      "WebSocket connections opened (101 written), by route.");
    for (size_t k = 0; k < nroutes; k++)
        exposition_printf(o, "notes_ws_connections_opened_total{path=\"%s\"} %llu\n",
                          *routes[k].label, (unsigned long long)all[routes[k].slot].opened);
    exposition_family(o, "notes_ws_messages_total", "counter",
                      "WebSocket data messages: received whole from clients, and queued to be "
                      "sent.");
    for (size_t k = 0; k < nroutes; k++) {
        const ws_stats_t *st = &all[routes[k].slot];
        path = *routes[k].label;
        exposition_printf(o,
                          "notes_ws_messages_total{path=\"%s\",direction=\"received\"} %llu\n"
                          "notes_ws_messages_total{path=\"%s\",direction=\"sent\"} %llu\n",
                          path, (unsigned long long)st->messages_in, path,
                          (unsigned long long)st->messages_out);
    }
    exposition_family(o, "notes_ws_message_bytes_total", "counter",
                      "Payload bytes of those WebSocket messages (frame headers not counted).");
    for (size_t k = 0; k < nroutes; k++) {
        const ws_stats_t *st = &all[routes[k].slot];
        path = *routes[k].label;
        exposition_printf(o,
                          "notes_ws_message_bytes_total{path=\"%s\",direction=\"received\"} %llu\n"
                          "notes_ws_message_bytes_total{path=\"%s\",direction=\"sent\"} %llu\n",
                          path, (unsigned long long)st->bytes_in, path,
                          (unsigned long long)st->bytes_out);
    }
    exposition_family(o, "notes_ws_messages_skipped_total", "counter",
                      "Messages a route left out because the client was not reading (the feed's "
                      "gaps).");
    for (size_t k = 0; k < nroutes; k++)
        exposition_printf(o, "notes_ws_messages_skipped_total{path=\"%s\"} %llu\n",
                          *routes[k].label, (unsigned long long)all[routes[k].slot].skipped);
    exposition_family(o, "notes_ws_closes_total", "counter",
                      "WebSocket connections ended, by reason.");
    for (size_t k = 0; k < nroutes; k++)
        for (size_t c = 0; c < WS_CLOSE__COUNT; c++)
            exposition_printf(o, "notes_ws_closes_total{path=\"%s\",reason=\"%s\"} %llu\n",
                              *routes[k].label, ws_close_labels[c],
                              (unsigned long long)all[routes[k].slot].closes[c]);
    exposition_family(o, "notes_ws_connection_duration_seconds", "histogram",
                      "Seconds from the 101 being written to the WebSocket's socket closing.");
    for (size_t k = 0; k < nroutes; k++) {
        char labels[128];
        snprintf(labels, sizeof(labels), "path=\"%s\",", *routes[k].label);
        exposition_histogram(o, "notes_ws_connection_duration_seconds", labels,
                             &all[routes[k].slot].lifetime, NULL);
    }
}
