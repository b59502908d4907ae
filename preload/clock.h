/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_CLOCK_H
#define CUMEMTRACE_PRELOAD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: the vDSO makes this a user-space read (~20 ns). */
static inline uint64_t cmt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
