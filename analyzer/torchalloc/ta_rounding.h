/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TA_ROUNDING_H
#define CUMEMTRACE_ANALYZER_TA_ROUNDING_H

#include <stdbool.h>
#include <stdint.h>

#include "ta_settings.h"

/* How PyTorch's caching allocator sizes things (CUDACachingAllocator.cpp
 * 2.11: round_size, roundup_power2_next_division, get_allocation_size,
 * get_pool). */

#define CMT_TA_MIN_BLOCK 512ull                /* kMinBlockSize */
#define CMT_TA_SMALL_SIZE (1ull << 20)         /* kSmallSize: the small pool's largest request */
#define CMT_TA_SMALL_BUFFER (2ull << 20)       /* kSmallBuffer: a small-pool segment */
#define CMT_TA_MIN_LARGE_ALLOC (10ull << 20)   /* kMinLargeAlloc: smaller large requests share segments */
#define CMT_TA_ROUND_LARGE (2ull << 20)        /* kRoundLarge */

/* The bytes a request of size takes: 512 at least, a multiple of 512, or
 * the next of roundup_power2_divisions' steps between two powers of two. */
uint64_t cmt_ta_round_size(const struct cmt_ta_settings *s, uint64_t size);

/* The next of divisions equal steps between the powers of two around size
 * (size itself when it is a power of two or on a step). */
uint64_t cmt_ta_roundup_power2_next_division(uint64_t size, uint32_t divisions);

/* The segment a rounded request makes when nothing cached serves it: 2 MiB
 * for the small pool, large_segment_size below 10 MiB, else the request
 * rounded up to 2 MiB. */
uint64_t cmt_ta_allocation_size(const struct cmt_ta_settings *s, uint64_t rounded);

/* The small pool serves rounded requests up to 1 MiB. */
static inline bool cmt_ta_is_small(uint64_t rounded)
{
    return rounded <= CMT_TA_SMALL_SIZE;
}

#endif
