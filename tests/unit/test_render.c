/*
 * test_render.c - unit tests of server/render.c: timestamps, JSON strings,
 * note rows and the GET /json sample.
 *
 * Every expectation is a literal taken from Node 20 (Date.prototype.toISOString
 * and JSON.stringify), the runtime of the reference app, so these tests say
 * "the bytes are the reference's" without running Node.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "render.h"

/* ---- render_pg_timestamp ----------------------------------------------------------------- */

#define TS_OK(pg, want) ts_ok("" pg, sizeof(pg) - 1, want, __LINE__)
#define TS_ERR(pg) ts_err("" pg, sizeof(pg) - 1, __LINE__)

/* The input goes into an exact-size heap copy and the output into a heap buffer of
 * RENDER_ISO_LEN + 1 bytes, so AddressSanitizer sees any access past either. */
static void ts_ok(const char *lit, size_t len, const char *want, int line)
{
    char *pg = malloc(len > 0 ? len : 1), *out = malloc(RENDER_ISO_LEN + 1);
    memcpy(pg, lit, len);
    int rc = render_pg_timestamp(pg, len, out);
    check_int_eq(rc, 0, __FILE__, line, "render_pg_timestamp understands the text");
    if (rc == 0) {
        check_int_eq(out[RENDER_ISO_LEN], '\0', __FILE__, line, "output is NUL-terminated");
        check_mem_eq(out, strlen(out), want, strlen(want), __FILE__, line, "ISO time");
    }
    free(pg);
    free(out);
}

static void ts_err(const char *lit, size_t len, int line)
{
    char *pg = malloc(len > 0 ? len : 1), *out = malloc(RENDER_ISO_LEN + 1);
    memcpy(pg, lit, len);
    check_int_eq(render_pg_timestamp(pg, len, out), -1, __FILE__, line,
                 "render_pg_timestamp refuses the text");
    free(pg);
    free(out);
}

static void pg_timestamp_keeps_milliseconds_in_utc(void)
{
    TS_OK("2026-11-30 07:47:20.123456+00", "2026-11-30T07:47:20.123Z");
    TS_OK("2026-11-30 07:47:20.123+00", "2026-11-30T07:47:20.123Z");
    TS_OK("2000-01-01 00:00:00+00", "2000-01-01T00:00:00.000Z");
    TS_OK("1970-01-01 00:00:00+00", "1970-01-01T00:00:00.000Z");
}

/* node-postgres truncates the microseconds, it does not round them. */
static void pg_timestamp_truncates_the_fraction(void)
{
    TS_OK("2026-11-30 07:47:20.9999+00", "2026-11-30T07:47:20.999Z");
    TS_OK("2026-11-30 07:47:20.999999+00", "2026-11-30T07:47:20.999Z");
    TS_OK("2026-11-30 07:47:20.0005+00", "2026-11-30T07:47:20.000Z");
    TS_OK("2026-11-30 07:47:20.1239+00", "2026-11-30T07:47:20.123Z");
}

static void pg_timestamp_pads_a_short_fraction(void)
{
    TS_OK("2026-11-30 07:47:20+00", "2026-11-30T07:47:20.000Z");
    TS_OK("2026-11-30 07:47:20.5+00", "2026-11-30T07:47:20.500Z");
    TS_OK("2026-11-30 07:47:20.05+00", "2026-11-30T07:47:20.050Z");
    TS_OK("2026-11-30 07:47:20.007+00", "2026-11-30T07:47:20.007Z");
}

static void pg_timestamp_applies_the_offset(void)
{
    TS_OK("2026-11-30 07:47:20+05:30", "2026-11-30T02:17:20.000Z");
    TS_OK("2026-11-30 07:47:20-08", "2026-11-30T15:47:20.000Z");
    TS_OK("2026-11-30 07:47:20+05:45", "2026-11-30T02:02:20.000Z");
    TS_OK("2026-11-30 07:47:20-03:30:15", "2026-11-30T11:17:35.000Z");
    TS_OK("1899-12-31 23:59:59.999-00:00", "1899-12-31T23:59:59.999Z");
    TS_OK("1900-01-01 00:00:00+00:53:28", "1899-12-31T23:06:32.000Z");
    TS_OK("2026-11-30 07:47:20.123456-00", "2026-11-30T07:47:20.123Z");
}

