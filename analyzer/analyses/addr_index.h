/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ADDR_INDEX_H
#define CUMEMTRACE_ANALYZER_ADDR_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "holes.h"

/* One device's span allocations ordered by address, kept up to date event by
 * event (`cumemtrace frag`), so each release knows its neighbours: the hole
 * it opens, and who opened the hole a later allocation lands in.
 *
 * A two-level sorted vector: a directory of blocks, each holding up to
 * CMT_ADDR_BLOCK intervals in order. Finding a position is a binary search
 * in the directory and one in a block; inserting or removing moves at most a
 * block's entries (the directory moves only when a block splits or
 * empties). Compact and cache-friendly: about 45 bytes per live allocation. */

#define CMT_ADDR_BLOCK 64

struct cmt_addr_block {
    uint32_t n;
    struct cmt_interval v[CMT_ADDR_BLOCK];
};

struct cmt_addr_index {
    struct cmt_addr_block **blocks;
    uint64_t *first; /* first address of each block, for the directory search */
    size_t n_blocks, cap;
    size_t count;
};

/* What a release did to the holes around it. */
struct cmt_addr_removal {
    bool found;
    struct cmt_interval removed;
    bool interior;      /* it had live neighbours of one region on both sides: a hole opened (or grew) */
    uint64_t hole_size; /* the hole between those neighbours after the release */
    uint64_t hole_addr; /* where it starts (the left neighbour's end) */
};

void cmt_addr_index_init(struct cmt_addr_index *x);
void cmt_addr_index_free(struct cmt_addr_index *x);

/* Inserts v (v->opener and v->opened_ts are set here: the hole to its right
 * is part of the hole it landed in, whoever opened that). An address already
 * present is replaced. Returns 0, or -1 when out of memory. */
int cmt_addr_index_insert(struct cmt_addr_index *x, const struct cmt_interval *v);

/* Removes the interval at addr. A removal between two live neighbours marks
 * the left one as the hole's opener (stack, ts). */
void cmt_addr_index_remove(struct cmt_addr_index *x, uint64_t addr, uint32_t stack, uint64_t ts,
                           struct cmt_addr_removal *out);

/* Whether an interval of x starts below hi and ends after lo (intervals
 * that do not overlap each other, such as VMM reservations). */
bool cmt_addr_index_overlaps(const struct cmt_addr_index *x, uint64_t lo, uint64_t hi);

/* Copies every interval, in order, into *buf (grown as needed). Returns the
 * count, or -1 when out of memory. */
long cmt_addr_index_copy(const struct cmt_addr_index *x, struct cmt_interval **buf, size_t *cap);

#endif
