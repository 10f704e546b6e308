/*
 * test_stats.c - unit tests of server/stats.c: histograms and the HTTP series
 * table at its cap (it used to be written past its end after the 256th series).
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "stats.h"

static uint64_t total_count(const stats_loop_t *m)
{
    uint64_t n = m->overflow.duration.count;
    for (size_t i = 0; i < m->nseries; i++)
        n += m->series[i].duration.count;
    return n;
}

static void histogram_puts_values_in_their_buckets(void)
{
    histogram_t h;
    histogram_init(&h, stats_fine_bounds, stats_fine_nbounds);
    histogram_observe(&h, 0.00005); /* on the first bound: le="5e-05" */
    histogram_observe(&h, 0.0003);
    histogram_observe(&h, 5.0); /* past the last bound: +Inf */
    CHECK_INT_EQ(h.count, 3);
    CHECK_INT_EQ(h.counts[0], 1);
    CHECK_INT_EQ(h.counts[3], 1);
    CHECK_INT_EQ(h.counts[stats_fine_nbounds], 1);
    histogram_t sum;
    histogram_init(&sum, stats_fine_bounds, stats_fine_nbounds);
    histogram_accumulate(&sum, &h);
    histogram_accumulate(&sum, &h);
    CHECK_INT_EQ(sum.count, 6);
    CHECK(sum.sum > 10.00069 && sum.sum < 10.00071); /* 2 x (0.00005 + 0.0003 + 5) */
}

static void series_are_found_again_not_duplicated(void)
{
    stats_loop_t *m = malloc(sizeof(*m));
    stats_loop_init(m);
    stats_http_observe(m, 1, 0, 200, 0.001);
    stats_http_observe(m, 1, 0, 200, 0.002);
    stats_http_observe(m, 1, 0, 404, 0.001);
    stats_http_observe(m, 2, 0, 200, 0.001);
    CHECK_INT_EQ(stats_http_nseries(m), 3);
    CHECK_INT_EQ(m->series[0].duration.count, 2);
    CHECK_INT_EQ(m->overflow.duration.count, 0);
    free(m);
}

/* 600 distinct (route, method, status) combinations on a table of 256: the
 * table stops at its cap, the fields after it are untouched, and every request
 * is counted exactly once. */
static void series_table_at_the_cap_stays_inside_its_array(void)
{
    stats_loop_t *m = malloc(sizeof(*m));
    stats_loop_init(m);
    m->in_flight = 12345;
    m->stalls = 678;
    uint64_t observed = 0;

    /* route 1, method 0: statuses 100..699, more than fit */
    for (int status = 100; status < 700; status++, observed++)
        stats_http_observe(m, 1, 0, status, 0.001);
    CHECK_INT_EQ(stats_http_nseries(m), STATS_HTTP_SERIES_MAX);
    CHECK_INT_EQ(m->series[STATS_HTTP_SERIES_MAX - 2].status, 100 + STATS_HTTP_SERIES_MAX - 2);
    /* the last slot went to route 1, method 0, status "other" */
    http_series_t *last = &m->series[STATS_HTTP_SERIES_MAX - 1];
    CHECK_INT_EQ(last->route, 1);
    CHECK_INT_EQ(last->method, 0);
    CHECK_INT_EQ(last->status, STATS_STATUS_OTHER);
    CHECK_INT_EQ(last->duration.count, 600 - (STATS_HTTP_SERIES_MAX - 1));

    /* another route and method, with the table full: the reserved series */
    for (int status = 200; status < 210; status++, observed++)
        stats_http_observe(m, 3, 2, status, 0.001);
    CHECK_INT_EQ(m->overflow.route, STATS_OTHER);
    CHECK_INT_EQ(m->overflow.method, STATS_OTHER);
    CHECK_INT_EQ(m->overflow.status, STATS_STATUS_OTHER);
    CHECK_INT_EQ(m->overflow.duration.count, 10);

    /* a series that exists still counts as itself */
    stats_http_observe(m, 1, 0, 100, 0.001), observed++;
    CHECK_INT_EQ(m->series[0].duration.count, 2);

    CHECK_INT_EQ(stats_http_nseries(m), STATS_HTTP_SERIES_MAX);
    CHECK_INT_EQ(total_count(m), observed);
    CHECK_INT_EQ(m->in_flight, 12345);
    CHECK_INT_EQ(m->stalls, 678);
    free(m);
}

/* A traced request's trace id becomes the exemplar of the bucket it landed
 * in; a later one in the same bucket replaces it, another bucket keeps its
 * own; an untraced request leaves them alone. */
static void traced_requests_leave_one_exemplar_per_bucket(void)
{
    stats_loop_t *m = malloc(sizeof(*m));
    stats_loop_init(m);
    stats_http_observe(m, 1, 0, 200, 0.002);
    CHECK(m->series[0].exemplars == NULL); /* no room kept before the first trace */
    stats_http_observe_traced(m, 1, 0, 200, 0.002, 0xaa, 0x01);  /* le 0.003: bucket 4 */
    stats_http_observe_traced(m, 1, 0, 200, 0.0025, 0xaa, 0x02); /* the same bucket */
    stats_http_observe_traced(m, 1, 0, 200, 20.0, 0xbb, 0x03);   /* +Inf */
    stats_http_observe(m, 1, 0, 200, 0.0029);                    /* bucket 4, untraced */
    CHECK_INT_EQ(stats_http_nseries(m), 1);
    CHECK_INT_EQ(m->series[0].duration.count, 5);
    stats_exemplar_t e;
    CHECK_INT_EQ(stats_exemplar_read(&m->series[0].exemplars[4], &e), 1);
    CHECK(e.trace_hi == 0xaa && e.trace_lo == 0x02);
    CHECK(e.value == 0.0025);
    CHECK(e.unix_ms > 1600000000000LL); /* the wall clock, in milliseconds */
    CHECK_INT_EQ(e.seq % 2, 0);
    CHECK_INT_EQ(stats_exemplar_read(&m->series[0].exemplars[stats_http_nbounds], &e), 1);
    CHECK(e.trace_lo == 0x03 && e.value == 20.0);
    CHECK_INT_EQ(stats_exemplar_read(&m->series[0].exemplars[0], &e), 0); /* none there */
    free(m->series[0].exemplars);
    free(m);
}

int main(void)
{
    CHECK_RUN(histogram_puts_values_in_their_buckets);
    CHECK_RUN(series_are_found_again_not_duplicated);
    CHECK_RUN(series_table_at_the_cap_stays_inside_its_array);
    CHECK_RUN(traced_requests_leave_one_exemplar_per_bucket);
    return check_summary();
}
