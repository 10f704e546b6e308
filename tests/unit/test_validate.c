/*
 * test_validate.c - unit tests of server/validate.c: note ids, the tag query
 * parameter, UTF-8, JSON request bodies (with json_strict.c's syntax check
 * underneath), path decoding, and the one parser of numbers, also against a
 * reference implementation over random values (number_reference.h).
 *
 * Expected values follow the reference app: Node's querystring for ?tag=,
 * JSON.parse (through express.json) for bodies, PostgreSQL's bigint for ids.
 * Inputs are passed with explicit lengths and copied into exact-size heap
 * buffers, so a read past the end shows up under AddressSanitizer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>
#include "check.h"
#include "number_reference.h"
#include "validate.h"

/* A heap copy of exactly `len` bytes, without a terminating NUL. */
static char *exact_copy(const char *s, size_t len)
{
    char *p = malloc(len > 0 ? len : 1);
    if (p == NULL)
        abort();
    memcpy(p, s, len);
    return p;
}

/* ---- validate_note_id -------------------------------------------------------------------- */

#define ID_OK(lit, want) id_ok("" lit, sizeof(lit) - 1, want, __LINE__)
#define ID_ERR(lit) id_err("" lit, sizeof(lit) - 1, __LINE__)

static void id_ok(const char *lit, size_t len, const char *want, int line)
{
    char canon[21], *s = exact_copy(lit, len);
    const char *err = NULL;

    memset(canon, 'X', sizeof(canon));
    int rc = validate_note_id(s, len, canon, &err);
    check_int_eq(rc, 0, __FILE__, line, "validate_note_id accepts the id");
    if (rc == 0) {
        int terminated = memchr(canon, '\0', sizeof(canon)) != NULL;
        check_int_eq(terminated, 1, __FILE__, line, "canonical id is NUL-terminated");
        if (terminated)
            check_mem_eq(canon, strlen(canon), want, strlen(want), __FILE__, line, "canonical id");
    } else {
        fprintf(stderr, "    err: %s\n", err != NULL ? err : "(null)");
    }
    free(s);
}

static void id_err(const char *lit, size_t len, int line)
{
    char canon[21], *s = exact_copy(lit, len);
    const char *err = NULL;

    int rc = validate_note_id(s, len, canon, &err);
    check_int_eq(rc, -1, __FILE__, line, "validate_note_id refuses the id");
    check_int_eq(err != NULL && err[0] != '\0', 1, __FILE__, line, "an error message is set");
    free(s);
}

static void note_id_accepts_positive_decimal_integers(void)
{
    ID_OK("1", "1");
    ID_OK("42", "42");
    ID_OK("1234567890", "1234567890");
    ID_OK("9223372036854775807", "9223372036854775807");
}

static void note_id_drops_leading_zeros_like_postgres(void)
{
    ID_OK("007", "7");
    ID_OK("010", "10");
    ID_OK("0009223372036854775807", "9223372036854775807");
    ID_OK("000000000000000000000000000001", "1");
}

static void note_id_refuses_zero_and_empty(void)
{
    ID_ERR("");
    ID_ERR("0");
    ID_ERR("00");
    ID_ERR("0000000000000000000000000");
}

static void note_id_refuses_signs_spaces_and_other_notations(void)
{
    ID_ERR("-1");
    ID_ERR("+1");
    ID_ERR(" 1");
    ID_ERR("1 ");
    ID_ERR("0x10");
    ID_ERR("1e3");
    ID_ERR("1.0");
    ID_ERR("1,000");
    ID_ERR("１"); /* U+FF11 FULLWIDTH DIGIT ONE */
    ID_ERR("٣");  /* U+0663 ARABIC-INDIC DIGIT THREE */
    ID_ERR("1\0");
    ID_ERR("\0"
           "1");
    ID_ERR("1\0"
           "2");
}

static void note_id_refuses_values_beyond_bigint(void)
{
    char canon[21];
    const char *err = NULL;

    ID_ERR("9223372036854775808");
    ID_ERR("9999999999999999999");
    ID_ERR("10000000000000000000");
    ID_ERR("1234567890123456789012345");
    ID_ERR("0009223372036854775808");
    /* Out of range is worth its own message, not "must be a positive integer". */
    CHECK_INT_EQ(validate_note_id("9223372036854775808", 19, canon, &err), -1);
    CHECK(err != NULL && strstr(err, "range") != NULL);
}

/* ---- validate_query_param and validate_query_number --------------------------------------- */

static void query_param_finds_the_first_and_counts_repeats(void)
{
    const char *v;
    size_t len;
    CHECK_INT_EQ(validate_query_param("a=1&below=20&below=3", 20, "below", &v, &len), 2);
    CHECK_MEM_EQ(v, len, "20");
    CHECK_INT_EQ(validate_query_param("a=1", 3, "below", &v, &len), 0);
    CHECK_INT_EQ(validate_query_param("jitter", 6, "jitter", &v, &len), 1);
    CHECK(v == NULL);
    /* keys are compared decoded, as Node's querystring reads them */
    CHECK_INT_EQ(validate_query_param("t%61g=js", 8, "tag", &v, &len), 1);
    CHECK_MEM_EQ(v, len, "js");
    CHECK_INT_EQ(validate_query_param("tags=js&ta=x", 12, "tag", &v, &len), 0);
}

