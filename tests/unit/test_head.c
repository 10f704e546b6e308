/*
 * test_head.c - unit tests of server/head.c: the path of an absolute-form
 * target, the framing fields of an HTTP/1 request head, and a value
 * without the whitespace around it.
 *
 * Inputs are copied into exact-size heap buffers, so a read past the end
 * shows up under AddressSanitizer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "head.h"

/* A heap copy of exactly `len` bytes, without a terminating NUL. */
static char *exact_copy(const char *s, size_t len)
{
    char *p = malloc(len > 0 ? len : 1);
    if (p == NULL)
        abort();
    memcpy(p, s, len);
    return p;
}

static void origin_form_finds_the_path_of_an_absolute_target(void)
{
    CHECK_INT_EQ(head_origin_form("/status", 7), 0);
    CHECK_INT_EQ(head_origin_form("http://h/status", 15), 8);
    CHECK_INT_EQ(head_origin_form("HTTPS://h:1/x?y", 15), 11);
    CHECK_INT_EQ(head_origin_form("http://h", 8), 8);
    CHECK_INT_EQ(head_origin_form("http://h?x", 10), 8);
    CHECK_INT_EQ(head_origin_form("*", 1), SIZE_MAX);
    CHECK_INT_EQ(head_origin_form("ftp://h/x", 9), SIZE_MAX);
    CHECK_INT_EQ(head_origin_form("h/x", 3), SIZE_MAX);
    CHECK_INT_EQ(head_origin_form("", 0), SIZE_MAX);
}

#define FRAMING(lit) framing("" lit, sizeof(lit) - 1)

static int framing(const char *lit, size_t len)
{
    char *s = exact_copy(lit, len);
    const char *err = NULL;
    int rc = head_framing(s, len, &err);
    CHECK(rc == 0 ? err == NULL : err != NULL && err[0] != '\0');
    free(s);
    return rc;
}

static void framing_refuses_a_repeated_length(void)
{
    /* even when the values agree, as Node's parser refuses it */
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length:5 \r\n\r\n"), -1);
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), -1);
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\ncontent-length:5\nX: y\nCONTENT-LENGTH: 50\n\n"), -1);
    CHECK_INT_EQ(
        FRAMING("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"), -1);
    CHECK_INT_EQ(
        FRAMING("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 0\r\n\r\n"), -1);
}

static void framing_accepts_one_length_or_chunked(void)
{
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"), 0);
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 0);
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nX-Content-Length: 1\r\nContent-Length: 2\r\n\r\n"), 0);
    /* the head ends at the empty line: what follows is the body */
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nContent-Length: 20\r\n\r\nContent-Length: 1\r\n"), 0);
    /* a request line that looks like a field is not one */
    CHECK_INT_EQ(FRAMING("content-length: 1\r\nContent-Length: 2\r\n\r\n"), 0);
    CHECK_INT_EQ(FRAMING("POST / HTTP/1.1\r\nContent-Length: 5"), 0);
    CHECK_INT_EQ(FRAMING(""), 0);
}

/* Trims `lit` and compares what is left with `want`. */
#define TRIMS_TO(lit, want)                                                                        \
    do {                                                                                           \
        const char *v_ = lit;                                                                      \
        size_t n_ = head_trim(&v_, sizeof(lit) - 1);                                               \
        CHECK_MEM_EQ(v_, n_, want);                                                                \
    } while (0)

static void values_lose_the_spaces_and_tabs_around_them(void)
{
    TRIMS_TO("2", "2");
    TRIMS_TO("2 ", "2");
    TRIMS_TO(" \t2\t ", "2");
    TRIMS_TO("a b", "a b"); /* inside a value they stay */
    TRIMS_TO("   ", "");
    TRIMS_TO("", "");
    TRIMS_TO("2\r", "2\r"); /* only SP and HTAB are whitespace there (RFC 9110 section 5.6.3) */
}

int main(void)
{
    CHECK_RUN(origin_form_finds_the_path_of_an_absolute_target);
    CHECK_RUN(framing_refuses_a_repeated_length);
    CHECK_RUN(framing_accepts_one_length_or_chunked);
    CHECK_RUN(values_lose_the_spaces_and_tabs_around_them);
    return check_summary();
}
