/*
 * lag.h - the event-loop lag probe, measured as the seed measures it.
 *
 * A repeating timer of `interval_ms` on each loop; each tick records how late
 * it fired: max(0, now - last - interval), with CLOCK_MONOTONIC rather than the
 * loop's cached millisecond clock, on a timerfd rather than an h2o timeout.
 * Samples go into a cumulative histogram and into a window that the metrics
 * scrape reads and resets; with several loops, both are merged across loops.
 */
#ifndef NOTESD_LAG_H
#define NOTESD_LAG_H

#include <h2o.h>
#include "metrics.h"

typedef struct lag_window {
    uint64_t n;                           /* samples since the previous scrape */
    double min, max, mean, p50, p90, p99; /* seconds; 0 when n == 0 */
} lag_window_t;

/* On the loop's own thread, once. */
void lag_start(h2o_loop_t *loop, int interval_ms, int index);
void lag_stop(void);

/* Summarises every loop's samples since the previous call, and starts new windows. */
void lag_take_window(lag_window_t *out);

/* Adds every loop's cumulative histogram into `dst`. */
void lag_accumulate_histograms(histogram_t *dst);

#endif
