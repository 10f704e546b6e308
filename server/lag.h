/*
 * lag.h - the event-loop lag probe, measured as the seed measures it.
 *
 * A repeating timer of `interval_ms` on each loop; each tick records how late
 * it fired: max(0, now - last - interval), with CLOCK_MONOTONIC rather than the
 * loop's cached millisecond clock, on the loop's timer service (timers.h)
 * rather than an h2o timeout.
 * Samples go into a cumulative histogram and into a window that the metrics
 * page drains on each scrape (lag_report_add), every loop's merged.
 */
#ifndef NOTESD_LAG_H
#define NOTESD_LAG_H

#include <pthread.h>
#include <h2o.h>
#include "exposition.h"
#include "stats.h"
#include "timers.h"

/* Samples one probe keeps between scrapes (about 7 minutes at 100 ms); if
 * scrapes stop for longer, the newest are kept, so memory stays fixed. */
#define LAG_WINDOW_MAX 4096

/* One loop's probe. Allocated and initialised with the loop, in main, before any
 * thread starts (lag_init); the loop's thread then ticks it, the metrics page
 * reads it. The window is the one thing two threads change, so it has a mutex;
 * ten ticks a second make that free. */
typedef struct lag_probe {
    timer_entry_t tick; /* the next tick, on the loop's timers from lag_start on */
    timers_t *timers;   /* the loop's; NULL until lag_start */
    uint64_t last_ns, interval_ns;
    histogram_t histogram;
    pthread_mutex_t lock; /* guards window, window_len, window_next */
    double window[LAG_WINDOW_MAX];
    size_t window_len, window_next;
} lag_probe_t;

typedef struct lag_window {
    uint64_t n;                           /* samples since the previous scrape */
    double min, max, mean, p50, p90, p99; /* seconds; 0 when n == 0 */
} lag_window_t;

/* In main, before the loop's thread exists. */
void lag_init(lag_probe_t *probe, int interval_ms);
/* On the loop's own thread, once its timers run: the first tick is due one
 * interval from now. lag_stop takes the next tick back. */
void lag_start(lag_probe_t *probe, timers_t *timers);
void lag_stop(lag_probe_t *probe);

/* Moves the probe's window into samples[*n ..] (at most `cap` in all) and
 * starts a new window. */
void lag_drain(lag_probe_t *probe, double *samples, size_t *n, size_t cap);

/* Summarises samples (sorts them in place). */
void lag_summarise(double *samples, size_t n, lag_window_t *out);

/* ---- the metrics page's figures ---------------------------------------------------------- */

/* Every loop's probe: the histograms merged, the windows drained into one. */
typedef struct lag_report {
    histogram_t all;
    double samples[LAG_WINDOW_MAX];
    size_t n;
} lag_report_t;

void lag_report_init(lag_report_t *r);

/* Adds one probe: its histogram, and its window, which it empties (so each
 * sample reaches one scrape). From any thread. */
void lag_report_add(lag_report_t *r, lag_probe_t *probe);

/* Writes notes_eventloop_delay_seconds and the window's notes_eventloop_lag_*_seconds. */
void lag_report_write(lag_report_t *r, exposition_t *o);

#endif
