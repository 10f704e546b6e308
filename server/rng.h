/*
 * rng.h - one cheap pseudo-random generator per thread (xorshift64*), for
 * /json's random id and /delay's jitter: fast, not cryptographic.
 *
 * Each thread's state is seeded on its first use from the monotonic clock and
 * the state's own address, so the loops draw different sequences. No lock:
 * a loop's thread is the only one that touches its state.
 */
#ifndef NOTESD_RNG_H
#define NOTESD_RNG_H

#include <stdint.h>

/* The next 64 pseudo-random bits of the calling thread's sequence. */
uint64_t rng_next(void);

/* Uniform in [0, 1), with 53 random bits. */
double rng_uniform(void);

#endif
