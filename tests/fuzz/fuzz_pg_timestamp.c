/*
 * fuzz_pg_timestamp.c - libFuzzer target for render_pg_timestamp (server/render.c).
 *
 * The output goes to a heap buffer of exactly RENDER_ISO_LEN + 1 (25) bytes, so
 * AddressSanitizer reports any write past it. An accepted timestamp must come
 * out as YYYY-MM-DDTHH:MM:SS.mmmZ with every field in its range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "render.h"

static int digits(const char *p, int n, int min, int max)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (p[i] - '0');
    }
    return v >= min && v <= max;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = malloc(RENDER_ISO_LEN + 1);
    if (out == NULL)
        return 0;
    if (render_pg_timestamp((const char *)data, size, out) == 0) {
        /* 0         1         2
         * 012345678901234567890123
         * 2026-11-30T07:47:20.123Z */
        if (out[RENDER_ISO_LEN] != '\0' || strlen(out) != RENDER_ISO_LEN || out[4] != '-' ||
            out[7] != '-' || out[10] != 'T' || out[13] != ':' || out[16] != ':' || out[19] != '.' ||
            out[23] != 'Z' || !digits(out, 4, 0, 9999) || !digits(out + 5, 2, 1, 12) ||
            !digits(out + 8, 2, 1, 31) || !digits(out + 11, 2, 0, 23) ||
            !digits(out + 14, 2, 0, 59) || !digits(out + 17, 2, 0, 59) ||
            !digits(out + 20, 3, 0, 999))
            abort();
    }
    free(out);
    return 0;
}
