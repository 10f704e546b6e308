/*
 * traceparent.h - the W3C Trace Context `traceparent` header, read and written.
 *
 * Owns the header's grammar (version 00, and the rules for later versions)
 * and the trace id's two forms: 16 bytes, kept as two 64-bit halves that fit
 * an atomic store, and 32 lower-case hex digits, as the header, the exemplars
 * and the log lines write it. Pure functions: nothing here knows requests or
 * metrics. notesd records no spans of its own; it only carries the trace id
 * of a request that came with one into the places that describe that request
 * (the metrics' exemplars, Server-Timing, the debug log).
 */
#ifndef NOTESD_TRACEPARENT_H
#define NOTESD_TRACEPARENT_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"

/* "00-" 32 hex "-" 16 hex "-" 2 hex: the length of a version-00 header, and
 * of the part of a later version's header that notesd reads. */
#define TRACEPARENT_LEN 55
#define TRACEPARENT_TRACE_ID_HEX 32

typedef struct traceparent {
    uint64_t trace_hi, trace_lo; /* the trace id, big-endian halves; never both 0 */
    uint64_t parent_id;          /* the caller's span id; never 0 */
    uint8_t version, flags;      /* flags bit 0: sampled */
} traceparent_t;

/* Parses a header value, without the spaces and tabs around it (RFC 9110
 * section 5.5: they are not part of it). Returns 0 and fills *out, or -1 when the value is
 * not one (W3C Trace Context, section 3.2): not lower-case hex, a field of
 * the wrong length, version ff, an all-zero trace id or parent id, or a
 * version-00 value with anything after the flags. A later version may carry
 * more after a "-", which is ignored, as the specification asks. */
NOTESD_MUSTCHECK int traceparent_parse(const char *value, size_t len, traceparent_t *out);

/* Writes the trace id as 32 lower-case hex digits (no terminating NUL). */
void traceparent_trace_id_hex(uint64_t hi, uint64_t lo, char out[TRACEPARENT_TRACE_ID_HEX]);

/* Writes the header as version 00 would carry it: TRACEPARENT_LEN bytes, no NUL. */
void traceparent_format(const traceparent_t *tp, char out[TRACEPARENT_LEN]);

#endif
