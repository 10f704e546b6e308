/*
 * sse.h - Server-Sent Events as GET /sse sends them: the bytes of an event,
 * and when each event is due. (The Last-Event-ID a reconnecting client sends
 * is a whole number, read by validate.h's parser of numbers.)
 *
 * Owns the event format (the WHATWG HTML standard's "text/event-stream"):
 *
 *     id: K
 *     data: {"id":K,"of":C,"sent_us":T}
 *     (an empty line)
 *
 * K counts from 1 to C, the stream's count; T is the server's wall clock,
 * microseconds since the epoch, when the event was handed to h2o. Every
 * field is ASCII digits, so an event's length follows from them
 * (sse_event_len). Pure functions; the stream and its timer are
 * routes_stream.c's.
 */
#ifndef NOTESD_SSE_H
#define NOTESD_SSE_H

#include <stddef.h>
#include <stdint.h>

#define SSE_MAX_COUNT 100000 /* events in one stream (?count=) */
#define SSE_EVENT_MAX 128    /* longest event, in bytes */

/* Writes event `id` of `count` sent at `sent_us` into `out` (SSE_EVENT_MAX
 * bytes of room); returns its length. */
size_t sse_event(char *out, uint64_t id, uint64_t count, int64_t sent_us);

/* The length sse_event gives for these values. */
size_t sse_event_len(uint64_t id, uint64_t count, int64_t sent_us);

/* When the event after one due at `prev_ns` is due, the `k`th (1-based) after
 * the stream's first event at `start_ns`: its nominal instant start + k *
 * delay, moved by (2u - 1) * jitter (u uniform in [0, 1)), and never before
 * `prev_ns`, so events stay in order and the schedule does not drift. */
uint64_t sse_due_ns(uint64_t start_ns, uint64_t prev_ns, uint64_t k, uint64_t delay_ns,
                    uint64_t jitter_ns, double u);

#endif
