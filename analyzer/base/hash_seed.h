/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HASH_SEED_H
#define CUMEMTRACE_ANALYZER_HASH_SEED_H

#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

/* A random odd multiplier for multiply-shift hashing, slot = (key * m) >>
 * (64 - bits): a universal family, so the addresses, stack ids and frame
 * hashes a trace holds cannot be crafted to fall into one probe run (with a
 * fixed multiplier 40,000 crafted allocations took 4 s to replay, growing
 * with the square of their number). Results never depend on it: tables are
 * only probed, and whatever is listed from them is sorted. */
static inline uint64_t cmt_hash_multiplier(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&v) * 0x9e3779b97f4a7c15ull;
    }
    return v | 1;
}

/* log2 of a power of two. */
static inline unsigned cmt_log2_pow2(uint64_t v)
{
    unsigned bits = 0;
    while (((uint64_t)1 << bits) < v)
        bits++;
    return bits;
}

#endif