static void whole_number_reads_digits_up_to_max(void)
{
    uint64_t n = 1;
    CHECK_INT_EQ(validate_whole_number("60000", 5, 60000, &n), VALIDATE_NUMBER);
    CHECK_INT_EQ(n, 60000);
    CHECK_INT_EQ(validate_whole_number("0000007", 7, 60000, &n), VALIDATE_NUMBER); /* zeros */
    CHECK_INT_EQ(n, 7);
    CHECK_INT_EQ(validate_whole_number("0", 1, 0, &n), VALIDATE_NUMBER);
    CHECK_INT_EQ(n, 0);
    CHECK_INT_EQ(validate_whole_number("18446744073709551615", 20, UINT64_MAX, &n),
                 VALIDATE_NUMBER);
    CHECK(n == UINT64_MAX);
    n = 1;
    CHECK_INT_EQ(validate_whole_number("60001", 5, 60000, &n), VALIDATE_ABOVE_MAX);
    CHECK_INT_EQ(validate_whole_number("", 0, 60000, &n), VALIDATE_NOT_A_NUMBER);
    CHECK_INT_EQ(validate_whole_number("-1", 2, 60000, &n), VALIDATE_NOT_A_NUMBER);
    CHECK_INT_EQ(validate_whole_number("+1", 2, 60000, &n), VALIDATE_NOT_A_NUMBER);
    CHECK_INT_EQ(validate_whole_number("1.5", 3, 60000, &n), VALIDATE_NOT_A_NUMBER);
    CHECK_INT_EQ(validate_whole_number(" 1", 2, 60000, &n), VALIDATE_NOT_A_NUMBER);
    CHECK_INT_EQ(validate_whole_number("%31", 3, 60000, &n), VALIDATE_NOT_A_NUMBER); /* raw */
    CHECK_INT_EQ(n, 1);
    CHECK_INT_EQ(validate_whole_number("12", 1, 60000, &n), VALIDATE_NUMBER); /* `len` bytes */
    CHECK_INT_EQ(n, 1);
}

/* However long the digits, a number past max is told from what is not a number. */
static void whole_number_tells_a_long_number_from_a_bad_one(void)
{
    uint64_t n;
    CHECK_INT_EQ(validate_whole_number("99999999999999999999999", 23, 2147483647, &n),
                 VALIDATE_ABOVE_MAX);
    CHECK_INT_EQ(validate_whole_number("18446744073709551616", 20, UINT64_MAX, &n),
                 VALIDATE_ABOVE_MAX);
    CHECK_INT_EQ(validate_whole_number("100000000000000000000000000", 27, 10, &n),
                 VALIDATE_ABOVE_MAX);
    CHECK_INT_EQ(validate_whole_number("100000000000000000000000000x", 28, 10, &n),
                 VALIDATE_NOT_A_NUMBER);
}

/* A max under 9 once let any single digit through: (max - d) / 10 rounds
 * toward zero, so 5 - 6 gave 0, and 6 passed for a max of 5. */
static void whole_number_holds_a_max_under_nine(void)
{
    uint64_t n = 42;
    for (uint64_t max = 0; max <= 12; max++) {
        for (char d = '0'; d <= '9'; d++) {
            int want = (uint64_t)(d - '0') <= max ? VALIDATE_NUMBER : VALIDATE_ABOVE_MAX;
            check_int_eq(validate_whole_number(&d, 1, max, &n), want, __FILE__, __LINE__,
                         "one digit against a small max");
        }
        CHECK_INT_EQ(validate_whole_number("10", 2, max, &n),
                     max >= 10 ? VALIDATE_NUMBER : VALIDATE_ABOVE_MAX);
    }
    CHECK_INT_EQ(validate_whole_number("6", 1, 5, &n), VALIDATE_ABOVE_MAX); /* PRIMES_MAX=5 */
    CHECK_INT_EQ(validate_whole_number("9", 1, 3, &n), VALIDATE_ABOVE_MAX); /* WS_MAX_MESSAGES=3 */
}

static void query_number_reads_whole_numbers_up_to_max(void)
{
    uint64_t n = 1;
    CHECK_INT_EQ(validate_query_number("below=100", 9, "below", 1000, &n), 1);
    CHECK_INT_EQ(n, 100);
    CHECK_INT_EQ(validate_query_number("below=1000", 10, "below", 1000, &n), 1);
    CHECK_INT_EQ(n, 1000);
    CHECK_INT_EQ(validate_query_number("below=1001", 10, "below", 1000, &n), -1);
    CHECK_INT_EQ(validate_query_number("below=", 6, "below", 1000, &n), -1);
    CHECK_INT_EQ(validate_query_number("below=-1", 8, "below", 1000, &n), -1);
    CHECK_INT_EQ(validate_query_number("below=99999999999999999999999", 29, "below", 1000, &n), -1);
    CHECK_INT_EQ(validate_query_number("x=1", 3, "below", 1000, &n), 0);
    CHECK_INT_EQ(validate_query_number("below", 5, "below", 1000, &n), 0);
    CHECK_INT_EQ(validate_query_number("below=6", 7, "below", 5, &n), -1);
}

