/*
 * stats.c - histograms, the clock and one loop's HTTP series table (see stats.h).
 */
#include <string.h>
#include <time.h>
#include "stats.h"

/* express-prom-bundle's and Prometheus's default bounds, plus sub-millisecond
 * ones that a native server needs: the same `le` values exist on every runtime. */
const double stats_http_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.003, 0.005, 0.01,
                                    0.025,  0.03,    0.05,   0.1,   0.25,  0.3,   0.5,
                                    1,      1.5,     2.5,    5,     10};
const size_t stats_http_nbounds = sizeof(stats_http_bounds) / sizeof(double);
const double stats_fine_bounds[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                    0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
const size_t stats_fine_nbounds = sizeof(stats_fine_bounds) / sizeof(double);

void histogram_init(histogram_t *h, const double *bounds, size_t nbounds)
{
    memset(h, 0, sizeof(*h));
    h->bounds = bounds;
    h->nbounds = nbounds;
}

void histogram_observe(histogram_t *h, double value)
{
    size_t i = 0;
    while (i < h->nbounds && value > h->bounds[i])
        i++;
    STAT_ADD(h->counts[i], 1);
    STAT_ADD(h->count, 1);
    double sum = h->sum + value;
    __atomic_store(&h->sum, &sum, __ATOMIC_RELAXED);
}

void histogram_accumulate(histogram_t *dst, const histogram_t *src)
{
    double sum;
    for (size_t i = 0; i <= src->nbounds; i++) {
        uint64_t n = STAT_READ(src->counts[i]);
        dst->counts[i] += n;
        dst->count += n;
    }
    __atomic_load(&src->sum, &sum, __ATOMIC_RELAXED);
    dst->sum += sum;
}

uint64_t stats_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void stats_loop_init(stats_loop_t *m)
{
    memset(m, 0, sizeof(*m));
    m->overflow.route = m->overflow.method = STATS_OTHER;
    m->overflow.status = STATS_STATUS_OTHER;
    histogram_init(&m->overflow.duration, stats_http_bounds, stats_http_nbounds);
}

static http_series_t *lookup(stats_loop_t *m, uint8_t route, uint8_t method, int status)
{
    for (size_t i = 0; i < m->nseries; i++) {
        http_series_t *s = &m->series[i];
        if (s->route == route && s->method == method && s->status == status)
            return s;
    }
    return NULL;
}

static http_series_t *append(stats_loop_t *m, uint8_t route, uint8_t method, int status)
{
    http_series_t *s = &m->series[m->nseries];
    s->route = route;
    s->method = method;
    s->status = status;
    histogram_init(&s->duration, stats_http_bounds, stats_http_nbounds);
    __atomic_store_n(&m->nseries, m->nseries + 1, __ATOMIC_RELEASE);
    return s;
}

/* The last free slot is kept for a status-"other" series, so the first route
 * and method to overflow keep their labels; after that, only the reserved
 * overflow series is left. Every path returns a slot inside the struct. */
static http_series_t *find_series(stats_loop_t *m, uint8_t route, uint8_t method, int status)
{
    http_series_t *s = lookup(m, route, method, status);
    if (s != NULL)
        return s;
    if (status != STATS_STATUS_OTHER) {
        if (m->nseries < STATS_HTTP_SERIES_MAX - 1)
            return append(m, route, method, status);
        if ((s = lookup(m, route, method, STATS_STATUS_OTHER)) != NULL)
            return s;
    }
    if (m->nseries < STATS_HTTP_SERIES_MAX)
        return append(m, route, method, STATS_STATUS_OTHER);
    return &m->overflow;
}

void stats_http_observe(stats_loop_t *m, uint8_t route, uint8_t method, int status, double seconds)
{
    histogram_observe(&find_series(m, route, method, status)->duration, seconds);
}

size_t stats_http_nseries(const stats_loop_t *m)
{
    return __atomic_load_n(&m->nseries, __ATOMIC_ACQUIRE);
}
