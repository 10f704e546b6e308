/*
 * traceparent.c - the W3C traceparent header's grammar (see traceparent.h).
 */
#include "head.h"
#include "hex.h"
#include "traceparent.h"

int traceparent_parse(const char *value, size_t len, traceparent_t *out)
{
    uint64_t version, hi, lo, parent, flags;

    len = head_trim(&value, len); /* "00-…-01 " is the same header */
    /* version "-" trace-id "-" parent-id "-" flags, at fixed offsets */
    if (len < TRACEPARENT_LEN || value[2] != '-' || value[35] != '-' || value[52] != '-')
        return -1;
    if (hex_read(value, 2, HEX_LOWER_CASE, &version) != 0 || version == 0xff)
        return -1;
    /* Version 00 is exactly this long; a later one may go on, after a "-". */
    if (len > TRACEPARENT_LEN && (version == 0 || value[TRACEPARENT_LEN] != '-'))
        return -1;
    if (hex_read(value + 3, 16, HEX_LOWER_CASE, &hi) != 0 ||
        hex_read(value + 19, 16, HEX_LOWER_CASE, &lo) != 0 ||
        hex_read(value + 36, 16, HEX_LOWER_CASE, &parent) != 0 ||
        hex_read(value + 53, 2, HEX_LOWER_CASE, &flags) != 0)
        return -1;
    if ((hi == 0 && lo == 0) || parent == 0)
        return -1;
    *out = (traceparent_t){.trace_hi = hi,
                           .trace_lo = lo,
                           .parent_id = parent,
                           .version = (uint8_t)version,
                           .flags = (uint8_t)flags};
    return 0;
}

static void put_hex(uint64_t v, size_t digits, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = digits; i > 0; i--) {
        out[i - 1] = hex[v & 0xf];
        v >>= 4;
    }
}

void traceparent_trace_id_hex(uint64_t hi, uint64_t lo, char out[TRACEPARENT_TRACE_ID_HEX])
{
    put_hex(hi, 16, out);
    put_hex(lo, 16, out + 16);
}

void traceparent_format(const traceparent_t *tp, char out[TRACEPARENT_LEN])
{
    put_hex(0, 2, out); /* the version notesd speaks */
    out[2] = '-';
    traceparent_trace_id_hex(tp->trace_hi, tp->trace_lo, out + 3);
    out[35] = '-';
    put_hex(tp->parent_id, 16, out + 36);
    out[52] = '-';
    put_hex(tp->flags, 2, out + 53);
}