/* The value is decoded as every query-string value is: "%31%30" is 10. */
static void query_number_decodes_escapes_first(void)
{
    uint64_t n = 0;
    CHECK_INT_EQ(validate_query_number("below=%31%30", 12, "below", 1000, &n), 1);
    CHECK_INT_EQ(n, 10);
    CHECK_INT_EQ(validate_query_number("count=%31", 9, "count", 10, &n), 1);
    CHECK_INT_EQ(n, 1);
    CHECK_INT_EQ(validate_query_number("b%65low=7", 9, "below", 10, &n), 1); /* and the key */
    CHECK_INT_EQ(n, 7);
    CHECK_INT_EQ(validate_query_number("every=%32", 9, "every", 5, &n), 1);
    CHECK_INT_EQ(n, 2);
    n = 99;
    CHECK_INT_EQ(validate_query_number("below=%3", 8, "below", 1000, &n), -1); /* kept: '%' */
    CHECK_INT_EQ(validate_query_number("below=1+", 8, "below", 1000, &n), -1); /* a space */
    CHECK_INT_EQ(validate_query_number("below=%201", 10, "below", 1000, &n), -1);
    CHECK_INT_EQ(validate_query_number("below=%36", 9, "below", 5, &n), -1); /* 6 > 5 */
    CHECK_INT_EQ(n, 99);
}

/* A fixed pseudo-random sequence, so a failure can be replayed. */
static uint64_t lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

/* validate_query_number against number_reference.h's obvious decoder and
 * strtoull, over 300,000 values made of what trips parsers up: digits,
 * escapes of digits and of other bytes, broken escapes, '+', signs, spaces,
 * long runs of zeros and numbers around 2^64, each against a max near 0,
 * near a power of ten, near 2^64, or anywhere. */
static void query_number_agrees_with_a_reference_on_random_values(void)
{
    /* the first DIGIT_PIECES decode to digits only */
    static const char *const pieces[] = {"0",
                                         "1",
                                         "5",
                                         "9",
                                         "7",
                                         "%30",
                                         "%31",
                                         "%39",
                                         "00000000",
                                         "18446744073709551615",
                                         "18446744073709551616",
                                         "%3",
                                         "%",
                                         "%3g",
                                         "%2B",
                                         "+",
                                         "-",
                                         " ",
                                         "a",
                                         "%20",
                                         "%00",
                                         "%41",
                                         "%3A",
                                         "%2F",
                                         ".",
                                         "&",
                                         "="};
    enum { DIGIT_PIECES = 11 };
    static const uint64_t maxes[] = {
        0, 1, 5, 8, 9, 10, 99, 100, 60000, 1000000, UINT64_MAX, UINT64_MAX - 1, UINT64_MAX / 10};
    uint64_t seed = 2026, agreed = 0, numbers = 0;
    char query[512];

    for (int round = 0; round < 300000; round++) {
        size_t len = 4;
        memcpy(query, "num=", 4);
        size_t parts = lcg(&seed) % 6, choices = sizeof(pieces) / sizeof(pieces[0]);
        if (lcg(&seed) % 2 == 0)
            choices = DIGIT_PIECES; /* half the values are digits alone */
        for (size_t k = 0; k < parts; k++) {
            const char *p = pieces[lcg(&seed) % choices];
            if (len + strlen(p) < sizeof(query)) {
                memcpy(query + len, p, strlen(p));
                len += strlen(p);
            }
        }
        uint64_t max = lcg(&seed) % 4 == 0 ? (lcg(&seed) << 31 ^ lcg(&seed))
                                           : maxes[lcg(&seed) % (sizeof(maxes) / sizeof(maxes[0]))];
        char *q = exact_copy(query, len);
        uint64_t got = 0, want = 0;
        int rc = validate_query_number(q, len, "num", max, &got);
        /* the value ends at the first '&' (splitting the query is validate_query_param's) */
        const char *amp = memchr(q + 4, '&', len - 4);
        int ref =
            reference_number(q + 4, amp != NULL ? (size_t)(amp - q) - 4 : len - 4, max, &want);
        if (rc == ref && (rc != 1 || got == want)) {
            agreed++;
            numbers += rc == 1;
        } else if (round - (int)agreed < 10) { /* the first ten disagreements, not thousands */
            check_count(0, __FILE__, __LINE__, "validate_query_number agrees with the reference");
            fprintf(stderr, "    query %.*s, max %llu: %d (%llu), reference %d (%llu)\n", (int)len,
                    query, (unsigned long long)max, rc, (unsigned long long)got, ref,
                    (unsigned long long)want);
        }
        free(q);
    }
    CHECK_INT_EQ(agreed, 300000);
    printf("    %llu of 300000 random values were numbers within their max\n",
           (unsigned long long)numbers);
    CHECK(numbers > 50000); /* the inputs reach the accepting side often, not only refusals */
}

