/*
 * openmetrics.h - what the OpenMetrics format adds to the Prometheus text
 * page: choosing it from a scraper's Accept header, and the exemplar that
 * follows a bucket's sample.
 *
 * Pure functions over text; the page itself (families, samples, the choice
 * of which figures go on it) is routes_metrics.c's. Today's scrapers that do
 * not ask for OpenMetrics get the text format, byte for byte as before.
 */
#ifndef NOTESD_OPENMETRICS_H
#define NOTESD_OPENMETRICS_H

#include <stddef.h>
#include <stdint.h>

#define OPENMETRICS_CONTENT_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* 1 if a scraper that sent this Accept header should get OpenMetrics: it
 * names application/openmetrics-text (any version) with a q above 0, and no
 * text/plain with a higher q. A wildcard (any type, or any subtype of
 * application) picks the text format, so a client that asks for nothing in
 * particular sees no change. */
int openmetrics_wanted(const char *accept, size_t len);

/* Longest exemplar openmetrics_exemplar writes. */
#define OPENMETRICS_EXEMPLAR_MAX 96

/* Writes the exemplar that follows a sample on its line:
 * ` # {trace_id="<32 hex>"} <value> <unix seconds with milliseconds>`, and
 * a NUL after it; `out` holds OPENMETRICS_EXEMPLAR_MAX bytes. Returns the
 * bytes written before the NUL. */
size_t openmetrics_exemplar(char *out, uint64_t trace_hi, uint64_t trace_lo, double value,
                            int64_t unix_ms);

#endif
