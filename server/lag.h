/*
 * lag.h - the event-loop lag probe, measured as the seed measures it.
 *
 * A repeating timer of `interval_ms` on each loop; each tick records how late
 * it fired: max(0, now - last - interval), with CLOCK_MONOTONIC rather than the
 * loop's cached millisecond clock, on the loop's timer service (timers.h)
 * rather than an h2o timeout.
 * Samples go into a cumulative histogram and into a ring of the newest ones.
 * The metrics page's window gauges summarise, for each reader, the samples
 * since that reader's previous scrape (lag_report_add): each probe remembers
 * how far the last LAG_READERS readers have read, so Prometheus and the
 * status page do not take each other's samples.
 */
#ifndef NOTESD_LAG_H
#define NOTESD_LAG_H

#include <pthread.h>
#include <h2o.h>
#include "exposition.h"
#include "stats.h"
#include "timers.h"

/* Samples one probe keeps (about 7 minutes at 100 ms); a reader that scrapes
 * less often gets the newest ones, so memory stays fixed. */
#define LAG_WINDOW_MAX 4096

/* Readers a probe tells apart (a reader: a client address and User-Agent);
 * past them, the one that read least recently is forgotten. */
#define LAG_READERS 8

/* How far one reader has read a probe. */
typedef struct lag_reader {
    uint64_t key;  /* lag_reader_key's; 0: a free slot */
    uint64_t seen; /* the probe's `taken` when it last read */
    uint64_t read_ns;
} lag_reader_t;

/* One loop's probe. Allocated and initialised with the loop, in main, before any
 * thread starts (lag_init); the loop's thread then ticks it, the metrics page
 * reads it. The ring and the readers are what two threads change, so they
 * have a mutex; ten ticks a second make that free. */
typedef struct lag_probe {
    timer_entry_t tick; /* the next tick, on the loop's timers from lag_start on */
    timers_t *timers;   /* the loop's; NULL until lag_start */
    uint64_t last_ns, interval_ns;
    histogram_t histogram;
    pthread_mutex_t lock;          /* guards window, taken and readers */
    double window[LAG_WINDOW_MAX]; /* sample i is window[i % LAG_WINDOW_MAX] */
    uint64_t taken;                /* samples taken so far */
    lag_reader_t readers[LAG_READERS];
} lag_probe_t;

typedef struct lag_window {
    uint64_t n;                           /* samples since the reader's previous scrape */
    double min, max, mean, p50, p90, p99; /* seconds; 0 when n == 0 */
} lag_window_t;

/* In main, before the loop's thread exists. */
void lag_init(lag_probe_t *probe, int interval_ms);
/* On the loop's own thread, once its timers run: the first tick is due one
 * interval from now. lag_stop takes the next tick back. */
void lag_start(lag_probe_t *probe, timers_t *timers);
void lag_stop(lag_probe_t *probe);

/* Copies the samples the reader `key` has not read (the newest LAG_WINDOW_MAX
 * at most) into samples[*n ..] (at most `cap` in all), and marks them read
 * for it alone. */
void lag_read(lag_probe_t *probe, uint64_t key, double *samples, size_t *n, size_t cap);

/* A reader's key: its address and User-Agent (h2o's header value), hashed; never 0. */
uint64_t lag_reader_key(const void *addr, size_t addr_len, const char *agent, size_t agent_len);

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

/* Adds one probe: its histogram, and the samples reader `key` has not read
 * (lag_read). From any thread. */
void lag_report_add(lag_report_t *r, lag_probe_t *probe, uint64_t key);

/* Writes notes_eventloop_delay_seconds and the window's notes_eventloop_lag_*_seconds. */
void lag_report_write(lag_report_t *r, exposition_t *o);

#endif
