/*
 * hex.h - hexadecimal digits: the one reader of them, for the %XX escapes of
 * paths and query strings (validate.c), JSON's \uXXXX escapes (json_strict.c)
 * and the W3C traceparent header (traceparent.c).
 *
 * Pure functions with no includes of ours, at the bottom of the layers, so
 * that each of those modules can use them (validate.c uses json_strict.c, so
 * neither could hold them for the other).
 */
#ifndef NOTESD_HEX_H
#define NOTESD_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Which letters a digit may be written with. */
enum hex_case {
    HEX_ANY_CASE,   /* a-f and A-F (percent escapes, JSON) */
    HEX_LOWER_CASE, /* a-f only (traceparent: upper case makes the header invalid) */
};

/* The value of one hex digit, 0 to 15, or -1 for any other character. */
int hex_digit(char c, enum hex_case letters);

/* Reads exactly `n` (at most 16) hex digits into *out. Returns 0, or -1 when
 * any of them is not a digit (*out is then untouched). */
int hex_read(const char *s, size_t n, enum hex_case letters, uint64_t *out);

#endif
