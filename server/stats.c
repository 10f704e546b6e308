/*
 * stats.c - histograms, the clock and one loop's HTTP series table (see stats.h).
 */
#include <stdlib.h>
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

size_t histogram_observe(histogram_t *h, double value)
{
    size_t i = 0;
    while (i < h->nbounds && value > h->bounds[i])
        i++;
    STAT_ADD(h->counts[i], 1);
    STAT_ADD(h->count, 1);
    double sum = h->sum + value;
    __atomic_store(&h->sum, &sum, __ATOMIC_RELAXED);
    return i;
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

/* The exemplar's fields are written between two increments of its sequence
 * number (a seqlock), every access atomic, so the reader never sees a torn
 * field, and a sequence number that changed (or is odd) tells it the set is
 * not whole. The fields are stored with release and loaded with acquire
 * rather than fenced (ThreadSanitizer does not model fences): a reader that
 * sees a new field also sees the odd number stored before it. On x86 all of
 * these are plain moves. */
static void exemplar_write(stats_exemplar_t *e, uint64_t hi, uint64_t lo, double value,
                           int64_t unix_ms)
{
    uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&e->trace_hi, hi, __ATOMIC_RELEASE);
    __atomic_store_n(&e->trace_lo, lo, __ATOMIC_RELEASE);
    __atomic_store(&e->value, &value, __ATOMIC_RELEASE);
    __atomic_store_n(&e->unix_ms, unix_ms, __ATOMIC_RELEASE);
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

int stats_exemplar_read(const stats_exemplar_t *e, stats_exemplar_t *out)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        uint32_t before = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        if (before & 1)
            continue;
        out->trace_hi = __atomic_load_n(&e->trace_hi, __ATOMIC_ACQUIRE);
        out->trace_lo = __atomic_load_n(&e->trace_lo, __ATOMIC_ACQUIRE);
        __atomic_load(&e->value, &out->value, __ATOMIC_ACQUIRE);
        out->unix_ms = __atomic_load_n(&e->unix_ms, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == before) {
            out->seq = before;
            return out->trace_hi != 0 || out->trace_lo != 0;
        }
    }
    return 0;
}

void stats_http_observe_traced(stats_loop_t *m, uint8_t route, uint8_t method, int status,
                               double seconds, uint64_t trace_hi, uint64_t trace_lo)
{
    http_series_t *s = find_series(m, route, method, status);
    size_t bucket = histogram_observe(&s->duration, seconds);
    stats_exemplar_t *exemplars = s->exemplars;
    if (exemplars == NULL) {
        exemplars = calloc(HISTOGRAM_MAX_BUCKETS + 1, sizeof(*exemplars));
        if (exemplars == NULL)
            abort(); /* out of memory: see the policy in main.c */
        __atomic_store_n(&s->exemplars, exemplars, __ATOMIC_RELEASE);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    exemplar_write(&exemplars[bucket], trace_hi, trace_lo, seconds,
                   (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
}

size_t stats_http_nseries(const stats_loop_t *m)
{
    return __atomic_load_n(&m->nseries, __ATOMIC_ACQUIRE);
}