/* ---- validate_tag_query ------------------------------------------------------------------ */

#define TAG_OK(lit, want) tag_ok("" lit, sizeof(lit) - 1, "" want, sizeof(want) - 1, __LINE__)
#define TAG_ERR(lit, reason) tag_err("" lit, sizeof(lit) - 1, reason, __LINE__)

static void tag_ok(const char *lit, size_t len, const char *want, size_t want_len, int line)
{
    char *q = exact_copy(lit, len), *out = malloc(len + 1);
    size_t out_len = (size_t)-1;
    const char *err = NULL;

    int rc = validate_tag_query(q, len, out, &out_len, &err);
    check_int_eq(rc, 0, __FILE__, line, "validate_tag_query accepts the query");
    if (rc == 0) {
        check_mem_eq(out, out_len, want, want_len, __FILE__, line, "decoded tag");
        check_int_eq(out[out_len], '\0', __FILE__, line, "decoded tag is NUL-terminated");
    } else {
        fprintf(stderr, "    err: %s\n", err != NULL ? err : "(null)");
    }
    free(q);
    free(out);
}

/* `reason` is a word the message must contain, so the three refusals stay distinct. */
static void tag_err(const char *lit, size_t len, const char *reason, int line)
{
    char *q = exact_copy(lit, len), *out = malloc(len + 1);
    size_t out_len;
    const char *err = NULL;

    int rc = validate_tag_query(q, len, out, &out_len, &err);
    check_int_eq(rc, -1, __FILE__, line, "validate_tag_query refuses the query");
    if (rc == -1 && !check_count(err != NULL && strstr(err, reason) != NULL, __FILE__, line,
                                 "the message gives the reason"))
        fprintf(stderr, "    expected a message with: %s\n    actual: %s\n", reason,
                err != NULL ? err : "(null)");
    free(q);
    free(out);
}

static void tag_query_finds_tag_among_other_parameters(void)
{
    TAG_OK("tag=js", "js");
    TAG_OK("a=1&tag=js&b=2", "js");
    TAG_OK("tag=js&x", "js");
    TAG_OK("&&tag=js&&", "js");
    TAG_OK("tagx=1&tag=node&xtag=2", "node");
}

static void tag_query_decodes_like_node_querystring(void)
{
    TAG_OK("tag=a+b", "a b");
    TAG_OK("tag=%6A%73", "js");
    TAG_OK("tag=%6a%73", "js");
    TAG_OK("tag=%2B", "+");
    TAG_OK("tag=%26", "&");
    TAG_OK("tag=a=b", "a=b");
    TAG_OK("tag=%C3%A9", "\xc3\xa9");
    TAG_OK("tag=\xc3\xa9", "\xc3\xa9");
    TAG_OK("tag=%F0%9F%98%80", "\xf0\x9f\x98\x80");
}

static void tag_query_decodes_the_key_too(void)
{
    TAG_OK("t%61g=js", "js");
    TAG_OK("%74%61%67=js", "js");
    TAG_OK("%74%61%67", "");
}

static void tag_query_leaves_invalid_escapes_as_they_are(void)
{
    TAG_OK("tag=%zz", "%zz");
    TAG_OK("tag=%", "%");
    TAG_OK("tag=%4", "%4");
    TAG_OK("tag=a%", "a%");
    TAG_OK("tag=%%41", "%A");
    TAG_OK("tag=%g1", "%g1");
}

static void tag_query_without_value_is_empty(void)
{
    TAG_OK("tag=", "");
    TAG_OK("tag", "");
    TAG_OK("a=1&tag", "");
}

static void tag_query_missing_tag_is_an_error(void)
{
    TAG_ERR("", "required");
    TAG_ERR("tags=js", "required");
    TAG_ERR("ta=js", "required");
    TAG_ERR("Tag=js", "required");
    TAG_ERR("a=tag", "required");
    TAG_ERR("t+ag=js", "required");
}

static void tag_query_repeated_tag_is_an_error(void)
{
    TAG_ERR("tag=a&tag=b", "more than once");
    TAG_ERR("tag=a&tag=a", "more than once");
    TAG_ERR("tag&t%61g", "more than once");
}

static void tag_query_refuses_nul_and_invalid_utf8(void)
{
    TAG_ERR("tag=%00", "UTF-8");
    TAG_ERR("tag=a%00b", "UTF-8");
    TAG_ERR("tag=%ff", "UTF-8");
    TAG_ERR("tag=%C3", "UTF-8");
    TAG_ERR("tag=%C0%80", "UTF-8");
    TAG_ERR("tag=%ED%A0%80", "UTF-8");
}

