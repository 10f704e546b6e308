/*
 * body.c - media type, charset, Content-Encoding, size limit and BOM of a
 * request body, in body-parser's order (see body.h).
 *
 * Inflating uses zlib, which h2o links already, and Brotli's decoder. Node's
 * zlib streams are what body-parser uses, so the formats are theirs: "gzip" is
 * RFC 1952 (several members one after another are one body; zero bytes after
 * the last are padding), "deflate" is the zlib format of RFC 1950, not raw
 * deflate, and "br" is RFC 7932, bytes after the end of its stream ignored.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <brotli/decode.h>
#include "body.h"

/* Writes `what "value"` into msg, the value upper-cased or as is, printable
 * ASCII only and cut short: the client's bytes go back in a JSON message. */
static void quote_into(char *msg, size_t msg_size, const char *what, const char *v, size_t len,
                       int upper)
{
    char shown[48];
    size_t n = len < sizeof(shown) - 1 ? len : sizeof(shown) - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        shown[i] = c < 0x20 || c > 0x7e ? '?' : upper ? (char)toupper(c) : (char)tolower(c);
    }
    shown[n] = '\0';
    snprintf(msg, msg_size, "%s \"%s\"", what, shown);
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

int body_check_type(const char *type, size_t type_len, char *msg, size_t msg_size)
{
    size_t n = 0, end = type_len;

    while (type != NULL && n < type_len && type[n] != ';' && !is_ows(type[n]))
        n++;
    if (n != 16 || strncasecmp(type, "application/json", 16) != 0) {
        snprintf(msg, msg_size, "Content-Type must be application/json");
        return 415;
    }
    /* Parameters: `; name=value` or `; name="value"`; only charset matters. */
    for (size_t i = n; i < end;) {
        while (i < end && (type[i] == ';' || is_ows(type[i])))
            i++;
        const char *name = type + i;
        while (i < end && type[i] != '=' && type[i] != ';')
            i++;
        size_t name_len = (size_t)(type + i - name);
        if (i >= end || type[i] != '=')
            continue;
        i++;
        const char *value = type + i;
        size_t value_len;
        if (i < end && type[i] == '"') {
            value = type + ++i;
            while (i < end && type[i] != '"')
                i++;
            value_len = (size_t)(type + i - value);
            i++;
        } else {
            while (i < end && type[i] != ';' && !is_ows(type[i]))
                i++;
            value_len = (size_t)(type + i - value);
        }
        if (name_len == 7 && strncasecmp(name, "charset", 7) == 0 &&
            !(value_len == 5 && strncasecmp(value, "utf-8", 5) == 0)) {
            /* body-parser's message, which also upper-cases the name */
            quote_into(msg, msg_size, "unsupported charset", value, value_len, 1);
            return 415;
        }
    }
    return 0;
}

/* Room for the inflated body: *buf grows by doubling, from `want` bytes at
 * first (allocated even when that is 0), and never past `limit`. Returns the
 * new capacity, or `cap` itself when it is at the limit already. */
static size_t grow(char **buf, size_t cap, size_t want, size_t limit)
{
    size_t next = cap > 0 ? 2 * cap : want;
    if (next > limit)
        next = limit;
    if (*buf != NULL && next <= cap)
        return cap;
    if ((*buf = realloc(*buf, next > 0 ? next : 1)) == NULL)
        abort(); /* out of memory: see the policy in main.c */
    return next;
}

/* The first room for a body `in_len` bytes compressed: 4x (a JSON body
 * compresses about that well), at least 4 KiB, at most the limit. */
static size_t first_guess(size_t in_len, size_t limit)
{
    size_t guess = in_len < (SIZE_MAX / 4) ? 4 * in_len : SIZE_MAX;
    if (guess < 4096)
        guess = 4096;
    return guess < limit ? guess : limit;
}

/* Inflates `in` into *buf (grown as needed, at most `limit` bytes); returns
 * 0, 400 or 413 and sets *out_len. */