static void pg_timestamp_offset_crosses_day_month_and_year(void)
{
    TS_OK("2024-03-01 01:00:00+05", "2024-02-29T20:00:00.000Z"); /* leap day */
    TS_OK("2023-03-01 00:30:00+01", "2023-02-28T23:30:00.000Z"); /* no leap day */
    TS_OK("2100-02-28 23:00:00-01", "2100-03-01T00:00:00.000Z"); /* 2100 is not leap */
    TS_OK("2000-02-28 23:00:00-01", "2000-02-29T00:00:00.000Z"); /* 2000 is */
    TS_OK("2026-11-30 23:30:00-03", "2026-12-01T02:30:00.000Z");
    TS_OK("2026-01-31 23:00:00-02", "2026-02-01T01:00:00.000Z");
    TS_OK("2025-12-31 20:00:00-05", "2026-01-01T01:00:00.000Z");
    TS_OK("2026-01-01 03:00:00+05", "2025-12-31T22:00:00.000Z");
    TS_OK("1970-01-01 00:00:00+01", "1969-12-31T23:00:00.000Z");
}

static void pg_timestamp_covers_years_0001_to_9999(void)
{
    TS_OK("0001-01-01 00:00:00+00", "0001-01-01T00:00:00.000Z");
    TS_OK("0001-01-01 05:00:00+05", "0001-01-01T00:00:00.000Z");
    TS_OK("0001-01-01 00:00:00+01", "0000-12-31T23:00:00.000Z");
    TS_OK("9999-12-31 23:59:59.999999+00", "9999-12-31T23:59:59.999Z");
    TS_OK("9999-12-31 23:59:59+01", "9999-12-31T22:59:59.000Z");
    /* toISOString writes +010000-...; not something to imitate here. */
    TS_ERR("9999-12-31 23:00:00-01");
}

static void pg_timestamp_refuses_what_it_does_not_understand(void)
{
    TS_ERR("");
    TS_ERR("2026");
    TS_ERR("2026-11-30");
    TS_ERR("2026-11-30 07:47");
    TS_ERR("2026-11-30 07:47:20");        /* no offset: a timestamp without time zone */
    TS_ERR("2026-11-30 07:47:20.123");    /* no offset */
    TS_ERR("2026-11-30 07:47:20.+00");    /* a dot without digits */
    TS_ERR("2026-11-30T07:47:20+00");     /* not PostgreSQL's ISO DateStyle */
    TS_ERR("2026-11-30 07:47:20Z");       /* nor is Z */
    TS_ERR("2026-11-30 07:47:20+0");      /* one-digit offset */
    TS_ERR("2026-11-30 07:47:20+00:");    /* dangling colon */
    TS_ERR("2026-11-30 07:47:20+00:3");   /* one-digit minutes */
    TS_ERR("2026-11-30 07:47:20+00:30:"); /* dangling colon after the minutes */
    TS_ERR("2026-11-30 07:47:20+00 ");    /* trailing space */
    TS_ERR("2026-11-30 07:47:20+00 BC");  /* a BC date */
    TS_ERR("2026-13-01 00:00:00+00");
    TS_ERR("2026-00-01 00:00:00+00");
    TS_ERR("2026-11-00 00:00:00+00");
    TS_ERR("2026-11-32 00:00:00+00");
    TS_ERR("2026-11-30 25:00:00+00");
    TS_ERR("2026-11-30 07:60:00+00");
    TS_ERR("2026-11-30 07:47:61+00");
    TS_ERR("26-11-30 07:47:20+00");
    TS_ERR("12026-11-30 07:47:20+00");
    TS_ERR("-026-11-30 07:47:20+00");
    TS_ERR("2026/11/30 07:47:20+00");
    TS_ERR("infinity");
    TS_ERR("-infinity");
    TS_ERR("2026-11-30 07:47:20\0+00");
}

