/*
 * exposition.h - writing a metrics page: the Prometheus text format, or
 * OpenMetrics for a scraper that asks for it (openmetrics.h decides which).
 *
 * Owns exposition_t, the page being written, and the shape of its lines:
 * a family's HELP and TYPE, a sample, a histogram's buckets (with their
 * exemplars in OpenMetrics). Which families exist, and their figures, are
 * the modules' own: each module that counts something writes its families
 * with these (pool_report_write, listen_report_write, ...), and
 * routes_metrics.c only puts the page together.
 */
#ifndef NOTESD_EXPOSITION_H
#define NOTESD_EXPOSITION_H

#include <h2o.h>
#include "stats.h"

typedef struct exposition {
    char *start, *p, *end; /* the page so far: start..p; room up to end */
    h2o_mem_pool_t *pool;  /* where the page lives, and grows */
    int openmetrics;       /* 1: OpenMetrics; 0: the Prometheus text format */
} exposition_t;

/* Starts a page in `pool` (a request's: it dies with the request) with room
 * for `size` bytes; it grows when a line needs more. */
void exposition_init(exposition_t *o, h2o_mem_pool_t *pool, size_t size, int openmetrics);

/* Appends printf-formatted text. */
void exposition_printf(exposition_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A family's HELP and TYPE lines (`type`: "counter", "gauge" or "histogram").
 * `name` is the sample's name; OpenMetrics names a counter's family without
 * its `_total`, the text format with it. */
void exposition_family(exposition_t *o, const char *name, const char *type, const char *help);

/* A family of one sample without labels, an unsigned integer. */
void exposition_one(exposition_t *o, const char *name, const char *type, const char *help,
                    uint64_t value);

/* The samples of one histogram: its buckets (cumulative), +Inf, _sum and
 * _count. `labels` is "" or `a="b",` with its trailing comma; `exemplars`,
 * one per bucket (read whole with stats_exemplar_read's rules by the
 * caller), or NULL; written in OpenMetrics only. */
void exposition_histogram(exposition_t *o, const char *name, const char *labels,
                          const histogram_t *h, const stats_exemplar_t *exemplars);

/* The page's length. */
static inline size_t exposition_len(const exposition_t *o)
{
    return (size_t)(o->p - o->start);
}

#endif
