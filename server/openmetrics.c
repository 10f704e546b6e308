/*
 * openmetrics.c - content negotiation and exemplars for the OpenMetrics page
 * (see openmetrics.h).
 */
#include <stdio.h>
#include <string.h>
#include "openmetrics.h"
#include "traceparent.h"

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* A q value ("1", "0.5", "0.125") in thousandths; anything malformed counts as 1000, the
 * default, since a scraper that garbles q still named the type it wants. */
static int q_thousandths(const char *s, size_t len)
{
    if (len == 0 || (s[0] != '0' && s[0] != '1'))
        return 1000;
    int q = (s[0] - '0') * 1000, scale = 100;
    if (len > 1 && s[1] != '.')
        return 1000;
    for (size_t i = 2; i < len && scale > 0; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9')
            return 1000;
        q += (s[i] - '0') * scale;
    }
    return q > 1000 ? 1000 : q;
}

/* Reads one media range of an Accept header, `range` (up to the next ","):
 * its type in *type (trimmed) and its q. */
static int media_range_q(const char *range, size_t len, const char **type, size_t *type_len)
{
    while (len > 0 && is_space(*range))
        range++, len--;
    const char *semi = memchr(range, ';', len);
    size_t tlen = semi != NULL ? (size_t)(semi - range) : len;
    while (tlen > 0 && is_space(range[tlen - 1]))
        tlen--;
    *type = range;
    *type_len = tlen;
    int q = 1000;
    while (semi != NULL) {
        const char *p = semi + 1, *end = range + len;
        semi = memchr(p, ';', (size_t)(end - p));
        const char *pend = semi != NULL ? semi : end;
        while (p < pend && is_space(*p))
            p++;
        if (pend - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            size_t vlen = (size_t)(pend - p - 2);
            while (vlen > 0 && is_space(p[2 + vlen - 1]))
                vlen--;
            q = q_thousandths(p + 2, vlen);
        }
    }
    return q;
}

static int type_is(const char *type, size_t len, const char *want)
{
    size_t n = strlen(want);
    if (len != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = type[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != want[i])
            return 0;
    }
    return 1;
}

int openmetrics_wanted(const char *accept, size_t len)
{
    int q_om = 0, q_text = 0;
    const char *p = accept, *end = accept + len;

    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma != NULL ? comma : end;
        const char *type;
        size_t type_len;
        int q = media_range_q(p, (size_t)(stop - p), &type, &type_len);
        if (type_is(type, type_len, "application/openmetrics-text") && q > q_om)
            q_om = q;
        else if (type_is(type, type_len, "text/plain") && q > q_text)
            q_text = q;
        p = stop + 1;
    }
    return q_om > 0 && q_om >= q_text;
}

size_t openmetrics_exemplar(char *out, uint64_t trace_hi, uint64_t trace_lo, double value,
                            int64_t unix_ms)
{
    char id[TRACEPARENT_TRACE_ID_HEX];
    traceparent_trace_id_hex(trace_hi, trace_lo, id);
    int n = snprintf(out, OPENMETRICS_EXEMPLAR_MAX, " # {trace_id=\"%.32s\"} %.9g %lld.%03lld", id,
                     value, (long long)(unix_ms / 1000), (long long)(unix_ms % 1000));
    return n < 0                                  ? 0
           : (size_t)n < OPENMETRICS_EXEMPLAR_MAX ? (size_t)n
                                                  : OPENMETRICS_EXEMPLAR_MAX - 1;
}
