/*
 * exposition.c - the lines of a metrics page (see exposition.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "exposition.h"
#include "openmetrics.h"

void exposition_init(exposition_t *o, h2o_mem_pool_t *pool, size_t size, int openmetrics)
{
    o->pool = pool;
    o->start = o->p = h2o_mem_alloc_pool(pool, size);
    o->end = o->start + size;
    o->openmetrics = openmetrics;
}

/* Room for `need` more bytes: a page twice as large (or more), the text so
 * far copied into it. The old one stays in the pool until the request ends;
 * the first size is chosen so that a page rarely grows. */
static void reserve(exposition_t *o, size_t need)
{
    if ((size_t)(o->end - o->p) >= need)
        return;
    size_t len = exposition_len(o), size = 2 * (size_t)(o->end - o->start);
    if (size < len + need)
        size = len + need;
    char *bigger = h2o_mem_alloc_pool(o->pool, size);
    memcpy(bigger, o->start, len);
    o->start = bigger;
    o->p = bigger + len;
    o->end = bigger + size;
}

void exposition_printf(exposition_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p, (size_t)(o->end - o->p), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= (size_t)(o->end - o->p)) {
        reserve(o, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(o->p, (size_t)(o->end - o->p), fmt, ap);
        va_end(ap);
    }
    o->p += n;
}

void exposition_family(exposition_t *o, const char *name, const char *type, const char *help)
{
    int len = (int)strlen(name);
    if (o->openmetrics && strcmp(type, "counter") == 0 && len > 6 &&
        strcmp(name + len - 6, "_total") == 0)
        len -= 6;
    exposition_printf(o, "# HELP %.*s %s\n# TYPE %.*s %s\n", len, name, help, len, name, type);
}

void exposition_one(exposition_t *o, const char *name, const char *type, const char *help,
                    uint64_t value)
{
    exposition_family(o, name, type, help);
    exposition_printf(o, "%s %llu\n", name, (unsigned long long)value);
}

/* Ends a bucket's line: with its exemplar first, in OpenMetrics, when a traced
 * request landed in it. */
static void bucket_end(exposition_t *o, const stats_exemplar_t *exemplars, size_t bucket)
{
    if (o->openmetrics && exemplars != NULL && exemplars[bucket].seq != 0) {
        const stats_exemplar_t *e = &exemplars[bucket];
        reserve(o, OPENMETRICS_EXEMPLAR_MAX);
        o->p += openmetrics_exemplar(o->p, e->trace_hi, e->trace_lo, e->value, e->unix_ms);
    }
    exposition_printf(o, "\n");
}

void exposition_histogram(exposition_t *o, const char *name, const char *labels,
                          const histogram_t *h, const stats_exemplar_t *exemplars)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h->nbounds; i++) {
        cumulative += h->counts[i];
        exposition_printf(o, "%s_bucket{%sle=\"%g\"} %llu", name, labels, h->bounds[i],
                          (unsigned long long)cumulative);
        bucket_end(o, exemplars, i);
    }
    exposition_printf(o, "%s_bucket{%sle=\"+Inf\"} %llu", name, labels,
                      (unsigned long long)h->count);
    bucket_end(o, exemplars, h->nbounds);
    size_t len = strlen(labels);
    if (len > 0) /* the trailing comma goes for _sum and _count */
        exposition_printf(o, "%s_sum{%.*s} %.9g\n%s_count{%.*s} %llu\n", name, (int)len - 1, labels,
                          h->sum, name, (int)len - 1, labels, (unsigned long long)h->count);
    else
        exposition_printf(o, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name,
                          (unsigned long long)h->count);
}