static void pg_timestamp_refuses_every_truncation(void)
{
    const char full[] = "2026-11-30 07:47:20.123456+05:30";
    char out[RENDER_ISO_LEN + 1];
    /* Every proper prefix is refused, except the one that stops after the "+05" hours. */
    for (size_t len = 0; len < sizeof(full) - 1; len++) {
        int rc = render_pg_timestamp(full, len, out);
        if (len == sizeof(full) - 1 - 3) {
            CHECK_INT_EQ(rc, 0); /* "...+05" */
            CHECK_STR_EQ(out, "2026-11-30T02:47:20.123Z");
        } else if (!check_count(rc == -1, __FILE__, __LINE__, "a prefix is refused")) {
            fprintf(stderr, "    prefix of %zu bytes\n", len);
        }
    }
}

/* ---- render_iso_from_ms ------------------------------------------------------------------ */

static void iso_from_ms_matches_to_iso_string(void)
{
    char out[RENDER_ISO_LEN + 1];

    render_iso_from_ms(0, out);
    CHECK_STR_EQ(out, "1970-01-01T00:00:00.000Z");
    render_iso_from_ms(-1, out);
    CHECK_STR_EQ(out, "1969-12-31T23:59:59.999Z");
    render_iso_from_ms(-86400001, out);
    CHECK_STR_EQ(out, "1969-12-30T23:59:59.999Z");
    render_iso_from_ms(-2208988800000LL, out);
    CHECK_STR_EQ(out, "1900-01-01T00:00:00.000Z");
    render_iso_from_ms(951782400000LL, out);
    CHECK_STR_EQ(out, "2000-02-29T00:00:00.000Z");
    render_iso_from_ms(1796024840123LL, out);
    CHECK_STR_EQ(out, "2026-11-30T07:47:20.123Z");
    render_iso_from_ms(-62135596800000LL, out);
    CHECK_STR_EQ(out, "0001-01-01T00:00:00.000Z");
    render_iso_from_ms(-62167219200000LL, out);
    CHECK_STR_EQ(out, "0000-01-01T00:00:00.000Z");
    render_iso_from_ms(253402300799999LL, out);
    CHECK_STR_EQ(out, "9999-12-31T23:59:59.999Z");
    CHECK_INT_EQ(strlen(out), RENDER_ISO_LEN);
}

/* ---- render_json_string ------------------------------------------------------------------ */

#define JSON_STR_IS(lit, want)                                                                     \
    json_str_is("" lit, sizeof(lit) - 1, "" want, sizeof(want) - 1, __LINE__)

static void json_str_is(const char *s, size_t len, const char *want, size_t want_len, int line)
{
    size_t cap = RENDER_JSON_STRING_BOUND(len);
    char *buf = malloc(cap);
    char *end = render_json_string(buf, s, len);
    size_t n = (size_t)(end - buf);
    check_int_eq(n <= cap, 1, __FILE__, line, "output fits RENDER_JSON_STRING_BOUND");
    check_mem_eq(buf, n, want, want_len, __FILE__, line, "JSON string");
    free(buf);
}