static int inflate_into(int gzip, const char *in, size_t in_len, char **buf, size_t limit,
                        size_t *out_len, char *msg, size_t msg_size)
{
    z_stream z;
    int rc, status = 400;
    size_t cap = grow(buf, 0, first_guess(in_len, limit), limit);

    memset(&z, 0, sizeof(z));
    /* 15: the largest window; +16: the gzip wrapper instead of zlib's. */
    if (inflateInit2(&z, gzip ? 15 + 16 : 15) != Z_OK) {
        snprintf(msg, msg_size, "request body could not be inflated");
        return 400;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)in_len;
    z.next_out = (Bytef *)*buf;
    z.avail_out = (uInt)cap;
    for (;;) {
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            /* Another gzip member follows, unless what is left is zero padding. */
            if (!gzip || z.avail_in == 0 || *z.next_in == 0) {
                status = 0;
                break;
            }
            if (inflateReset(&z) != Z_OK)
                break;
            continue;
        }
        if (rc == Z_OK && z.avail_out > 0)
            continue;
        if ((rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_out == 0 && cap < limit) {
            size_t used = cap;
            cap = grow(buf, cap, used, limit);
            z.next_out = (Bytef *)*buf + used;
            z.avail_out = (uInt)(cap - used);
            continue;
        }
        if ((rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_out == 0) {
            /* Full at the limit: one more byte decides whether the body is over it. */
            unsigned char probe;
            z.next_out = &probe;
            z.avail_out = 1;
            rc = inflate(&z, Z_NO_FLUSH);
            if (z.avail_out == 0) {
                status = 413;
                break;
            }
            z.next_out = (Bytef *)*buf + limit;
            z.avail_out = 0;
            if (rc == Z_STREAM_END && (!gzip || z.avail_in == 0 || *z.next_in == 0))
                status = 0;
            else if (rc == Z_STREAM_END)
                status = 413; /* another member, and no room left for it */
            break;
        }
        break; /* Z_DATA_ERROR, or Z_BUF_ERROR: the input ended early */
    }
    *out_len = (size_t)((char *)z.next_out - *buf);
    inflateEnd(&z);
    if (status == 413)
        snprintf(msg, msg_size, "request body larger than %zu bytes", limit);
    else if (status != 0)
        snprintf(msg, msg_size, "request body is not valid %s data", gzip ? "gzip" : "deflate");
    return status;
}

/* Decompresses a Brotli stream into *buf (grown as needed, at most `limit`
 * bytes); returns 0, 400 or 413. */
static int unbrotli_into(const char *in, size_t in_len, char **buf, size_t limit, size_t *out_len,
                         char *msg, size_t msg_size)
{
    BrotliDecoderState *dec = BrotliDecoderCreateInstance(NULL, NULL, NULL);
    const uint8_t *next_in = (const uint8_t *)in;
    size_t avail_in = in_len, cap = grow(buf, 0, first_guess(in_len, limit), limit), used = 0;
    int status = 400;

    while (dec != NULL) {
        uint8_t *next_out = (uint8_t *)*buf + used;
        size_t avail_out = cap - used;
        BrotliDecoderResult rc =
            BrotliDecoderDecompressStream(dec, &avail_in, &next_in, &avail_out, &next_out, NULL);
        used = cap - avail_out;
        if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT && cap < limit) {
            cap = grow(buf, cap, used, limit);
            continue;
        }
        if (rc == BROTLI_DECODER_RESULT_SUCCESS)
            status = 0;
        else if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
            status = 413; /* the limit is reached, and more follows */
        /* else an error, or the input ended early: 400 */
        break;
    }
    if (dec != NULL)
        BrotliDecoderDestroyInstance(dec);
    *out_len = used;
    if (status == 413)
        snprintf(msg, msg_size, "request body larger than %zu bytes", limit);
    else if (status != 0)
        snprintf(msg, msg_size, "request body is not valid br data");
    return status;
}

int body_decode(const char *encoding, size_t encoding_len, const char *in, size_t in_len,
                size_t limit, char **scratch, const char **out, size_t *out_len, char *msg,
                size_t msg_size)
{
    int gzip;

    *scratch = NULL;
    if (encoding == NULL || (encoding_len == 8 && strncasecmp(encoding, "identity", 8) == 0)) {
        if (in_len > limit) {
            snprintf(msg, msg_size, "request body larger than %zu bytes", limit);
            return 413;
        }
        *out = in, *out_len = in_len;
    } else if ((gzip = encoding_len == 4 && strncasecmp(encoding, "gzip", 4) == 0) ||
               (encoding_len == 7 && strncasecmp(encoding, "deflate", 7) == 0)) {
        int status = inflate_into(gzip, in, in_len, scratch, limit, out_len, msg, msg_size);
        if (status != 0)
            return status;
        *out = *scratch;
    } else if (encoding_len == 2 && strncasecmp(encoding, "br", 2) == 0) {
        int status = unbrotli_into(in, in_len, scratch, limit, out_len, msg, msg_size);
        if (status != 0)
            return status;
        *out = *scratch;
    } else {
        quote_into(msg, msg_size, "unsupported content encoding", encoding, encoding_len, 0);
        return 415;
    }
    /* iconv-lite, which body-parser decodes with, drops a leading BOM. */
    if (*out_len >= 3 && memcmp(*out, "\xef\xbb\xbf", 3) == 0)
        *out += 3, *out_len -= 3;
    return 0;
}
