/*
 * delay.h - GET /delay/:ms[?jitter=J]: answers after a known delay, for
 * checking the latency figures of load tools.
 *
 * Owns a min-heap of pending answers and one timerfd on the loop, armed for the
 * earliest deadline (CLOCK_MONOTONIC, nanoseconds), so delays of any length are
 * precise to the loop's wake-up, and nothing ever sleeps. The handler,
 * delay_get, is a row of the route table (routes.h).
 */
#ifndef NOTESD_DELAY_H
#define NOTESD_DELAY_H

#include <h2o.h>

/* Longest delay and most pending /delay requests; beyond them: 400 and 503. */
#define DELAY_MAX_MS 60000
#define DELAY_MAX_PENDING 65536

/* Opens the timerfd; call once the loop exists. */
void delay_start(h2o_loop_t *loop);
void delay_stop(void);

/* Draws a delay in microseconds: `ms` plus a uniform offset in [-jitter, +jitter]
 * milliseconds, never below 0. `u` is uniform in [0, 1). */
int64_t delay_draw_us(long ms, long jitter_ms, double u);

#endif
