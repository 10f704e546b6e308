/*
 * routes_fixture.h - routes whose truth is exact, for checking load tools:
 * GET /fault/:status (a status every Nth request, a delay, a reset or a
 * truncated body), GET /bytes/:n and GET /drip (streamed bodies of a known
 * pattern and pace) and GET /stall (a schedule of pauses of the whole loop).
 *
 * Owns the per-loop /fault counters and /stall schedule, and the pattern every
 * streamed body is cut from. Bodies are sent in chunks of at most
 * FIXTURE_CHUNK bytes with h2o's generator (each chunk after h2o asks for the
 * next one), straight from one read-only pattern, so no request holds its body
 * in memory. Delays and drips wait on request timers (request_timer_arm), and
 * the /stall schedule on an entry of the loop's timers (timers.h).
 */
#ifndef NOTESD_ROUTES_FIXTURE_H
#define NOTESD_ROUTES_FIXTURE_H

/* The limits of every knob; beyond them a request gets 400 naming the knob. */
#define FIXTURE_CHUNK 16384                /* largest piece of a body handed to h2o at once */
#define FIXTURE_MAX_BYTES (100L << 20)     /* /bytes/:n: 100 MiB */
#define FIXTURE_DRIP_MAX_BYTES (10L << 20) /* /drip?bytes=: 10 MiB */
#define FIXTURE_DRIP_MAX_MS 60000          /* /drip?duration_ms= */
#define FIXTURE_DRIP_TICK_MS 10            /* /drip sends at most one chunk per 10 ms */
#define FIXTURE_FAULT_MAX_EVERY 1000000    /* /fault?every= */
#define FIXTURE_FAULT_MAX_SCHEDULES 256    /* distinct (status, every) counters per loop */
#define FIXTURE_STALL_MAX_MS 1000          /* /stall?ms= */
#define FIXTURE_STALL_MAX_FOR_MS 60000     /* /stall?for_ms= */
#define FIXTURE_STALL_MAX_EVERY_MS 60000   /* /stall?every_ms= */

/* Byte i of every /bytes and /drip body is i % FIXTURE_PATTERN_PERIOD. The
 * period is a prime, so chunk boundaries fall at a different phase each time
 * and a lost or repeated chunk shows in the bytes, not only in the length. */
#define FIXTURE_PATTERN_PERIOD 251

#endif