static void json_string_escapes_like_json_stringify(void)
{
    JSON_STR_IS("", "\"\"");
    JSON_STR_IS("plain", "\"plain\"");
    JSON_STR_IS("a\"b", "\"a\\\"b\"");
    JSON_STR_IS("a\\b", "\"a\\\\b\"");
    JSON_STR_IS("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
    JSON_STR_IS("a/b</script>", "\"a/b</script>\"");
}

static void json_string_escapes_other_controls_as_lowercase_u00xx(void)
{
    char all[32];
    for (int i = 0; i < 32; i++)
        all[i] = (char)i;
    size_t cap = RENDER_JSON_STRING_BOUND(sizeof(all));
    char *buf = malloc(cap);
    char *end = render_json_string(buf, all, sizeof(all));
    CHECK(end - buf <= (long)cap);
    CHECK_MEM_EQ(buf, (size_t)(end - buf),
                 "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r"
                 "\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018"
                 "\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"");
    free(buf);
}

static void json_string_passes_del_and_non_ascii_through(void)
{
    JSON_STR_IS("\x7f", "\"\x7f\"");
    JSON_STR_IS("caf\xc3\xa9", "\"caf\xc3\xa9\"");
    JSON_STR_IS("\xe2\x80\xa8\xe2\x80\xa9", "\"\xe2\x80\xa8\xe2\x80\xa9\""); /* U+2028, U+2029 */
    JSON_STR_IS("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
    JSON_STR_IS("\xef\xbb\xbf", "\"\xef\xbb\xbf\""); /* U+FEFF */
}

static void json_string_bound_holds_for_the_worst_case(void)
{
    /* Every byte 0x01..0x1f except the five short escapes takes six bytes. */
    char worst[64];
    memset(worst, 0x01, sizeof(worst));
    size_t cap = RENDER_JSON_STRING_BOUND(sizeof(worst));
    char *buf = malloc(cap);
    char *end = render_json_string(buf, worst, sizeof(worst));
    CHECK_INT_EQ(end - buf, 6 * 64 + 2);
    CHECK(end - buf <= (long)cap);
    free(buf);
}

/* ---- render_note ------------------------------------------------------------------------- */

static note_row_t row_of(const char *id, const char *title, size_t title_len, const char *body,
                         size_t body_len, const char *tag, const char *created_at)
{
    note_row_t row = {id,         title,     body,     tag,         created_at,
                      strlen(id), title_len, body_len, strlen(tag), strlen(created_at)};
    return row;
}

static void note_renders_the_row_exactly(void)
{
    note_row_t row = row_of("42", "Hello \"world\"", 13, "line1\nline2\ttab", 15, "js",
                            "2026-11-30 07:47:20.123456+00");
    size_t cap = render_note_bound(&row);
    char *buf = malloc(cap);
    char *end = render_note(buf, &row);
    CHECK(end != NULL);
    if (end != NULL) {
        CHECK(end - buf <= (long)cap);
        CHECK_MEM_EQ(
            buf, (size_t)(end - buf),
            "{\"id\":\"42\",\"title\":\"Hello \\\"world\\\"\",\"body\":\"line1\\nline2\\ttab\","
            "\"tag\":\"js\",\"created_at\":\"2026-11-30T07:47:20.123Z\"}");
    }
    free(buf);
}

static void note_renders_unicode_and_an_offset(void)
{
    note_row_t row =
        row_of("9223372036854775807", "\x01", 1, "\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80/", 10, "",
               "2024-03-01 01:00:00+05");
    size_t cap = render_note_bound(&row);
    char *buf = malloc(cap);
    char *end = render_note(buf, &row);
    CHECK(end != NULL);
    if (end != NULL)
        CHECK_MEM_EQ(
            buf, (size_t)(end - buf),
            "{\"id\":\"9223372036854775807\",\"title\":\"\\u0001\",\"body\":\"\xc3\xa9\xe2"
            "\x80\xa8\xf0\x9f\x98\x80/\",\"tag\":\"\",\"created_at\":\"2024-02-29T20:00:00."
            "000Z\"}");
    free(buf);
}

static void note_bound_holds_for_all_control_characters(void)
{
    char worst[256];
    for (size_t i = 0; i < sizeof(worst); i++)
        worst[i] = (char)(i % 32 == 8 ? 1 : i % 32); /* mostly six-byte escapes */
    const char *ids[] = {"1", "9223372036854775807"};
    for (size_t k = 0; k < 2; k++) {
        note_row_t row = row_of(ids[k], worst, sizeof(worst), worst, sizeof(worst), "x",
                                "2026-11-30 07:47:20.123456+05:30");
        row.tag = worst, row.tag_len = sizeof(worst);
        size_t cap = render_note_bound(&row);
        char *buf = malloc(cap); /* exact size: ASan catches an overrun */
        char *end = render_note(buf, &row);
        CHECK(end != NULL);
        if (end != NULL && !check_count((size_t)(end - buf) <= cap, __FILE__, __LINE__,
                                        "render_note stays within render_note_bound"))
            fprintf(stderr, "    bound %zu, wrote %zu\n", cap, (size_t)(end - buf));
        free(buf);
    }
    /* Empty strings: the fixed part alone must fit too. */
    note_row_t row = row_of("1", "", 0, "", 0, "", "2026-11-30 07:47:20+00");
    size_t cap = render_note_bound(&row);
    char *buf = malloc(cap);
    char *end = render_note(buf, &row);
    CHECK(end != NULL && (size_t)(end - buf) <= cap);
    free(buf);
}

static void note_with_a_bad_timestamp_is_null(void)
{
    note_row_t row = row_of("1", "t", 1, "b", 1, "js", "yesterday");
    char *buf = malloc(render_note_bound(&row));
    CHECK(render_note(buf, &row) == NULL);
    row = row_of("1", "t", 1, "b", 1, "js", "2026-11-30 07:47:20");
    CHECK(render_note(buf, &row) == NULL);
    free(buf);
}

/* ---- render_json_sample ------------------------------------------------------------------ */

static void json_sample_matches_the_seed(void)
{
    char buf[512];
    size_t n = render_json_sample(buf, sizeof(buf), 8, 1796024840123LL);
    CHECK_MEM_EQ(buf, n,
                 "{\"id\":8,\"title\":\"Note 8 about js\",\"body\":\"Seeded note body for the JS "
                 "test. Seeded note body for the JS test. Seeded note body for the JS test. Seeded "
                 "note body for the JS test. \",\"tag\":\"js\",\"created_at\":\"2026-11-30T07:47:"
                 "20.123Z\"}");
    n = render_json_sample(buf, sizeof(buf), 13, 0);
    CHECK_MEM_EQ(
        buf, n,
        "{\"id\":13,\"title\":\"Note 13 about postgres\",\"body\":\"Seeded note body for "
        "the JS "
        "test. Seeded note body for the JS test. Seeded note body for the JS test. Seeded "
        "note body for the JS test. \",\"tag\":\"postgres\",\"created_at\":\"1970-01-01T00:00:"
        "00.000Z\"}");
}

static void json_sample_too_small_a_buffer_gives_zero(void)
{
    char buf[512];
    size_t n = render_json_sample(buf, sizeof(buf), 200000, 1796024840123LL);
    CHECK(n > 0);
    CHECK_INT_EQ(render_json_sample(buf, n, 200000, 1796024840123LL), 0);
    CHECK_INT_EQ(render_json_sample(buf, n + 1, 200000, 1796024840123LL), n);
}

static void tags_cycle_through_the_eight_seed_tags(void)
{
    CHECK_STR_EQ(notes_tags[0], "js");
    CHECK_STR_EQ(notes_tags[1], "ts");
    CHECK_STR_EQ(notes_tags[2], "node");
    CHECK_STR_EQ(notes_tags[3], "bun");
    CHECK_STR_EQ(notes_tags[4], "deno");
    CHECK_STR_EQ(notes_tags[5], "postgres");
    CHECK_STR_EQ(notes_tags[6], "http");
    CHECK_STR_EQ(notes_tags[7], "perf");
}

int main(void)
{
    CHECK_RUN(pg_timestamp_keeps_milliseconds_in_utc);
    CHECK_RUN(pg_timestamp_truncates_the_fraction);
    CHECK_RUN(pg_timestamp_pads_a_short_fraction);
    CHECK_RUN(pg_timestamp_applies_the_offset);
    CHECK_RUN(pg_timestamp_offset_crosses_day_month_and_year);
    CHECK_RUN(pg_timestamp_covers_years_0001_to_9999);
    CHECK_RUN(pg_timestamp_refuses_what_it_does_not_understand);
    CHECK_RUN(pg_timestamp_refuses_every_truncation);

    CHECK_RUN(iso_from_ms_matches_to_iso_string);

    CHECK_RUN(json_string_escapes_like_json_stringify);
    CHECK_RUN(json_string_escapes_other_controls_as_lowercase_u00xx);
    CHECK_RUN(json_string_passes_del_and_non_ascii_through);
    CHECK_RUN(json_string_bound_holds_for_the_worst_case);

    CHECK_RUN(note_renders_the_row_exactly);
    CHECK_RUN(note_renders_unicode_and_an_offset);
    CHECK_RUN(note_bound_holds_for_all_control_characters);
    CHECK_RUN(note_with_a_bad_timestamp_is_null);

    CHECK_RUN(json_sample_matches_the_seed);
    CHECK_RUN(json_sample_too_small_a_buffer_gives_zero);
    CHECK_RUN(tags_cycle_through_the_eight_seed_tags);
    return check_summary();
}
