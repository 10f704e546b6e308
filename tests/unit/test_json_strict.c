/*
 * test_json_strict.c - unit tests of server/json_strict.c: what JSON.parse
 * accepts and refuses, the fault named first, and the copy with lone
 * surrogates rewritten.
 *
 * Inputs are copied into exact-size heap buffers without a NUL, so a read past
 * the end shows up under AddressSanitizer.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "json_strict.h"

/* json_strict_check on an exact copy of the literal; *fixed is freed unless wanted. */
static const char *check_text(const char *lit, size_t len, char **fixed_out)
{
    char *s = malloc(len > 0 ? len : 1), *fixed = (char *)"unset";
    if (s == NULL)
        abort();
    memcpy(s, lit, len);
    const char *err = json_strict_check(s, len, &fixed);
    CHECK(memcmp(s, lit, len) == 0); /* the text itself is never written */
    if (err != NULL)
        CHECK(fixed == NULL);
    if (fixed_out != NULL)
        *fixed_out = fixed;
    else
        free(fixed);
    free(s);
    return err;
}

#define STRICT(lit) check_text("" lit, sizeof(lit) - 1, NULL)
#define OK(lit) CHECK(STRICT(lit) == NULL)
#define FAULT(lit, reason) CHECK_STR_EQ(STRICT(lit), reason)

static void accepts_every_kind_of_value(void)
{
    OK("{}");
    OK(" [ ] ");
    OK("{\"a\":[1,-2,3.5,4e10,-0.5E-3,true,false,null,\"x\"],\"b\":{\"c\":\"\"}}");
    OK("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"");
    OK("0");
    OK("\t\r\n 17 \n");
    OK("\"\\ud83d\\ude00\""); /* a surrogate pair */
}

static void refuses_what_json_parse_refuses(void)
{
    FAULT("", JSON_STRICT_INVALID);
    FAULT("01", JSON_STRICT_INVALID);
    FAULT("1.", JSON_STRICT_INVALID);
    FAULT(".5", JSON_STRICT_INVALID);
    FAULT("1e", JSON_STRICT_INVALID);
    FAULT("+1", JSON_STRICT_INVALID);
    FAULT("[1,]", JSON_STRICT_INVALID);
    FAULT("{\"a\":1,}", JSON_STRICT_INVALID);
    FAULT("{'a':1}", JSON_STRICT_INVALID);
    FAULT("{a:1}", JSON_STRICT_INVALID);
    FAULT("[1\x01]", JSON_STRICT_INVALID); /* a control character between tokens */
    FAULT("{} {}", JSON_STRICT_INVALID);
    FAULT("tru", JSON_STRICT_INVALID);
    FAULT("\"\\x41\"", JSON_STRICT_INVALID);
    FAULT("\"\\u12\"", JSON_STRICT_INVALID);
    FAULT("\"abc", JSON_STRICT_INVALID);
}

static void names_control_characters_and_nul_escapes(void)
{
    FAULT("{\"title\":\"a\nb\"}", JSON_STRICT_CONTROL);
    FAULT("{\"ti\x01tle\":\"T\"}", JSON_STRICT_CONTROL); /* in a key too */
    FAULT("[\"\x1f\"]", JSON_STRICT_CONTROL);
    FAULT("{\"t\":\"a\\u0000b\"}", JSON_STRICT_NUL);
    FAULT("[\"\\\\\\u0000\"]", JSON_STRICT_NUL); /* an escaped backslash, then the escape */
    OK("[\"\\\\u0000\"]");                       /* a backslash, then the letters u0000 */
    OK("[\"\\u0001\"]");
}

/* One pass: the first fault in reading order is the one named. */
static void names_the_first_fault_in_reading_order(void)
{
    FAULT("{\"a\":\"\\u0000\",\"b\":01}", JSON_STRICT_NUL);
    FAULT("{\"a\":01,\"b\":\"\\u0000\"}", JSON_STRICT_INVALID);
    FAULT("[\"x\ty\",\"\\u0000\"]", JSON_STRICT_CONTROL);
    FAULT("[\"\\u0000\",\"x\ty\"]", JSON_STRICT_NUL);
}

static void refuses_nesting_deeper_than_512(void)
{
    char deep[2 * 513];
    memset(deep, '[', 513);
    memset(deep + 513, ']', 513);
    CHECK_STR_EQ(check_text(deep, sizeof(deep), NULL), JSON_STRICT_INVALID);
    CHECK(check_text(deep + 1, sizeof(deep) - 2, NULL) == NULL); /* 512 deep */
}

/* Lone surrogates are kept as U+FFFD, in a copy; pairs and other escapes stay. */
static void rewrites_lone_surrogates_in_a_copy(void)
{
    static const char text[] = "[\"\\ud800x\",\"\\ud83d\\ude00\",\"\\udc00\\ud800\",\"\\u00e9\"]";
    char *fixed = NULL;

    CHECK(check_text(text, sizeof(text) - 1, &fixed) == NULL);
    CHECK(fixed != NULL);
    if (fixed != NULL)
        CHECK_MEM_EQ(fixed, sizeof(text) - 1,
                     "[\"\\ufffdx\",\"\\ud83d\\ude00\",\"\\ufffd\\ufffd\",\"\\u00e9\"]");
    free(fixed);

    /* none: no copy */
    CHECK(check_text("[\"\\ud83d\\ude00\"]", 16, &fixed) == NULL);
    CHECK(fixed == NULL);
    /* a fault after a lone surrogate: no copy handed back (and none leaked) */
    CHECK_STR_EQ(check_text("[\"\\ud800\",01]", 13, &fixed), JSON_STRICT_INVALID);
    CHECK(fixed == NULL);
}

int main(void)
{
    CHECK_RUN(accepts_every_kind_of_value);
    CHECK_RUN(refuses_what_json_parse_refuses);
    CHECK_RUN(names_control_characters_and_nul_escapes);
    CHECK_RUN(names_the_first_fault_in_reading_order);
    CHECK_RUN(refuses_nesting_deeper_than_512);
    CHECK_RUN(rewrites_lone_surrogates_in_a_copy);
    return check_summary();
}
