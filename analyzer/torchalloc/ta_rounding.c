/* SPDX-License-Identifier: MIT */
#include "ta_rounding.h"

static unsigned log2_floor(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

uint64_t cmt_ta_roundup_power2_next_division(uint64_t size, uint32_t divisions)
{
    if (!size || !(size & (size - 1)))
        return size;
    uint64_t floor = 1ull << log2_floor(size);
    if (floor >> 63)
        return size; /* no power of two above it */
    uint64_t step = divisions ? floor >> log2_floor(divisions) : 0;
    if (!step)
        return floor << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

uint64_t cmt_ta_round_size(const struct cmt_ta_settings *s, uint64_t size)
{
    if (size < CMT_TA_MIN_BLOCK)
        return CMT_TA_MIN_BLOCK;
    uint32_t divisions = cmt_ta_settings_divisions(s, size);
    if (divisions > 1 && size > CMT_TA_MIN_BLOCK * divisions)
        return cmt_ta_roundup_power2_next_division(size, divisions);
    /* written so that sizes near 2^64 cannot wrap */
    uint64_t blocks = size / CMT_TA_MIN_BLOCK + (size % CMT_TA_MIN_BLOCK != 0);
    return blocks * CMT_TA_MIN_BLOCK;
}

uint64_t cmt_ta_allocation_size(const struct cmt_ta_settings *s, uint64_t rounded)
{
    if (rounded <= CMT_TA_SMALL_SIZE)
        return CMT_TA_SMALL_BUFFER;
    if (rounded < CMT_TA_MIN_LARGE_ALLOC)
        return s->large_segment_size;
    uint64_t units = rounded / CMT_TA_ROUND_LARGE + (rounded % CMT_TA_ROUND_LARGE != 0);
    return units * CMT_TA_ROUND_LARGE;
}
