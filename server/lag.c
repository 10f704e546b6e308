/*
 * lag.c - the event-loop lag probe (see lag.h).
 *
 * The tick is an entry of the loop's timer service (CLOCK_MONOTONIC,
 * nanoseconds), linked again `interval` after each tick as setInterval
 * re-arms. An h2o timeout would do too, but it fires against the loop's cached
 * millisecond clock, which adds up to 1 ms of lateness that is not the loop's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lag.h"

static void on_tick(timer_entry_t *entry)
{
    lag_probe_t *probe = H2O_STRUCT_FROM_MEMBER(lag_probe_t, tick, entry);
    uint64_t now = stats_now_ns(); /* not the batch's: callbacks before this one make it late */
    uint64_t due = probe->last_ns + probe->interval_ns;
    double late = now > due ? (double)(now - due) / 1e9 : 0;

    probe->last_ns = now;
    histogram_observe(&probe->histogram, late);
    pthread_mutex_lock(&probe->lock);
    probe->window[probe->window_next] = late;
    probe->window_next = (probe->window_next + 1) % LAG_WINDOW_MAX;
    if (probe->window_len < LAG_WINDOW_MAX)
        probe->window_len++;
    pthread_mutex_unlock(&probe->lock);
    /* Linked again from here, like setInterval: the next period starts now. */
    timers_link(probe->timers, &probe->tick, now + probe->interval_ns);
}

void lag_init(lag_probe_t *probe, int interval_ms)
{
    memset(probe, 0, sizeof(*probe));
    histogram_init(&probe->histogram, stats_fine_bounds, stats_fine_nbounds);
    pthread_mutex_init(&probe->lock, NULL);
    probe->interval_ns = (uint64_t)interval_ms * 1000000;
}

void lag_start(lag_probe_t *probe, timers_t *timers)
{
    probe->timers = timers;
    probe->tick.cb = on_tick;
    probe->last_ns = stats_now_ns();
    timers_link(timers, &probe->tick, probe->last_ns + probe->interval_ns);
}

void lag_stop(lag_probe_t *probe)
{
    timers_unlink(probe->timers, &probe->tick);
}

void lag_drain(lag_probe_t *probe, double *samples, size_t *n, size_t cap)
{
    pthread_mutex_lock(&probe->lock);
    for (size_t k = 0; k < probe->window_len && *n < cap; k++)
        samples[(*n)++] = probe->window[k]; /* order does not matter: we sort */
    probe->window_len = probe->window_next = 0;
    pthread_mutex_unlock(&probe->lock);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const double *sorted, size_t n, double p)
{
    size_t rank = (size_t)(p * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    return sorted[(rank > n ? n : rank) - 1];
}

void lag_summarise(double *samples, size_t n, lag_window_t *out)
{
    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n == 0)
        return;
    qsort(samples, n, sizeof(double), compare_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    out->min = samples[0];
    out->max = samples[n - 1];
    out->mean = sum / (double)n;
    out->p50 = percentile(samples, n, 0.50);
    out->p90 = percentile(samples, n, 0.90);
    out->p99 = percentile(samples, n, 0.99);
}

/* ---- the metrics page's figures ---------------------------------------------------------- */

void lag_report_init(lag_report_t *r)
{
    histogram_init(&r->all, stats_fine_bounds, stats_fine_nbounds);
    r->n = 0;
}

void lag_report_add(lag_report_t *r, lag_probe_t *probe)
{
    lag_drain(probe, r->samples, &r->n, LAG_WINDOW_MAX);
    histogram_accumulate(&r->all, &probe->histogram);
}

void lag_report_write(lag_report_t *r, exposition_t *o)
{
    lag_window_t w;
    lag_summarise(r->samples, r->n, &w);
    exposition_family(o, "notes_eventloop_delay_seconds", "histogram",
                      "How late the event-loop probe timer fired, in seconds (the seed's lag "
                      "probe).");
    exposition_histogram(o, "notes_eventloop_delay_seconds", "", &r->all, NULL);
    static const char *names[] = {"min", "max", "mean", "p50", "p90", "p99"};
    double values[] = {w.min, w.max, w.mean, w.p50, w.p90, w.p99};
    for (size_t i = 0; i < 6; i++) {
        char name[64], help[128];
        snprintf(name, sizeof(name), "notes_eventloop_lag_%s_seconds", names[i]);
        snprintf(help, sizeof(help),
                 "The %s of the lag probe's samples since the previous scrape, in seconds.",
                 names[i]);
        exposition_family(o, name, "gauge", help);
        exposition_printf(o, "%s %.9g\n", name, values[i]);
    }
}
