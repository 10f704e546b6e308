/*
 * render.c - JSON and timestamp rendering (see render.h).
 *
 * Hand-written rather than cJSON_Print: the bytes must equal JSON.stringify's,
 * and writing straight into a request-pool buffer avoids a malloc and a copy
 * per response. cJSON is used where it fits, for parsing request bodies.
 */
#include <stdio.h>
#include <string.h>
#include "render.h"

const char *const notes_tags[8] = {"js", "ts", "node", "bun", "deno", "postgres", "http", "perf"};

static const char SEED_BODY[] =
    "Seeded note body for the JS test. Seeded note body for the JS test. "
    "Seeded note body for the JS test. Seeded note body for the JS test. ";

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void render_iso_from_ms(int64_t unix_ms, char out[RENDER_ISO_LEN + 1])
{
    int64_t days = unix_ms / 86400000, ms_of_day = unix_ms % 86400000;
    if (ms_of_day < 0) {
        ms_of_day += 86400000;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    int secs = (int)(ms_of_day / 1000), ms = (int)(ms_of_day % 1000);
    int fields[] = {(int)(y / 100), (int)(y % 100), (int)m,   (int)d,
                    secs / 3600,    secs / 60 % 60, secs % 60};
    static const char seps[] = {0, 0, '-', '-', 'T', ':', ':'};
    char *p = out;
    /* YYYY-MM-DDTHH:MM:SS.mmmZ, with the year as two 2-digit fields */
    for (int i = 0; i < 7; i++) {
        if (seps[i] != 0)
            *p++ = seps[i];
        *p++ = (char)('0' + fields[i] / 10);
        *p++ = (char)('0' + fields[i] % 10);
    }
    *p++ = '.';
    *p++ = (char)('0' + ms / 100);
    *p++ = (char)('0' + ms / 10 % 10);
    *p++ = (char)('0' + ms % 10);
    *p++ = 'Z';
    *p = '\0';
}

/* Reads exactly `n` digits at *p; returns -1 if they are not all digits. */
static int read_digits(const char **p, const char *end, int n)
{
    int v = 0;
    if (end - *p < n)
        return -1;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    return v;
}

int render_pg_timestamp(const char *pg, size_t len, char out[RENDER_ISO_LEN + 1])
{
    const char *p = pg, *end = pg + len;
    int y, mo, d, h, mi, s, ms = 0, off = 0;

    if ((y = read_digits(&p, end, 4)) < 0 || p >= end || *p++ != '-' ||
        (mo = read_digits(&p, end, 2)) < 1 || mo > 12 || p >= end || *p++ != '-' ||
        (d = read_digits(&p, end, 2)) < 1 || d > 31 || p >= end || *p++ != ' ' ||
        (h = read_digits(&p, end, 2)) < 0 || h > 24 || p >= end || *p++ != ':' ||
        (mi = read_digits(&p, end, 2)) < 0 || mi > 59 || p >= end || *p++ != ':' ||
        (s = read_digits(&p, end, 2)) < 0 || s > 60)
        return -1;
    if (p < end && *p == '.') {
        /* Microseconds at most; keep the first three digits, drop the rest (truncation). */
        int digits = 0;
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    if (p >= end || (*p != '+' && *p != '-'))
        return -1;
    int sign = *p++ == '-' ? -1 : 1, oh, om = 0, os = 0;
    if ((oh = read_digits(&p, end, 2)) < 0)
        return -1;
    if (p < end && *p == ':') {
        p++;
        if ((om = read_digits(&p, end, 2)) < 0)
            return -1;
        if (p < end && *p == ':') {
            p++;
            if ((os = read_digits(&p, end, 2)) < 0)
                return -1;
        }
    }
    if (p != end)
        return -1;
    off = sign * (oh * 3600 + om * 60 + os);

    int64_t secs =
        days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s - off;
    int64_t unix_ms = secs * 1000 + ms;
    /* toISOString writes years outside 0..9999 as +YYYYYY; such rows are not ours to fake. */
    if (unix_ms < -62167219200000LL || unix_ms > 253402300799999LL)
        return -1;
    render_iso_from_ms(unix_ms, out);
    return 0;
}

char *render_json_string(char *dst, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";

    *dst++ = '"';
    for (size_t i = 0; i < len; i++) {
        /* Most text needs no escape: copy such runs in one go (the profile of
         * the read mix showed this loop as notesd's largest cost). */
        size_t run = i;
        while (run < len && (unsigned char)s[run] >= 0x20 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            memcpy(dst, s + i, run - i);
            dst += run - i;
            i = run;
            if (i == len)
                break;
        }
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"':
            *dst++ = '\\', *dst++ = '"';
            break;
        case '\\':
            *dst++ = '\\', *dst++ = '\\';
            break;
        case '\b':
            *dst++ = '\\', *dst++ = 'b';
            break;
        case '\f':
            *dst++ = '\\', *dst++ = 'f';
            break;
        case '\n':
            *dst++ = '\\', *dst++ = 'n';
            break;
        case '\r':
            *dst++ = '\\', *dst++ = 'r';
            break;
        case '\t':
            *dst++ = '\\', *dst++ = 't';
            break;
        default:
            if (c < 0x20) {
                memcpy(dst, "\\u00", 4);
                dst[4] = hex[c >> 4], dst[5] = hex[c & 15];
                dst += 6;
            } else {
                *dst++ = (char)c;
            }
        }
    }
    *dst++ = '"';
    return dst;
}

#define APPEND_LIT(dst, lit) (memcpy(dst, lit, sizeof(lit) - 1), dst += sizeof(lit) - 1)

size_t render_note_bound(const note_row_t *row)
{
    return sizeof("{\"id\":,\"title\":,\"body\":,\"tag\":,\"created_at\":\"\"}") + row->id_len + 2 +
           RENDER_JSON_STRING_BOUND(row->title_len) + RENDER_JSON_STRING_BOUND(row->body_len) +
           RENDER_JSON_STRING_BOUND(row->tag_len) + RENDER_ISO_LEN;
}

char *render_note(char *dst, const note_row_t *row)
{
    char iso[RENDER_ISO_LEN + 1];

    if (render_pg_timestamp(row->created_at, row->created_at_len, iso) != 0)
        return NULL;
    APPEND_LIT(dst, "{\"id\":\"");
    memcpy(dst, row->id, row->id_len), dst += row->id_len;
    APPEND_LIT(dst, "\",\"title\":");
    dst = render_json_string(dst, row->title, row->title_len);
    APPEND_LIT(dst, ",\"body\":");
    dst = render_json_string(dst, row->body, row->body_len);
    APPEND_LIT(dst, ",\"tag\":");
    dst = render_json_string(dst, row->tag, row->tag_len);
    APPEND_LIT(dst, ",\"created_at\":\"");
    memcpy(dst, iso, RENDER_ISO_LEN), dst += RENDER_ISO_LEN;
    *dst++ = '"';
    *dst++ = '}';
    return dst;
}

/* Writes a non-negative integer in decimal; returns the end. */
static char *put_decimal(char *dst, unsigned long v)
{
    char tmp[24], *p = tmp + sizeof(tmp);
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    size_t n = (size_t)(tmp + sizeof(tmp) - p);
    memcpy(dst, p, n);
    return dst + n;
}

size_t render_json_sample(char *dst, size_t cap, long id, int64_t now_ms)
{
    /* memcpy rather than snprintf: this is the hot path of GET /json, and the
     * profile showed printf's format parsing as the largest user-space cost. */
    if (id < 0)
        return 0;
    const char *tag = notes_tags[id % 8];
    size_t tag_len = strlen(tag), digits = 1;
    for (unsigned long v = (unsigned long)id; v >= 10; v /= 10)
        digits++;
    /* Like snprintf: room for the text and a NUL, or nothing is written. */
    size_t len = sizeof("{\"id\":,\"title\":\"Note  about \",\"body\":\"\",\"tag\":\"\","
                        "\"created_at\":\"\"}") -
                 1 + 2 * digits + 2 * tag_len + sizeof(SEED_BODY) - 1 + RENDER_ISO_LEN;
    if (cap < len + 1)
        return 0;
    char *p = dst;
    APPEND_LIT(p, "{\"id\":");
    p = put_decimal(p, (unsigned long)id);
    APPEND_LIT(p, ",\"title\":\"Note ");
    p = put_decimal(p, (unsigned long)id);
    APPEND_LIT(p, " about ");
    memcpy(p, tag, tag_len), p += tag_len;
    APPEND_LIT(p, "\",\"body\":\"");
    APPEND_LIT(p, SEED_BODY);
    APPEND_LIT(p, "\",\"tag\":\"");
    memcpy(p, tag, tag_len), p += tag_len;
    APPEND_LIT(p, "\",\"created_at\":\"");
    render_iso_from_ms(now_ms, p);
    p += RENDER_ISO_LEN;
    APPEND_LIT(p, "\"}");
    *p = '\0';
    return (size_t)(p - dst);
}
