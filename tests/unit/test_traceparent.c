/*
 * test_traceparent.c - unit tests of server/traceparent.c: the W3C Trace
 * Context header's grammar, its edge cases, and writing it back.
 */
#include <string.h>
#include "check.h"
#include "traceparent.h"

#define EXAMPLE "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parse(const char *s, traceparent_t *tp)
{
    return traceparent_parse(s, strlen(s), tp);
}

static void the_specification_example_is_read_field_by_field(void)
{
    traceparent_t tp;
    CHECK_INT_EQ(parse(EXAMPLE, &tp), 0);
    CHECK(tp.trace_hi == 0x4bf92f3577b34da6ULL);
    CHECK(tp.trace_lo == 0xa3ce929d0e0e4736ULL);
    CHECK(tp.parent_id == 0x00f067aa0ba902b7ULL);
    CHECK_INT_EQ(tp.version, 0);
    CHECK_INT_EQ(tp.flags, 1);
    char hex[TRACEPARENT_TRACE_ID_HEX], back[TRACEPARENT_LEN];
    traceparent_trace_id_hex(tp.trace_hi, tp.trace_lo, hex);
    CHECK_MEM_EQ(hex, sizeof(hex), "4bf92f3577b34da6a3ce929d0e0e4736");
    traceparent_format(&tp, back);
    CHECK_MEM_EQ(back, sizeof(back), EXAMPLE);
}

static void malformed_values_are_refused(void)
{
    static const char *bad[] = {
        "",
        "00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    /* short flags */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* upper case */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  /* 00 with more */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 x", /* more after a space */
        "00-4bf92f3577b34da6a3ce929d0e0e4736 -00f067aa0ba902b7-01",  /* space inside */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero parent id */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* not hex */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* separator */
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   /* field lengths */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  /* later version, no "-" */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",   /* flags not hex */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        traceparent_t tp = {0};
        if (!check_count(parse(bad[i], &tp) == -1, __FILE__, __LINE__, "refused"))
            fprintf(stderr, "    accepted: \"%s\"\n", bad[i]);
    }
}

/* RFC 9110 section 5.5: the spaces and tabs around a field's value are not
 * part of it; h2o 2.2.5 keeps the ones after it. */
static void the_whitespace_around_a_value_is_not_part_of_it(void)
{
    static const char *spaced[] = {
        EXAMPLE " ",
        EXAMPLE "\t \t",
        "  " EXAMPLE,
        "\t" EXAMPLE " ",
    };
    for (size_t i = 0; i < sizeof(spaced) / sizeof(spaced[0]); i++) {
        traceparent_t tp = {0};
        if (!check_count(parse(spaced[i], &tp) == 0, __FILE__, __LINE__, "accepted"))
            fprintf(stderr, "    refused: \"%s\"\n", spaced[i]);
        CHECK(tp.trace_hi == 0x4bf92f3577b34da6ULL && tp.flags == 1);
    }
}

static void a_later_version_keeps_its_first_fields_and_ignores_the_rest(void)
{
    traceparent_t tp;
    CHECK_INT_EQ(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-ever", &tp),
                 0);
    CHECK_INT_EQ(tp.version, 0xcc);
    CHECK_INT_EQ(tp.flags, 9);
    CHECK_INT_EQ(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09", &tp), 0);
    /* written back as version 00, the one notesd speaks */
    char back[TRACEPARENT_LEN];
    traceparent_format(&tp, back);
    CHECK_MEM_EQ(back, sizeof(back), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09");
}

static void a_value_is_read_only_within_its_length(void)
{
    /* The header value is not NUL-terminated in h2o: a longer buffer must not leak in. */
    const char buf[] = EXAMPLE "-junk";
    traceparent_t tp;
    CHECK_INT_EQ(traceparent_parse(buf, TRACEPARENT_LEN, &tp), 0);
    CHECK_INT_EQ(traceparent_parse(buf, TRACEPARENT_LEN - 1, &tp), -1);
}

int main(void)
{
    CHECK_RUN(the_specification_example_is_read_field_by_field);
    CHECK_RUN(malformed_values_are_refused);
    CHECK_RUN(the_whitespace_around_a_value_is_not_part_of_it);
    CHECK_RUN(a_later_version_keeps_its_first_fields_and_ignores_the_rest);
    CHECK_RUN(a_value_is_read_only_within_its_length);
    return check_summary();
}
