/*
 * fuzz_body_decode.c - libFuzzer target for body_decode (server/body.c).
 *
 * The first byte picks the Content-Encoding (gzip, deflate, identity, br) and the
 * limit; the rest is the body. Whatever the bytes, the answer is one of 0,
 * 400 and 413, inflating never writes past the `limit` bytes of its scratch
 * buffer (an exact-size allocation, so AddressSanitizer sees any overrun), a
 * decoded body is never longer than the limit, and a message is always set
 * for a refusal.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const encodings[] = {"gzip", "deflate", "identity", "br"};
    char msg[128];
    const char *out = NULL;
    size_t out_len = 0;

    if (size < 1)
        return 0;
    const char *encoding = encodings[data[0] % 4];
    size_t limit = (size_t)(data[0] >> 2) * 64; /* 0 to 4032 bytes */
    char *in = malloc(size - 1 > 0 ? size - 1 : 1), *scratch;
    if (in == NULL)
        abort();
    memcpy(in, data + 1, size - 1);
    msg[0] = '\0';
    int status = body_decode(encoding, strlen(encoding), in, size - 1, limit, &scratch, &out,
                             &out_len, msg, sizeof(msg));
    if (status == 0) {
        if (out_len > limit || out == NULL)
            abort();
        if (encoding[0] == 'i' && (out < in || out + out_len != in + size - 1))
            abort(); /* identity: the body itself, less a BOM */
        /* inflated: into the buffer it handed back, within the limit (ASan checks its end) */
        if (encoding[0] != 'i' && out_len > 0 && (scratch == NULL || out < scratch))
            abort();
        /* every byte of the body is read: one past the buffer's end shows up under ASan */
        unsigned char sum = 0;
        for (size_t i = 0; i < out_len; i++)
            sum += (unsigned char)out[i];
        __asm__ volatile("" : : "r"(sum)); /* keeps the reads: the sum is used */
    } else if ((status != 400 && status != 413) || msg[0] == '\0' ||
               (encoding[0] == 'i' && status != 413)) {
        abort();
    }
    free(in);
    free(scratch);
    return 0;
}
