/*
 * fuzz_tag_query.c - libFuzzer target for validate_tag_query (server/validate.c).
 *
 * The output buffer is exactly the documented len + 1 bytes on the heap, so
 * AddressSanitizer sees any write past it. Invariants of an accepted query:
 * the tag is valid UTF-8 without NUL, no longer than the query, and
 * NUL-terminated; a refused one comes with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = malloc(size + 1);
    size_t out_len = (size_t)-1;
    const char *err = NULL;

    if (out == NULL)
        return 0;
    if (validate_tag_query((const char *)data, size, out, &out_len, &err) != 0) {
        if (err == NULL || err[0] == '\0')
            abort();
    } else {
        if (out_len > size || out[out_len] != '\0' || strlen(out) != out_len ||
            !validate_utf8(out, out_len))
            abort();
        /* A value that needs no decoding must come back unchanged: "tag=<v>" alone. */
        if (size >= 4 && memcmp(data, "tag=", 4) == 0 && memchr(data + 4, '&', size - 4) == NULL &&
            memchr(data + 4, '%', size - 4) == NULL && memchr(data + 4, '+', size - 4) == NULL &&
            (out_len != size - 4 || memcmp(out, data + 4, out_len) != 0))
            abort();
    }
    free(out);
    return 0;
}
