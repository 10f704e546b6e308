/*
 * number_reference.h - what validate_query_number should answer, written the
 * obvious way for the property test (test_validate.c) and the fuzz target
 * (tests/fuzz/fuzz_query_number.c) to compare it with: the value decoded
 * into a buffer as Node's querystring.unescape would ('+' a space, a '%'
 * followed by two hex digits the byte they name, anything else as it is),
 * then checked to be ASCII digits and read with strtoull, whose ERANGE says
 * "larger than any uint64_t". Slow and allocating, and so much the easier to
 * believe.
 */
#ifndef NOTESD_NUMBER_REFERENCE_H
#define NOTESD_NUMBER_REFERENCE_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 with *out set for a whole number in 0..max, -1 for anything else. */
static int reference_number(const char *value, size_t len, uint64_t max, uint64_t *out)
{
    char *decoded = malloc(len + 1);
    size_t n = 0;
    if (decoded == NULL)
        abort();
    for (size_t i = 0; i < len; i++) {
        if (value[i] == '+') {
            decoded[n++] = ' ';
        } else if (value[i] == '%' && i + 2 < len && isxdigit((unsigned char)value[i + 1]) &&
                   isxdigit((unsigned char)value[i + 2])) {
            char hex[3] = {value[i + 1], value[i + 2], '\0'};
            decoded[n++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            decoded[n++] = value[i];
        }
    }
    decoded[n] = '\0';
    int digits = n > 0;
    for (size_t i = 0; i < n; i++)
        digits &= decoded[i] >= '0' && decoded[i] <= '9';
    int rc = -1;
    if (digits) {
        errno = 0;
        unsigned long long v = strtoull(decoded, NULL, 10);
        if (errno == 0 && v <= max) {
            *out = v;
            rc = 1;
        }
    }
    free(decoded);
    return rc;
}

#endif
