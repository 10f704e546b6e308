/*
 * test_body.c - unit tests of server/body.c: a request body as express.json
 * (body-parser 2) reads it: media type and charset, Content-Encoding (gzip,
 * deflate, br), the size
 * limit on the decoded bytes, the BOM.
 *
 * Compressed inputs are made here with zlib's own deflate, so each test states
 * the bytes it inflates back to.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "body.h"
#include "check.h"

#define TYPE(lit, msg) body_check_type("" lit, sizeof(lit) - 1, msg, sizeof(msg))

static void type_must_be_application_json(void)
{
    char msg[128];
    CHECK_INT_EQ(TYPE("application/json", msg), 0);
    CHECK_INT_EQ(TYPE("Application/JSON; foo=bar", msg), 0);
    CHECK_INT_EQ(TYPE("application/json ;charset=utf-8", msg), 0);
    CHECK_INT_EQ(TYPE("text/plain", msg), 415);
    CHECK_STR_EQ(msg, "Content-Type must be application/json");
    CHECK_INT_EQ(TYPE("application/jsonx", msg), 415);
    CHECK_INT_EQ(TYPE("", msg), 415);
    CHECK_INT_EQ(body_check_type(NULL, 0, msg, sizeof(msg)), 415);
}

static void charset_must_be_utf8(void)
{
    char msg[128];
    CHECK_INT_EQ(TYPE("application/json; charset=utf-8", msg), 0);
    CHECK_INT_EQ(TYPE("application/json; CHARSET=\"UTF-8\"", msg), 0);
    CHECK_INT_EQ(TYPE("application/json;a=b;charset=Utf-8;c", msg), 0);
    CHECK_INT_EQ(TYPE("application/json; charset=iso-8859-1", msg), 415);
    CHECK_STR_EQ(msg, "unsupported charset \"ISO-8859-1\"");
    CHECK_INT_EQ(TYPE("application/json; charset=utf8", msg), 415);
    CHECK_INT_EQ(TYPE("application/json; charset=\"utf-16\"", msg), 415);
    CHECK_STR_EQ(msg, "unsupported charset \"UTF-16\"");
    CHECK_INT_EQ(TYPE("application/json; charset=", msg), 415);
    /* what the client sent comes back printable and short */
    CHECK_INT_EQ(TYPE("application/json; charset=\x01\xff", msg), 415);
    CHECK_STR_EQ(msg, "unsupported charset \"??\"");
}

/* zlib's deflate of `in`: gzip (RFC 1952) or zlib (RFC 1950) format. */
static size_t compress_as(int gzip, const char *in, size_t len, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 9, Z_DEFLATED, gzip ? 15 + 16 : 15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    z.next_in = (Bytef *)in, z.avail_in = (uInt)len;
    z.next_out = out, z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    size_t n = z.total_out;
    deflateEnd(&z);
    return n;
}

/* The inflated body of the last decode; freed by the next one (and at the end). */
static char *decoded;

static int decode(const char *enc, const void *in, size_t len, size_t limit, const char **out,
                  size_t *out_len, char *msg, size_t msg_size)
{
    free(decoded);
    return body_decode(enc, enc != NULL ? strlen(enc) : 0, in, len, limit, &decoded, out, out_len,
                       msg, msg_size);
}