/* Keys of 4 to 9 bytes are decoded to see whether they spell "tag" (up to three %XX). */
static void tag_query_long_keys_stay_in_bounds(void)
{
    TAG_OK("abcdefgh=1&tag=js", "js");
    TAG_OK("abcdefghi=1&tag=js", "js");
    TAG_OK("abcdefghij=1&tag=js", "js");
    TAG_OK("%74%61%67x=1&tag=js", "js");
}

/* ---- validate_utf8 ----------------------------------------------------------------------- */

#define UTF8_IS(lit, want) CHECK_INT_EQ(validate_utf8("" lit, sizeof(lit) - 1), want)

static void utf8_accepts_well_formed_text(void)
{
    UTF8_IS("", 1);
    UTF8_IS("plain ASCII \x7f", 1);
    UTF8_IS("\xc2\x80", 1);         /* U+0080, smallest 2-byte */
    UTF8_IS("\xdf\xbf", 1);         /* U+07FF */
    UTF8_IS("\xe0\xa0\x80", 1);     /* U+0800, smallest 3-byte */
    UTF8_IS("\xed\x9f\xbf", 1);     /* U+D7FF, just below the surrogates */
    UTF8_IS("\xee\x80\x80", 1);     /* U+E000, just above them */
    UTF8_IS("\xef\xbf\xbf", 1);     /* U+FFFF */
    UTF8_IS("\xe2\x80\xa8", 1);     /* U+2028 */
    UTF8_IS("\xf0\x9f\x98\x80", 1); /* U+1F600, an emoji */
    UTF8_IS("\xf4\x8f\xbf\xbf", 1); /* U+10FFFF, the last code point */
    UTF8_IS("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8d\x95", 1);
}

static void utf8_refuses_nul(void)
{
    UTF8_IS("\0", 0);
    UTF8_IS("a\0b", 0);
}

static void utf8_refuses_overlong_forms(void)
{
    UTF8_IS("\xc0\x80", 0); /* NUL in two bytes */
    UTF8_IS("\xc1\xbf", 0);
    UTF8_IS("\xe0\x80\xaf", 0);
    UTF8_IS("\xe0\x9f\xbf", 0);
    UTF8_IS("\xf0\x80\x80\xaf", 0);
    UTF8_IS("\xf0\x8f\xbf\xbf", 0);
}

static void utf8_refuses_surrogates(void)
{
    UTF8_IS("\xed\xa0\x80", 0); /* U+D800 */
    UTF8_IS("\xed\xbf\xbf", 0); /* U+DFFF */
    UTF8_IS("\xed\xa0\xbd\xed\xb8\x80", 0);
}

static void utf8_refuses_code_points_past_10ffff(void)
{
    UTF8_IS("\xf4\x90\x80\x80", 0);
    UTF8_IS("\xf7\xbf\xbf\xbf", 0);
    UTF8_IS("\xf8\x88\x80\x80\x80", 0);
    UTF8_IS("\xfc\x84\x80\x80\x80\x80", 0);
    UTF8_IS("\xfe", 0);
    UTF8_IS("\xff", 0);
}

static void utf8_refuses_truncated_and_stray_bytes(void)
{
    UTF8_IS("\xc3", 0);
    UTF8_IS("a\xc3", 0);
    UTF8_IS("\xe2\x82", 0);
    UTF8_IS("\xf0\x9f\x98", 0);
    UTF8_IS("\x80", 0);
    UTF8_IS("a\xbf", 0);
    UTF8_IS("\xc3"
            "a",
            0);
    UTF8_IS("\xe2\x28\xa1", 0);
    UTF8_IS("\xf0\x9f\x98\x28", 0);
}

static void utf8_reads_only_len_bytes(void)
{
    /* The truncated sequence is cut by len, not by what follows in memory. */
    char *s = exact_copy("ok\xc3\xa9", 4);
    CHECK_INT_EQ(validate_utf8(s, 4), 1);
    CHECK_INT_EQ(validate_utf8(s, 3), 0);
    CHECK_INT_EQ(validate_utf8(s, 2), 1);
    free(s);
}

/* ---- validate_note_body ------------------------------------------------------------------ */

#define BODY_OK(lit, t, b, g) body_ok("" lit, sizeof(lit) - 1, t, b, g, __LINE__)
#define BODY_ERR(lit, reason) body_err("" lit, sizeof(lit) - 1, reason, __LINE__)

static void body_ok(const char *lit, size_t len, const char *title, const char *body,
                    const char *tag, int line)
{
    char *s = exact_copy(lit, len);
    note_input_t in;
    const char *err = NULL;

    int rc = validate_note_body(s, len, &in, &err);
    check_int_eq(rc, 0, __FILE__, line, "validate_note_body accepts the body");
    if (rc == 0) {
        check_int_eq(in.json != NULL, 1, __FILE__, line, "in.json is set");
        check_mem_eq(in.title, strlen(in.title), title, strlen(title), __FILE__, line, "title");
        check_mem_eq(in.body, strlen(in.body), body, strlen(body), __FILE__, line, "body");
        check_mem_eq(in.tag, strlen(in.tag), tag, strlen(tag), __FILE__, line, "tag");
        cJSON_Delete(in.json);
    } else {
        fprintf(stderr, "    err: %s\n", err != NULL ? err : "(null)");
    }
    free(s);
}

