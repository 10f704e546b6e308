/*
 * fuzz_query_number.c - libFuzzer target for validate_query_number and
 * validate_whole_number (server/validate.c), the one parser of numbers.
 *
 * The input's first byte picks the max (a small one, a power of ten or one
 * around 2^64, or the next eight bytes as a number); the rest is a query
 * string. Invariants: the parser agrees with the obvious decoder and strtoull
 * of tests/unit/number_reference.h, on the value up to the first '&', both on
 * whether it is a number within the max and on its value; and the raw parser
 * (no decoding) agrees with it on a value that has no '%' and no '+'.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../unit/number_reference.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t maxes[] = {0, 1, 5, 8, 9, 10, 99, 60000, UINT64_MAX, UINT64_MAX / 10};
    uint64_t max;

    if (size < 1)
        return 0;
    if (data[0] < 16 * (sizeof(maxes) / sizeof(maxes[0]))) {
        max = maxes[data[0] / 16];
        data++, size--;
    } else {
        if (size < 9)
            return 0;
        memcpy(&max, data + 1, 8);
        data += 9, size -= 9;
    }
    /* "n=" and the rest, in a buffer of exactly its size for AddressSanitizer */
    char *query = malloc(size + 2);
    if (query == NULL)
        return 0;
    memcpy(query, "n=", 2);
    memcpy(query + 2, data, size);
    const char *value = query + 2, *amp = memchr(value, '&', size);
    size_t value_len = amp != NULL ? (size_t)(amp - value) : size;

    uint64_t got = 0, want = 0;
    int rc = validate_query_number(query, size + 2, "n", max, &got);
    int ref = reference_number(value, value_len, max, &want);
    if (rc != ref || (rc == 1 && got != want))
        abort();
    if (memchr(value, '%', value_len) == NULL && memchr(value, '+', value_len) == NULL) {
        uint64_t raw = 0;
        int whole = validate_whole_number(value, value_len, max, &raw);
        if ((whole == VALIDATE_NUMBER) != (ref == 1) || (whole == VALIDATE_NUMBER && raw != want))
            abort();
    }
    free(query);
    return 0;
}
