/* SPDX-License-Identifier: MIT */
/* The allocator's ordered sets of blocks (std::set with BlockComparatorSize
 * or BlockComparatorAddress in PyTorch): a treap whose links live in the
 * blocks, priorities drawn from the model's own generator so every replay
 * of a trace builds the same trees. O(log n) expected per operation. */
#include "ta_internal.h"

#define L(i) a->b[i].u.tree.left
#define R(i) a->b[i].u.tree.right
#define P(i) a->b[i].u.tree.parent

/* a < b in the set's order */
static bool less(const struct cmt_ta_allocator *a, const struct ta_set *s, uint32_t x, uint64_t stream, uint64_t size,
                 uint64_t addr)
{
    const struct ta_block *k = &a->b[x];
    if (k->stream != stream)
        return k->stream < stream;
    if (!s->by_address && k->size != size)
        return k->size < size;
    return k->addr < addr;
}

static void replace_child(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t parent, uint32_t old, uint32_t now)
{
    if (parent == TA_NIL)
        s->root = now;
    else if (L(parent) == old)
        L(parent) = now;
    else
        R(parent) = now;
    if (now != TA_NIL)
        P(now) = parent;
}

/* x's right child takes its place */
static void rotate_left(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t x)
{
    uint32_t y = R(x);
    R(x) = L(y);
    if (L(y) != TA_NIL)
        P(L(y)) = x;
    replace_child(a, s, P(x), x, y);
    L(y) = x;
    P(x) = y;
}

static void rotate_right(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t x)
{
    uint32_t y = L(x);
    L(x) = R(y);
    if (R(y) != TA_NIL)
        P(R(y)) = x;
    replace_child(a, s, P(x), x, y);
    R(y) = x;
    P(x) = y;
}

static uint32_t next_prio(struct cmt_ta_allocator *a)
{
    /* xorshift64 */
    uint64_t x = a->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    a->rng = x;
    return (uint32_t)(x >> 32);
}

void ta_set_insert(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t i)
{
    struct ta_block *k = &a->b[i];
    L(i) = R(i) = TA_NIL;
    a->b[i].u.tree.prio = next_prio(a);
    uint32_t parent = TA_NIL, at = s->root;
    bool left = false;
    while (at != TA_NIL) {
        parent = at;
        left = !less(a, s, at, k->stream, k->size, k->addr);
        at = left ? L(at) : R(at);
    }
    P(i) = parent;
    if (parent == TA_NIL)
        s->root = i;
    else if (left)
        L(parent) = i;
    else
        R(parent) = i;
    while (P(i) != TA_NIL && a->b[P(i)].u.tree.prio < a->b[i].u.tree.prio) {
        if (L(P(i)) == i)
            rotate_right(a, s, P(i));
        else
            rotate_left(a, s, P(i));
    }
    a->b[i].flags |= TA_IN_SET;
}

void ta_set_erase(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t i)
{
    /* rotate i down until it has one child at most, then splice it out */
    while (L(i) != TA_NIL && R(i) != TA_NIL) {
        if (a->b[L(i)].u.tree.prio > a->b[R(i)].u.tree.prio)
            rotate_right(a, s, i);
        else
            rotate_left(a, s, i);
    }
    uint32_t child = L(i) != TA_NIL ? L(i) : R(i);
    replace_child(a, s, P(i), i, child);
    a->b[i].flags &= (uint8_t)~TA_IN_SET;
}

uint32_t ta_set_lower_bound(const struct cmt_ta_allocator *a, const struct ta_set *s, uint64_t stream, uint64_t size,
                            uint64_t addr)
{
    uint32_t at = s->root, best = TA_NIL;
    while (at != TA_NIL) {
        if (less(a, s, at, stream, size, addr)) {
            at = a->b[at].u.tree.right;
        } else {
            best = at;
            at = a->b[at].u.tree.left;
        }
    }
    return best;
}

uint32_t ta_set_first(const struct cmt_ta_allocator *a, const struct ta_set *s)
{
    uint32_t at = s->root;
    if (at == TA_NIL)
        return TA_NIL;
    while (a->b[at].u.tree.left != TA_NIL)
        at = a->b[at].u.tree.left;
    return at;
}

uint32_t ta_set_last(const struct cmt_ta_allocator *a, const struct ta_set *s)
{
    uint32_t at = s->root;
    if (at == TA_NIL)
        return TA_NIL;
    while (a->b[at].u.tree.right != TA_NIL)
        at = a->b[at].u.tree.right;
    return at;
}

uint32_t ta_set_next(const struct cmt_ta_allocator *a, uint32_t i)
{
    if (a->b[i].u.tree.right != TA_NIL) {
        i = a->b[i].u.tree.right;
        while (a->b[i].u.tree.left != TA_NIL)
            i = a->b[i].u.tree.left;
        return i;
    }
    uint32_t p = a->b[i].u.tree.parent;
    while (p != TA_NIL && a->b[p].u.tree.right == i) {
        i = p;
        p = a->b[p].u.tree.parent;
    }
    return p;
}

uint32_t ta_set_prev(const struct cmt_ta_allocator *a, uint32_t i)
{
    if (a->b[i].u.tree.left != TA_NIL) {
        i = a->b[i].u.tree.left;
        while (a->b[i].u.tree.right != TA_NIL)
            i = a->b[i].u.tree.right;
        return i;
    }
    uint32_t p = a->b[i].u.tree.parent;
    while (p != TA_NIL && a->b[p].u.tree.left == i) {
        i = p;
        p = a->b[p].u.tree.parent;
    }
    return p;
}