/* `reason` is a word the message must contain (NULL: any message will do). */
static void body_err(const char *lit, size_t len, const char *reason, int line)
{
    char *s = exact_copy(lit, len);
    note_input_t in;
    const char *err = NULL;

    int rc = validate_note_body(s, len, &in, &err);
    check_int_eq(rc, -1, __FILE__, line, "validate_note_body refuses the body");
    if (rc == 0) {
        fprintf(stderr, "    but it gave title=%s body=%s tag=%s\n", in.title, in.body, in.tag);
        cJSON_Delete(in.json);
    } else {
        check_int_eq(in.json == NULL, 1, __FILE__, line, "nothing is left to free");
        if (!check_count(err != NULL && (reason == NULL || strstr(err, reason) != NULL), __FILE__,
                         line, "the message gives the reason"))
            fprintf(stderr, "    expected a message with: %s\n    actual: %s\n",
                    reason != NULL ? reason : "(any)", err != NULL ? err : "(null)");
    }
    free(s);
}

static void note_body_accepts_an_object_of_three_strings(void)
{
    BODY_OK("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}", "T", "B", "js");
    BODY_OK(" \t\r\n{ \"tag\" : \"js\" , \"body\" : \"B\" , \"title\" : \"T\" } \n", "T", "B",
            "js");
    BODY_OK("{\"title\":\"\",\"body\":\"\",\"tag\":\"\"}", "", "", "");
}

static void note_body_ignores_extra_fields(void)
{
    BODY_OK("{\"id\":5,\"title\":\"T\",\"extra\":{\"a\":[1,2,null]},\"body\":\"B\",\"tag\":\"js\","
            "\"created_at\":\"x\"}",
            "T", "B", "js");
    BODY_OK("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\",\"TITLE\":1}", "T", "B", "js");
}

static void note_body_missing_or_null_field_is_required(void)
{
    BODY_ERR("{\"body\":\"B\",\"tag\":\"js\"}", "'title' is required");
    BODY_ERR("{\"title\":\"T\",\"tag\":\"js\"}", "'body' is required");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\"}", "'tag' is required");
    BODY_ERR("{\"title\":null,\"body\":\"B\",\"tag\":\"js\"}", "'title' is required");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":null}", "'tag' is required");
    BODY_ERR("{}", "'title' is required");
    BODY_ERR("{\"Title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}", "'title' is required");
}

static void note_body_field_of_another_type_must_be_a_string(void)
{
    BODY_ERR("{\"title\":1,\"body\":\"B\",\"tag\":\"js\"}", "'title' must be a string");
    BODY_ERR("{\"title\":\"T\",\"body\":true,\"tag\":\"js\"}", "'body' must be a string");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":[\"js\"]}", "'tag' must be a string");
    BODY_ERR("{\"title\":\"T\",\"body\":{},\"tag\":\"js\"}", "'body' must be a string");
}

static void note_body_must_be_an_object(void)
{
    BODY_ERR("[{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}]", "object");
    BODY_ERR("\"title\"", "object");
    BODY_ERR("42", "object");
    BODY_ERR("null", "object");
    BODY_ERR("", "object");
}

static void note_body_refuses_invalid_json(void)
{
    BODY_ERR("{", "JSON");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"", "JSON");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\",}", "JSON");
    BODY_ERR("{'title':'T','body':'B','tag':'js'}", "JSON");
    BODY_ERR("{\"title\":\"T\\x41\",\"body\":\"B\",\"tag\":\"js\"}", "JSON");
    BODY_ERR("   ", "JSON");
}

/* JSON.parse refuses anything after the value but whitespace; express.json answers 400. */
static void note_body_refuses_trailing_garbage(void)
{
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"} x", "JSON");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}}", "JSON");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}{}", "JSON");
}

/* cJSON is laxer than JSON.parse in places; each of these is a 400 in the reference. */
static void note_body_refuses_what_json_parse_refuses(void)
{
    BODY_ERR("\f{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}", "JSON");
    BODY_ERR("{\"title\":\"T\",\x01\"body\":\"B\",\"tag\":\"js\"}", "JSON");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\",\"n\":01}", "JSON");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\",\"n\":1.}", "JSON");
}

/* JSON.parse keeps the last of duplicate keys, so the reference stores "second". */
static void note_body_duplicate_key_takes_the_last_value(void)
{
    BODY_OK("{\"title\":\"first\",\"body\":\"B\",\"tag\":\"js\",\"title\":\"second\"}", "second",
            "B", "js");
}

