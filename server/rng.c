/*
 * rng.c - xorshift64* per thread (see rng.h).
 */
#include <time.h>
#include "rng.h"

static __thread uint64_t state; /* 0 until the thread's first draw */

uint64_t rng_next(void)
{
    if (state == 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        state =
            ((uint64_t)now.tv_nsec << 20 ^ (uint64_t)now.tv_sec ^ (uint64_t)(uintptr_t)&state) | 1;
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545f4914f6cdd1dULL;
}

double rng_uniform(void)
{
    return (double)(rng_next() >> 11) / 9007199254740992.0; /* 2^53 */
}
