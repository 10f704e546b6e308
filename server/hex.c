/*
 * hex.c - hexadecimal digits (see hex.h).
 */
#include "hex.h"

int hex_digit(char c, enum hex_case letters)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F' && letters == HEX_ANY_CASE)
        return c - 'A' + 10;
    return -1;
}

int hex_read(const char *s, size_t n, enum hex_case letters, uint64_t *out)
{
    uint64_t v = 0;
    if (n > 16)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(s[i], letters);
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}