static void identity_passes_through_and_keeps_the_limit(void)
{
    char msg[128];
    const char *out;
    size_t n;
    CHECK_INT_EQ(decode(NULL, "{}", 2, 2, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "{}");
    CHECK_INT_EQ(decode("IDENTITY", "{}", 2, 2, &out, &n, msg, sizeof(msg)), 0);
    CHECK_INT_EQ(decode(NULL, "{} ", 3, 2, &out, &n, msg, sizeof(msg)), 413);
    CHECK_STR_EQ(msg, "request body larger than 2 bytes");
}

static void gzip_and_deflate_inflate(void)
{
    unsigned char packed[256];
    char msg[128];
    const char *out;
    size_t n, len = compress_as(1, "{\"a\":1}", 7, packed, sizeof(packed));
    CHECK_INT_EQ(decode("gzip", packed, len, 64, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "{\"a\":1}");
    CHECK_INT_EQ(decode("GZip", packed, len, 64, &out, &n, msg, sizeof(msg)), 0);
    /* gzip is not deflate, and the other way round */
    CHECK_INT_EQ(decode("deflate", packed, len, 64, &out, &n, msg, sizeof(msg)), 400);
    CHECK_STR_EQ(msg, "request body is not valid deflate data");
    len = compress_as(0, "[1]", 3, packed, sizeof(packed));
    CHECK_INT_EQ(decode("deflate", packed, len, 64, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "[1]");
    CHECK_INT_EQ(decode("gzip", packed, len, 64, &out, &n, msg, sizeof(msg)), 400);
    CHECK_STR_EQ(msg, "request body is not valid gzip data");
}

static void gzip_members_in_a_row_are_one_body_and_zero_padding_is_ignored(void)
{
    unsigned char packed[512];
    char msg[128];
    const char *out;
    size_t n, len = compress_as(1, "{\"a\":", 5, packed, sizeof(packed));
    len += compress_as(1, "1}", 2, packed + len, sizeof(packed) - len);
    memset(packed + len, 0, 4);
    CHECK_INT_EQ(decode("gzip", packed, len + 4, 64, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "{\"a\":1}");
    packed[len] = 'x'; /* not padding, and no gzip member either */
    CHECK_INT_EQ(decode("gzip", packed, len + 4, 64, &out, &n, msg, sizeof(msg)), 400);
}

static void truncated_and_empty_compressed_bodies_are_400(void)
{
    unsigned char packed[256];
    char msg[128];
    const char *out;
    size_t n, len = compress_as(1, "{\"a\":1}", 7, packed, sizeof(packed));
    for (size_t cut = 0; cut < len; cut++)
        CHECK_INT_EQ(decode("gzip", packed, cut, 64, &out, &n, msg, sizeof(msg)), 400);
}

static void the_limit_is_on_the_inflated_size_and_inflating_stops_there(void)
{
    enum { BIG = 1 << 20 };
    char *text = malloc(BIG), msg[128];
    unsigned char *packed = malloc(BIG);
    const char *out;
    size_t n;
    if (text == NULL || packed == NULL)
        abort();
    memset(text, ' ', BIG);
    size_t len = compress_as(1, text, BIG, packed, BIG);
    CHECK(len < 4096); /* a megabyte of spaces packs small */
    /* inflated into a buffer that grew from 4x the packed size to the megabyte */
    CHECK_INT_EQ(decode("gzip", packed, len, BIG, &out, &n, msg, sizeof(msg)), 0);
    CHECK_INT_EQ(n, BIG);
    CHECK_INT_EQ(decode("gzip", packed, len, BIG - 1, &out, &n, msg, sizeof(msg)), 413);
    CHECK_INT_EQ(decode("gzip", packed, len, 100, &out, &n, msg, sizeof(msg)), 413);
    CHECK_STR_EQ(msg, "request body larger than 100 bytes");
    free(text);
    free(packed);
}

/* Brotli streams made by python3-brotli: {"a":1}, and a megabyte of spaces in 14 bytes. */
#define BR_A1 "\x0b\x03\x80\x7b\x22\x61\x22\x3a\x31\x7d\x03"
#define BR_SPACES_1M "\x5b\xff\xff\x8f\x5f\x02\x24\x1e\x0b\x04\x72\xef\x1f\x00"

static void br_decompresses_under_the_limit(void)
{
    char msg[128];
    const char *out;
    size_t n;
    CHECK_INT_EQ(decode("br", BR_A1, sizeof(BR_A1) - 1, 7, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "{\"a\":1}");
    /* bytes after the end of the stream are ignored, as Node's decoder ignores them */
    CHECK_INT_EQ(decode("BR", BR_A1 "xyz", sizeof(BR_A1) + 2, 7, &out, &n, msg, sizeof(msg)), 0);
    CHECK_INT_EQ(decode("br", BR_A1, sizeof(BR_A1) - 2, 7, &out, &n, msg, sizeof(msg)), 400);
    CHECK_STR_EQ(msg, "request body is not valid br data");
    CHECK_INT_EQ(decode("br", "{}", 2, 7, &out, &n, msg, sizeof(msg)), 400);
    CHECK_INT_EQ(decode("br", BR_A1, sizeof(BR_A1) - 1, 6, &out, &n, msg, sizeof(msg)), 413);
    CHECK_INT_EQ(
        decode("br", BR_SPACES_1M, sizeof(BR_SPACES_1M) - 1, 1000, &out, &n, msg, sizeof(msg)),
        413);
    CHECK_STR_EQ(msg, "request body larger than 1000 bytes");
}

/* A small encoded body costs memory of its size, not the limit's: the
 * buffer starts at 4 KiB (four times the packed size, at least) and grows
 * only as the body inflates. */
static void a_small_encoded_body_reserves_little_whatever_the_limit(void)
{
    char msg[128];
    unsigned char packed[256];
    const char *out;
    size_t n, len = compress_as(1, "{\"a\":1}", 7, packed, sizeof(packed));
    CHECK_INT_EQ(decode("gzip", packed, len, 64u << 20, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "{\"a\":1}");
    CHECK(decoded != NULL && malloc_usable_size(decoded) < 8192);
    CHECK_INT_EQ(decode("br", BR_A1, sizeof(BR_A1) - 1, 64u << 20, &out, &n, msg, sizeof(msg)), 0);
    CHECK(decoded != NULL && malloc_usable_size(decoded) < 8192);
    /* and identity inflates nothing */
    CHECK_INT_EQ(decode(NULL, "{}", 2, 64u << 20, &out, &n, msg, sizeof(msg)), 0);
    CHECK(decoded == NULL);
}

static void other_encodings_are_415(void)
{
    char msg[128];
    const char *out;
    size_t n;
    CHECK_INT_EQ(decode("zstd", "x", 1, 8, &out, &n, msg, sizeof(msg)), 415);
    CHECK_STR_EQ(msg, "unsupported content encoding \"zstd\"");
    CHECK_INT_EQ(decode("Compress", "x", 1, 8, &out, &n, msg, sizeof(msg)), 415);
    CHECK_STR_EQ(msg, "unsupported content encoding \"compress\"");
    CHECK_INT_EQ(decode("gzip, gzip", "x", 1, 8, &out, &n, msg, sizeof(msg)), 415);
    CHECK_INT_EQ(decode("", "x", 1, 8, &out, &n, msg, sizeof(msg)), 415);
}

static void a_utf8_bom_is_stripped_once(void)
{
    unsigned char packed[256];
    char msg[128];
    const char *out;
    size_t n;
    CHECK_INT_EQ(decode(NULL, "\xef\xbb\xbf{}", 5, 8, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "{}");
    CHECK_INT_EQ(decode(NULL, "\xef\xbb\xbf\xef\xbb\xbf{}", 8, 8, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "\xef\xbb\xbf{}");
    CHECK_INT_EQ(decode(NULL, "\xef\xbb", 2, 8, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "\xef\xbb");
    size_t len = compress_as(1, "\xef\xbb\xbf[]", 5, packed, sizeof(packed));
    CHECK_INT_EQ(decode("gzip", packed, len, 64, &out, &n, msg, sizeof(msg)), 0);
    CHECK_MEM_EQ(out, n, "[]");
}

int main(void)
{
    CHECK_RUN(type_must_be_application_json);
    CHECK_RUN(charset_must_be_utf8);
    CHECK_RUN(identity_passes_through_and_keeps_the_limit);
    CHECK_RUN(gzip_and_deflate_inflate);
    CHECK_RUN(gzip_members_in_a_row_are_one_body_and_zero_padding_is_ignored);
    CHECK_RUN(truncated_and_empty_compressed_bodies_are_400);
    CHECK_RUN(the_limit_is_on_the_inflated_size_and_inflating_stops_there);
    CHECK_RUN(br_decompresses_under_the_limit);
    CHECK_RUN(a_small_encoded_body_reserves_little_whatever_the_limit);
    CHECK_RUN(other_encodings_are_415);
    CHECK_RUN(a_utf8_bom_is_stripped_once);
    free(decoded);
    return check_summary();
}
