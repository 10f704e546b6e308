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
    probe->window[probe->taken++ % LAG_WINDOW_MAX] = late;
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

/* The reader's slot: its own, a free one, or the one read least recently. */
static lag_reader_t *reader_of(lag_probe_t *probe, uint64_t key)
{
    lag_reader_t *oldest = &probe->readers[0];
    for (size_t i = 0; i < LAG_READERS; i++) {
        lag_reader_t *r = &probe->readers[i];
        if (r->key == key)
            return r;
        if (r->key == 0 || (oldest->key != 0 && r->read_ns < oldest->read_ns))
            oldest = r;
    }
    /* new (or forgotten): everything the ring holds is unread for it */
    *oldest = (lag_reader_t){.key = key, .seen = 0};
    return oldest;
}

void lag_read(lag_probe_t *probe, uint64_t key, double *samples, size_t *n, size_t cap)
{
    uint64_t now = stats_now_ns();
    pthread_mutex_lock(&probe->lock);
    lag_reader_t *reader = reader_of(probe, key);
    uint64_t from = reader->seen;
    if (probe->taken - from > LAG_WINDOW_MAX)
        from = probe->taken - LAG_WINDOW_MAX; /* the older ones are overwritten */
    for (uint64_t i = from; i < probe->taken && *n < cap; i++)
        samples[(*n)++] = probe->window[i % LAG_WINDOW_MAX];
    reader->seen = probe->taken;
    reader->read_ns = now;
    pthread_mutex_unlock(&probe->lock);
}

uint64_t lag_reader_key(const void *addr, size_t addr_len, const char *agent, size_t agent_len)
{
    /* FNV-1a: the key only tells readers apart, it protects nothing */
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < addr_len; i++)
        h = (h ^ ((const unsigned char *)addr)[i]) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (size_t i = 0; i < agent_len; i++)
        h = (h ^ (unsigned char)agent[i]) * 1099511628211ULL;
    return h != 0 ? h : 1;
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

void lag_report_add(lag_report_t *r, lag_probe_t *probe, uint64_t key)
{
    lag_read(probe, key, r->samples, &r->n, LAG_WINDOW_MAX);
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
                 "The %s of the lag probe's samples since this reader's previous scrape, in "
                 "seconds.",
                 names[i]);
        exposition_family(o, name, "gauge", help);
        exposition_printf(o, "%s %.9g\n", name, values[i]);
    }
}
