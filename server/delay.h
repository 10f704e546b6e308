/*
 * delay.h - the loop's request timers, and GET /delay/:ms[?jitter=J], which
 * answers after a known delay, for checking the latency figures of load tools.
 *
 * Owns a min-heap of request deadlines and one timerfd on the loop, armed for
 * the earliest one (CLOCK_MONOTONIC, nanoseconds), so waits of any length are
 * precise to the loop's wake-up, and nothing ever sleeps. /delay answers from
 * it; the fixture routes (routes_fixture.c) time their delayed answers and
 * their drips with it. The handler, delay_get, is a row of the route table.
 */
#ifndef NOTESD_DELAY_H
#define NOTESD_DELAY_H

#include <h2o.h>
#include "request.h"

/* Longest delay, and most request timers pending on one loop (/delay, /fault's
 * delay_ms and /drip together); beyond them: 400 and 503. */
#define DELAY_MAX_MS 60000
#define DELAY_MAX_PENDING 65536

/* Calls on_due(r) on this loop at `due_ns` (stats_now_ns's clock), unless the
 * timer is cancelled first. Returns 0, or -1 when DELAY_MAX_PENDING timers are
 * pending (the caller answers 503). The request's dispose hook must call
 * delay_timer_cancel: the heap points at the request until the timer fires. */
NOTESD_MUSTCHECK int delay_timer_arm(notesd_req_t *r, uint64_t due_ns,
                                     void (*on_due)(notesd_req_t *r));
/* Removes r's timer from the heap, if armed. */
void delay_timer_cancel(notesd_req_t *r);

/* Opens the timerfd; call once the loop exists. */
void delay_start(h2o_loop_t *loop);
void delay_stop(void);

/* Draws a delay in microseconds: `ms` plus a uniform offset in [-jitter, +jitter]
 * milliseconds, never below 0. `u` is uniform in [0, 1). */
int64_t delay_draw_us(long ms, long jitter_ms, double u);

#endif
