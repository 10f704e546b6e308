/*
 * fuzz_validate_id.c - libFuzzer target for validate_note_id (server/validate.c).
 *
 * Invariants: an accepted id is canonical (1..19 ASCII digits, no leading
 * zero, at most 9223372036854775807) and equals the input without its leading
 * zeros; a refused one comes with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char canon[21];
    const char *err = NULL;
    const char *s = (const char *)data;

    if (validate_note_id(s, size, canon, &err) != 0) {
        if (err == NULL || err[0] == '\0')
            abort();
        return 0;
    }
    size_t n = strnlen(canon, sizeof(canon));
    if (n < 1 || n > 19 || canon[0] == '0')
        abort();
    for (size_t i = 0; i < n; i++)
        if (canon[i] < '0' || canon[i] > '9')
            abort();
    if (n == 19 && memcmp(canon, "9223372036854775807", 19) > 0)
        abort();
    /* The input is the canonical text, possibly after leading zeros. */
    if (size < n || memcmp(s + size - n, canon, n) != 0)
        abort();
    for (size_t i = 0; i < size - n; i++)
        if (s[i] != '0')
            abort();
    return 0;
}
