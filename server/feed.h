/*
 * feed.h - the schedule and the bytes of /ws/feed's messages.
 *
 * Owns the feed's truth: message k (1-based) of a feed at `rate` per second
 * is due (k - 1) / rate seconds after the connection opened, and is a JSON
 * text of exactly `size` bytes that carries k, the feed's count, the
 * server's wall clock when it was sent, and how late that was against the
 * schedule. A client that counts what it received, looks for gaps in k and
 * subtracts sent_us from its own clock can be judged against this. Pure
 * functions; the connection and the timer are routes_ws.c's.
 */
#ifndef NOTESD_FEED_H
#define NOTESD_FEED_H

#include <stddef.h>
#include <stdint.h>

/* The knobs' ranges (GET /ws/feed?rate=N&count=M&size=B); 400 beyond them. */
#define FEED_MAX_RATE 10000    /* messages per second */
#define FEED_MAX_COUNT 1000000 /* messages in one feed */
#define FEED_MIN_BYTES 128     /* room for every field at its longest */
#define FEED_MAX_BYTES 65536

/* When message `seq` (1-based) is due: start_ns + (seq - 1) * 1e9 / rate,
 * in whole nanoseconds, so the schedule never drifts. */
uint64_t feed_due_ns(uint64_t start_ns, uint32_t rate, uint64_t seq);

/* Writes message `seq` of `count` into `out`: exactly `size` bytes
 * (FEED_MIN_BYTES..FEED_MAX_BYTES), no NUL:
 * {"seq":S,"of":C,"sent_us":T,"late_us":L,"pad":"xx…"}
 * where T is the wall clock in microseconds since the epoch and L how many
 * microseconds after its due instant the message was sent (at most
 * 999999999); the pad makes up the size. Returns `size`. */
size_t feed_render(char *out, size_t size, uint64_t seq, uint64_t count, int64_t sent_us,
                   uint64_t late_us);

#endif
