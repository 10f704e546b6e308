/*
 * lag.c - the event-loop lag probe (see lag.h).
 *
 * The window keeps at most LAG_WINDOW_MAX samples (about 7 minutes at 100 ms);
 * if scrapes stop for longer, the newest samples are kept, so memory stays fixed.
 */
#include <stdlib.h>
#include <string.h>
#include "lag.h"

#define LAG_WINDOW_MAX 4096

histogram_t lag_histogram;

static h2o_loop_t *tick_loop;
static h2o_timeout_t tick_timeout;
static h2o_timeout_entry_t tick_entry;
static uint64_t last_ns, interval_ns;
static double window[LAG_WINDOW_MAX];
static size_t window_len, window_next;

static void on_tick(h2o_timeout_entry_t *entry)
{
    uint64_t now = metrics_now_ns();
    double late = now > last_ns + interval_ns ? (double)(now - last_ns - interval_ns) / 1e9 : 0;

    last_ns = now;
    histogram_observe(&lag_histogram, late);
    window[window_next] = late;
    window_next = (window_next + 1) % LAG_WINDOW_MAX;
    if (window_len < LAG_WINDOW_MAX)
        window_len++;
    /* Re-armed from here, like setInterval: the next period starts now. */
    h2o_timeout_link(tick_loop, &tick_timeout, &tick_entry);
}

void lag_start(h2o_loop_t *loop, int interval_ms)
{
    histogram_init(&lag_histogram, metrics_fine_bounds, metrics_fine_nbounds);
    tick_loop = loop;
    interval_ns = (uint64_t)interval_ms * 1000000;
    last_ns = metrics_now_ns();
    h2o_timeout_init(loop, &tick_timeout, (uint64_t)interval_ms);
    tick_entry.cb = on_tick;
    h2o_timeout_link(loop, &tick_timeout, &tick_entry);
}

void lag_stop(h2o_loop_t *loop)
{
    h2o_timeout_unlink(&tick_entry);
    h2o_timeout_dispose(loop, &tick_timeout);
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

void lag_take_window(lag_window_t *out)
{
    static double sorted[LAG_WINDOW_MAX];
    size_t n = window_len;

    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n == 0)
        return;
    memcpy(sorted, window, n * sizeof(double)); /* order does not matter: we sort */
    qsort(sorted, n, sizeof(double), compare_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += sorted[i];
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->mean = sum / (double)n;
    out->p50 = percentile(sorted, n, 0.50);
    out->p90 = percentile(sorted, n, 0.90);
    out->p99 = percentile(sorted, n, 0.99);
    window_len = window_next = 0;
}