static void note_body_refuses_raw_control_characters_in_strings(void)
{
    BODY_ERR("{\"title\":\"a\nb\",\"body\":\"B\",\"tag\":\"js\"}", "control character");
    BODY_ERR("{\"title\":\"T\",\"body\":\"tab\there\",\"tag\":\"js\"}", "control character");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"\x1f\"}", "control character");
    BODY_ERR("{\"ti\x01tle\":\"T\",\"body\":\"B\",\"tag\":\"js\"}", "control character");
}

static void note_body_refuses_nul(void)
{
    BODY_ERR("{\"title\":\"a\\u0000b\",\"body\":\"B\",\"tag\":\"js\"}", "NUL");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"\\u0000\"}", "NUL");
    BODY_ERR("{\"title\":\"T\",\"body\":\"\\\\\\u0000\",\"tag\":\"js\"}", "NUL");
    BODY_ERR("{\"title\":\"a\0b\",\"body\":\"B\",\"tag\":\"js\"}", "NUL");
}

/* The JSON text "\\u0000" is a backslash followed by the letters u0000, not a NUL. */
static void note_body_escaped_backslash_before_u0000_is_text(void)
{
    BODY_OK("{\"title\":\"\\\\u0000\",\"body\":\"B\",\"tag\":\"js\"}", "\\u0000", "B", "js");
    BODY_OK("{\"title\":\"T\",\"body\":\"x\\\\\\\\u0000\",\"tag\":\"js\"}", "T", "x\\\\u0000",
            "js");
    BODY_OK("{\"title\":\"\\\"\",\"body\":\"\\\\\",\"tag\":\"u0000\"}", "\"", "\\", "u0000");
}

static void note_body_refuses_invalid_utf8(void)
{
    BODY_ERR("{\"title\":\"\xff\",\"body\":\"B\",\"tag\":\"js\"}", "UTF-8");
    BODY_ERR("{\"title\":\"\xc3\",\"body\":\"B\",\"tag\":\"js\"}", "UTF-8");
    BODY_ERR("{\"title\":\"\xed\xa0\x80\",\"body\":\"B\",\"tag\":\"js\"}", "UTF-8");
    BODY_ERR("{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\"}\xc0\x80", "UTF-8");
}

static void note_body_decodes_escapes_to_utf8(void)
{
    BODY_OK("{\"title\":\"caf\\u00e9\",\"body\":\"\\u20AC\",\"tag\":\"\\ud83d\\ude00\"}",
            "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80");
    BODY_OK("{\"title\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"body\":\"\\u0001\\u001F\",\"tag\":\"r\"}",
            "\"\\/\b\f\n\r\t", "\x01\x1f", "r");
    BODY_OK("{\"title\":\"caf\xc3\xa9\",\"body\":\"\xe2\x80\xa8\",\"tag\":\"\xf0\x9f\x98\x80\"}",
            "caf\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80");
}

static void note_body_deep_nesting_does_not_crash(void)
{
    const char head[] = "{\"title\":\"T\",\"body\":\"B\",\"tag\":\"js\",\"x\":";
    size_t depths[] = {100, 100000};

    for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
        size_t depth = depths[k], len = sizeof(head) - 1 + 2 * depth + 1;
        char *s = malloc(len);
        memcpy(s, head, sizeof(head) - 1);
        memset(s + sizeof(head) - 1, '[', depth);
        memset(s + sizeof(head) - 1 + depth, ']', depth);
        s[len - 1] = '}';
        note_input_t in;
        const char *err = NULL;
        int rc = validate_note_body(s, len, &in, &err);
        if (depth <= 100) {
            CHECK_INT_EQ(rc, 0);
        } else {
            /* JSON.parse would accept this; cJSON stops at its nesting limit. No crash is
             * what matters here. */
            CHECK(rc == 0 || (rc == -1 && err != NULL));
        }
        if (rc == 0) {
            CHECK_STR_EQ(in.title, "T");
            cJSON_Delete(in.json);
        }
        free(s);
    }

    /* Deeply nested at the top level: no object, no crash. */
    size_t depth = 200000;
    char *s = malloc(2 * depth);
    memset(s, '[', depth);
    memset(s + depth, ']', depth);
    note_input_t in;
    const char *err = NULL;
    CHECK_INT_EQ(validate_note_body(s, 2 * depth, &in, &err), -1);
    free(s);
}

static void note_body_null_pointer_is_empty(void)
{
    note_input_t in;
    const char *err = NULL;
    CHECK_INT_EQ(validate_note_body(NULL, 0, &in, &err), -1);
    CHECK(in.json == NULL && err != NULL);
}

/* ---- lone surrogates: JSON.parse keeps them, node-postgres stores U+FFFD -------------------- */

