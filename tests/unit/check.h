/*
 * check.h - the assertions of the unit tests.
 *
 * A failed check prints file:line, what was expected and what was found, and
 * the test goes on, so one run shows every failure. Each test binary ends
 * with `return check_summary();`, which prints "N passed, M failed" and gives
 * the exit status CTest reads. Header-only: every test is one executable.
 *
 * Argument order is always (actual, expected), as in `CHECK_INT_EQ(rc, 0)`.
 */
#ifndef NOTESD_CHECK_H
#define NOTESD_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;
static const char *check_current_test = "?";

/* Runs one test function and names it in the failure messages it causes. */
#define CHECK_RUN(fn)                                                                              \
    do {                                                                                           \
        check_current_test = #fn;                                                                  \
        fn();                                                                                      \
    } while (0)

/* Prints `len` bytes as a C string literal, so control bytes and NULs are visible. */
static inline void check_print_bytes(const char *s, size_t len)
{
    if (s == NULL) {
        fputs("(null)", stderr);
        return;
    }
    fputc('"', stderr);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(stderr, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fputc('"', stderr);
}

/* Counts one check; on failure prints where, and returns 0 so the caller can add details. */
static inline int check_count(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        check_passed++;
        return 1;
    }
    check_failed++;
    fprintf(stderr, "%s:%d: %s: check failed: %s\n", file, line, check_current_test, what);
    return 0;
}

static inline void check_int_eq(long long actual, long long expected, const char *file, int line,
                                const char *what)
{
    if (!check_count(actual == expected, file, line, what))
        fprintf(stderr, "    expected: %lld\n    actual:   %lld\n", expected, actual);
}

static inline void check_mem_eq(const char *actual, size_t actual_len, const char *expected,
                                size_t expected_len, const char *file, int line, const char *what)
{
    int ok = actual != NULL && expected != NULL && actual_len == expected_len &&
             memcmp(actual, expected, actual_len) == 0;
    if (actual == NULL && expected == NULL)
        ok = 1;
    if (!check_count(ok, file, line, what)) {
        fprintf(stderr, "    expected: ");
        check_print_bytes(expected, expected_len);
        fprintf(stderr, " (%zu bytes)\n    actual:   ", expected_len);
        check_print_bytes(actual, actual_len);
        fprintf(stderr, " (%zu bytes)\n", actual_len);
    }
}

#define CHECK(cond) check_count((cond) != 0, __FILE__, __LINE__, #cond)

#define CHECK_INT_EQ(actual, expected)                                                             \
    check_int_eq((long long)(actual), (long long)(expected), __FILE__, __LINE__,                   \
                 #actual " == " #expected)

/* Compares NUL-terminated strings; NULL equals only NULL. */
#define CHECK_STR_EQ(actual, expected)                                                             \
    do {                                                                                           \
        const char *check_a_ = (actual), *check_e_ = (expected);                                   \
        check_mem_eq(check_a_, check_a_ != NULL ? strlen(check_a_) : 0, check_e_,                  \
                     check_e_ != NULL ? strlen(check_e_) : 0, __FILE__, __LINE__,                  \
                     #actual " == " #expected);                                                    \
    } while (0)

/* Compares `len` bytes at `ptr` with a string literal, which may contain "\0" (the
 * `"" lit` makes anything but a literal a compile error, since sizeof would lie). */
#define CHECK_MEM_EQ(ptr, len, lit)                                                                \
    check_mem_eq((const char *)(ptr), (len), "" lit, sizeof("" lit) - 1, __FILE__, __LINE__,       \
                 #ptr " == " #lit)

/* Prints the final line and returns the exit status: 0 only if nothing failed. */
static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    fflush(stdout);
    return check_failed == 0 ? 0 : 1;
}

#endif
