/* SPDX-License-Identifier: MIT */
#include "addr_index.h"

#include <stdlib.h>
#include <string.h>

void cmt_addr_index_init(struct cmt_addr_index *x)
{
    memset(x, 0, sizeof *x);
}

void cmt_addr_index_free(struct cmt_addr_index *x)
{
    for (size_t i = 0; i < x->n_blocks; i++)
        free(x->blocks[i]);
    free(x->blocks);
    free(x->first);
    memset(x, 0, sizeof *x);
}

/* The block that holds addr or would: the last whose first address is <=
 * addr (block 0 when addr precedes everything). n_blocks must be > 0. */
static size_t block_for(const struct cmt_addr_index *x, uint64_t addr)
{
    size_t lo = 0, hi = x->n_blocks;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->first[mid] <= addr)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* First position in b whose address is >= addr. */
static uint32_t position_in(const struct cmt_addr_block *b, uint64_t addr)
{
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->v[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int directory_insert(struct cmt_addr_index *x, size_t at, struct cmt_addr_block *b)
{
    if (x->n_blocks == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16;
        struct cmt_addr_block **blocks = realloc(x->blocks, cap * sizeof *blocks);
        if (!blocks)
            return -1;
        x->blocks = blocks;
        uint64_t *first = realloc(x->first, cap * sizeof *first);
        if (!first)
            return -1;
        x->first = first;
        x->cap = cap;
    }
    memmove(x->blocks + at + 1, x->blocks + at, (x->n_blocks - at) * sizeof *x->blocks);
    memmove(x->first + at + 1, x->first + at, (x->n_blocks - at) * sizeof *x->first);
    x->blocks[at] = b;
    x->first[at] = b->v[0].addr;
    x->n_blocks++;
    return 0;
}

static void directory_remove(struct cmt_addr_index *x, size_t at)
{
    free(x->blocks[at]);
    memmove(x->blocks + at, x->blocks + at + 1, (x->n_blocks - at - 1) * sizeof *x->blocks);
    memmove(x->first + at, x->first + at + 1, (x->n_blocks - at - 1) * sizeof *x->first);
    x->n_blocks--;
}

/* The interval just before position (bi, pos), or NULL. */
static struct cmt_interval *before(struct cmt_addr_index *x, size_t bi, uint32_t pos)
{
    if (pos > 0)
        return &x->blocks[bi]->v[pos - 1];
    if (bi > 0)
        return &x->blocks[bi - 1]->v[x->blocks[bi - 1]->n - 1];
    return NULL;
}

/* The interval at position (bi, pos) or the first after it, or NULL. */
static struct cmt_interval *at_or_after(struct cmt_addr_index *x, size_t bi, uint32_t pos)
{
    if (pos < x->blocks[bi]->n)
        return &x->blocks[bi]->v[pos];
    if (bi + 1 < x->n_blocks)
        return &x->blocks[bi + 1]->v[0];
    return NULL;
}

int cmt_addr_index_insert(struct cmt_addr_index *x, const struct cmt_interval *v)
{
    struct cmt_interval e = *v;
    if (x->n_blocks == 0) {
        struct cmt_addr_block *b = calloc(1, sizeof *b);
        if (!b)
            return -1;
        e.opener = 0;
        e.opened_ts = 0;
        b->v[0] = e;
        b->n = 1;
        if (directory_insert(x, 0, b) != 0) {
            free(b);
            return -1;
        }
        x->count = 1;
        return 0;
    }
    size_t bi = block_for(x, e.addr);
    struct cmt_addr_block *b = x->blocks[bi];
    uint32_t pos = position_in(b, e.addr);
    if (pos < b->n && b->v[pos].addr == e.addr) {
        /* Still live in the index: its release went unrecorded. */
        e.opener = b->v[pos].opener;
        e.opened_ts = b->v[pos].opened_ts;
        b->v[pos] = e;
        return 0;
    }
    /* Landing in a hole splits it: the part right of the new allocation
     * keeps the hole's opener. Outside the span, or between regions
     * (holes.h), there is no hole. */
    struct cmt_interval *left = before(x, bi, pos);
    struct cmt_interval *right = at_or_after(x, bi, pos);
    bool in_hole = left && right && left->region == right->region;
    e.opener = in_hole ? left->opener : 0;
    e.opened_ts = in_hole ? left->opened_ts : 0;
    if (b->n == CMT_ADDR_BLOCK) {
        /* Split in two halves, then insert into the half that covers pos. */
        struct cmt_addr_block *nb = calloc(1, sizeof *nb);
        if (!nb)
            return -1;
        uint32_t half = CMT_ADDR_BLOCK / 2;
        memcpy(nb->v, b->v + half, (CMT_ADDR_BLOCK - half) * sizeof *nb->v);
        nb->n = CMT_ADDR_BLOCK - half;
        b->n = half;
        if (directory_insert(x, bi + 1, nb) != 0) {
            memcpy(b->v + half, nb->v, nb->n * sizeof *nb->v);
            b->n = CMT_ADDR_BLOCK;
            free(nb);
            return -1;
        }
        if (pos > half) {
            bi++;
            b = nb;
            pos -= half;
        }
    }
    memmove(b->v + pos + 1, b->v + pos, (b->n - pos) * sizeof *b->v);
    b->v[pos] = e;
    b->n++;
    x->first[bi] = b->v[0].addr;
    x->count++;
    return 0;
}

void cmt_addr_index_remove(struct cmt_addr_index *x, uint64_t addr, uint32_t stack, uint64_t ts,
                           struct cmt_addr_removal *out)
{
    memset(out, 0, sizeof *out);
    if (x->n_blocks == 0)
        return;
    size_t bi = block_for(x, addr);
    struct cmt_addr_block *b = x->blocks[bi];
    uint32_t pos = position_in(b, addr);
    if (pos >= b->n || b->v[pos].addr != addr)
        return;
    out->found = true;
    out->removed = b->v[pos];
    struct cmt_interval *left = before(x, bi, pos);
    struct cmt_interval *right = at_or_after(x, bi, pos + 1);
    if (left && right && left->region == right->region) {
        out->interior = true;
        out->hole_size = right->addr > left->end ? right->addr - left->end : 0;
        out->hole_addr = left->end;
        left->opener = stack;
        left->opened_ts = ts;
    }
    memmove(b->v + pos, b->v + pos + 1, (b->n - pos - 1) * sizeof *b->v);
    b->n--;
    x->count--;
    if (b->n == 0)
        directory_remove(x, bi);
    else
        x->first[bi] = b->v[0].addr;
}

bool cmt_addr_index_overlaps(const struct cmt_addr_index *x, uint64_t lo, uint64_t hi)
{
    if (x->n_blocks == 0 || hi <= lo)
        return false;
    /* the last interval starting below hi */
    size_t bi = block_for(x, hi - 1);
    const struct cmt_addr_block *b = x->blocks[bi];
    uint32_t pos = position_in(b, hi);
    if (pos == 0)
        return false; /* block 0 and everything starts at hi or above */
    return b->v[pos - 1].end > lo;
}

long cmt_addr_index_copy(const struct cmt_addr_index *x, struct cmt_interval **buf, size_t *cap)
{
    if (x->count > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < x->count)
            c *= 2;
        struct cmt_interval *b = realloc(*buf, c * sizeof *b);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    size_t n = 0;
    for (size_t i = 0; i < x->n_blocks; i++) {
        memcpy(*buf + n, x->blocks[i]->v, x->blocks[i]->n * sizeof **buf);
        n += x->blocks[i]->n;
    }
    return (long)n;
}