static void note_body_stores_lone_surrogates_as_replacement_characters(void)
{
    BODY_OK("{\"title\":\"\\ud800\",\"body\":\"b\",\"tag\":\"t\"}", "\xef\xbf\xbd", "b", "t");
    BODY_OK("{\"title\":\"\\udc00\",\"body\":\"b\",\"tag\":\"t\"}", "\xef\xbf\xbd", "b", "t");
    /* reversed: two lone halves */
    BODY_OK("{\"title\":\"\\udc00\\ud800\",\"body\":\"b\",\"tag\":\"t\"}",
            "\xef\xbf\xbd\xef\xbf\xbd", "b", "t");
    /* a high half, then a pair */
    BODY_OK("{\"title\":\"\\uD800\\ud800\\uDC00\",\"body\":\"b\",\"tag\":\"t\"}",
            "\xef\xbf\xbd\xf0\x90\x80\x80", "b", "t");
    /* a high half before another escape, before text, and at the end of a key */
    BODY_OK("{\"title\":\"a\\ud800\\nb\",\"body\":\"\\ud800x\",\"tag\":\"t\",\"k\\ud800\":1}",
            "a\xef\xbf\xbd\nb", "\xef\xbf\xbdx", "t");
    /* a valid pair is one character; an escaped backslash is no escape */
    BODY_OK("{\"title\":\"\\ud83d\\ude00\",\"body\":\"\\\\ud800\",\"tag\":\"t\"}",
            "\xf0\x9f\x98\x80", "\\ud800", "t");
    /* what is still not JSON stays refused */
    BODY_ERR("{\"title\":\"\\ud80\",\"body\":\"b\",\"tag\":\"t\"}", "not valid JSON");
    BODY_ERR("{\"title\":\"\\ud800\",\"body\":\"b\",\"tag\":\"t\"}x", "not valid JSON");
}

/* ---- validate_decode_path ---------------------------------------------------------------- */

static void decode_path_decodes_escapes_but_not_plus(void)
{
    char out[32];
    size_t n = validate_decode_path("%31%2f+%zz%4", 12, out);
    CHECK_MEM_EQ(out, n, "1/+%zz%4");
}

int main(void)
{
    CHECK_RUN(note_id_accepts_positive_decimal_integers);
    CHECK_RUN(note_id_drops_leading_zeros_like_postgres);
    CHECK_RUN(note_id_refuses_zero_and_empty);
    CHECK_RUN(note_id_refuses_signs_spaces_and_other_notations);
    CHECK_RUN(note_id_refuses_values_beyond_bigint);

    CHECK_RUN(tag_query_finds_tag_among_other_parameters);
    CHECK_RUN(tag_query_decodes_like_node_querystring);
    CHECK_RUN(tag_query_decodes_the_key_too);
    CHECK_RUN(tag_query_leaves_invalid_escapes_as_they_are);
    CHECK_RUN(tag_query_without_value_is_empty);
    CHECK_RUN(tag_query_missing_tag_is_an_error);
    CHECK_RUN(tag_query_repeated_tag_is_an_error);
    CHECK_RUN(tag_query_refuses_nul_and_invalid_utf8);
    CHECK_RUN(tag_query_long_keys_stay_in_bounds);

    CHECK_RUN(utf8_accepts_well_formed_text);
    CHECK_RUN(utf8_refuses_nul);
    CHECK_RUN(utf8_refuses_overlong_forms);
    CHECK_RUN(utf8_refuses_surrogates);
    CHECK_RUN(utf8_refuses_code_points_past_10ffff);
    CHECK_RUN(utf8_refuses_truncated_and_stray_bytes);
    CHECK_RUN(utf8_reads_only_len_bytes);

    CHECK_RUN(note_body_accepts_an_object_of_three_strings);
    CHECK_RUN(note_body_ignores_extra_fields);
    CHECK_RUN(note_body_missing_or_null_field_is_required);
    CHECK_RUN(note_body_field_of_another_type_must_be_a_string);
    CHECK_RUN(note_body_must_be_an_object);
    CHECK_RUN(note_body_refuses_invalid_json);
    CHECK_RUN(note_body_refuses_trailing_garbage);
    CHECK_RUN(note_body_refuses_what_json_parse_refuses);
    CHECK_RUN(note_body_duplicate_key_takes_the_last_value);
    CHECK_RUN(note_body_refuses_raw_control_characters_in_strings);
    CHECK_RUN(note_body_refuses_nul);
    CHECK_RUN(note_body_escaped_backslash_before_u0000_is_text);
    CHECK_RUN(note_body_refuses_invalid_utf8);
    CHECK_RUN(note_body_decodes_escapes_to_utf8);
    CHECK_RUN(note_body_deep_nesting_does_not_crash);
    CHECK_RUN(note_body_null_pointer_is_empty);
    CHECK_RUN(query_param_finds_the_first_and_counts_repeats);
    CHECK_RUN(whole_number_reads_digits_up_to_max);
    CHECK_RUN(whole_number_tells_a_long_number_from_a_bad_one);
    CHECK_RUN(whole_number_holds_a_max_under_nine);
    CHECK_RUN(query_number_reads_whole_numbers_up_to_max);
    CHECK_RUN(query_number_decodes_escapes_first);
    CHECK_RUN(query_number_agrees_with_a_reference_on_random_values);
    CHECK_RUN(note_body_stores_lone_surrogates_as_replacement_characters);
    CHECK_RUN(decode_path_decodes_escapes_but_not_plus);
    return check_summary();
}
