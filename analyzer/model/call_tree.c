/* SPDX-License-Identifier: MIT */
#include "call_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"

static bool same_string(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static bool same_frame(const struct cmt_frame *a, const struct cmt_frame *b)
{
    if (a->inlined != b->inlined)
        return false;
    if (!a->function || !b->function)
        return a->ip == b->ip && !a->function && !b->function;
    return same_string(a->function, b->function) && same_string(a->file, b->file) &&
           same_string(a->module, b->module);
}

static uint32_t new_node(struct cmt_call_tree *t, const struct cmt_frame *f)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct cmt_tree_node *n = realloc(t->nodes, cap * sizeof *n);
        if (!n)
            return CMT_TREE_NONE;
        t->nodes = n;
        t->cap = cap;
    }
    t->nodes[t->n] = (struct cmt_tree_node){
        .frame = f, .first_child = CMT_TREE_NONE, .next_sibling = CMT_TREE_NONE, .last_child = CMT_TREE_NONE};
    return (uint32_t)t->n++;
}

int cmt_call_tree_init(struct cmt_call_tree *t)
{
    memset(t, 0, sizeof *t);
    t->hash_mult = cmt_hash_multiplier();
    return new_node(t, NULL) == 0 ? 0 : -1;
}

void cmt_call_tree_free(struct cmt_call_tree *t)
{
    free(t->nodes);
    free(t->index);
    memset(t, 0, sizeof *t);
}

/* ---- finding a child by frame ---------------------------------------------------- */

static uint64_t string_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a; NULL and "" alike: same_frame tells them apart */
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* Equal for frames same_frame() calls the same under one parent. For a frame
 * without a function it is one-to-one in the address (for a given parent and
 * inline status), so crafted addresses cannot collide in the key, and the
 * random multiplier spreads distinct keys. */
static uint64_t child_key(uint32_t parent, const struct cmt_frame *f)
{
    uint64_t k = (uint64_t)parent * 0x9e3779b97f4a7c15ull ^ (f->inlined ? 0x5bd1e9955bd1e995ull : 0);
    if (!f->function)
        return k ^ f->ip;
    return k ^ string_hash(f->function) ^ string_hash(f->file) * 3 ^ string_hash(f->module) * 5 ^
           0x8000000000000000ull;
}

static size_t index_home(const struct cmt_call_tree *t, uint64_t key)
{
    return (size_t)((key * t->hash_mult) >> t->hash_shift);
}

/* Room for one more child: the index doubles to stay at most half full. */
static int index_reserve(struct cmt_call_tree *t)
{
    if ((t->n + 1) * 2 <= t->index_cap)
        return 0;
    size_t cap = t->index_cap ? t->index_cap * 2 : 64;
    while ((t->n + 1) * 2 > cap)
        cap *= 2;
    struct cmt_tree_slot *index = calloc(cap, sizeof *index);
    if (!index)
        return -1;
    struct cmt_tree_slot *old = t->index;
    size_t old_cap = t->index_cap;
    t->index = index;
    t->index_cap = cap;
    t->hash_shift = 64 - cmt_log2_pow2(cap);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].node)
            continue;
        size_t j = index_home(t, old[i].key);
        while (index[j].node)
            j = (j + 1) & (cap - 1);
        index[j] = old[i];
    }
    free(old);
    return 0;
}

static void note_line(struct cmt_tree_node *n, const struct cmt_frame *f)
{
    if (f->line <= 0)
        return;
    uint32_t line = (uint32_t)f->line;
    unsigned i = 0;
    while (i < n->n_lines && n->lines[i] < line)
        i++;
    if (i < n->n_lines && n->lines[i] == line)
        return;
    if (n->n_lines == CMT_TREE_MAX_LINES) {
        /* keep the lowest lines */
        n->more_lines = true;
        if (i == CMT_TREE_MAX_LINES)
            return;
        n->n_lines--;
    }
    memmove(&n->lines[i + 1], &n->lines[i], (n->n_lines - i) * sizeof n->lines[0]);
    n->lines[i] = line;
    n->n_lines++;
}

static uint32_t child_for(struct cmt_call_tree *t, uint32_t parent, const struct cmt_frame *f)
{
    if (index_reserve(t) != 0)
        return CMT_TREE_NONE;
    uint64_t key = child_key(parent, f);
    size_t mask = t->index_cap - 1, i = index_home(t, key);
    for (; t->index[i].node; i = (i + 1) & mask) {
        const struct cmt_tree_slot *s = &t->index[i];
        if (s->key == key && s->parent == parent && same_frame(t->nodes[s->node].frame, f)) {
            note_line(&t->nodes[s->node], f);
            return s->node;
        }
    }
    uint32_t c = new_node(t, f);
    if (c == CMT_TREE_NONE)
        return c;
    t->index[i] = (struct cmt_tree_slot){.key = key, .node = c, .parent = parent};
    note_line(&t->nodes[c], f);
    struct cmt_tree_node *p = &t->nodes[parent];
    if (p->last_child == CMT_TREE_NONE)
        p->first_child = c;
    else
        t->nodes[p->last_child].next_sibling = c;
    p->last_child = c;
    return c;
}

int cmt_call_tree_add(struct cmt_call_tree *t, const struct cmt_stack_frames *sf, uint64_t bytes,
                      uint64_t count)
{
    uint32_t node = 0;
    t->nodes[0].inclusive += bytes;
    t->nodes[0].inclusive_count += count;
    for (size_t i = sf->n; i-- > 0;) {
        node = child_for(t, node, &sf->frames[i]);
        if (node == CMT_TREE_NONE)
            return -1;
        t->nodes[node].inclusive += bytes;
        t->nodes[node].inclusive_count += count;
    }
    t->nodes[node].self += bytes;
    t->nodes[node].self_count += count;
    return 0;
}

static const struct cmt_tree_node *sort_base;

static int by_inclusive(const void *pa, const void *pb)
{
    const struct cmt_tree_node *a = &sort_base[*(const uint32_t *)pa], *b = &sort_base[*(const uint32_t *)pb];
    if (a->inclusive != b->inclusive)
        return a->inclusive < b->inclusive ? 1 : -1;
    /* Stable across runs: first inserted first. */
    return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

int cmt_call_tree_sort(struct cmt_call_tree *t)
{
    uint32_t *kids = malloc((t->n ? t->n : 1) * sizeof *kids);
    if (!kids)
        return -1;
    sort_base = t->nodes;
    for (size_t p = 0; p < t->n; p++) {
        size_t k = 0;
        for (uint32_t c = t->nodes[p].first_child; c != CMT_TREE_NONE; c = t->nodes[c].next_sibling)
            kids[k++] = c;
        if (k < 2)
            continue;
        qsort(kids, k, sizeof *kids, by_inclusive);
        t->nodes[p].first_child = kids[0];
        for (size_t i = 0; i + 1 < k; i++)
            t->nodes[kids[i]].next_sibling = kids[i + 1];
        t->nodes[kids[k - 1]].next_sibling = CMT_TREE_NONE;
        t->nodes[p].last_child = kids[k - 1];
    }
    free(kids);
    return 0;
}

void cmt_tree_node_describe(const struct cmt_tree_node *n, char *buf, size_t len)
{
    const struct cmt_frame *f = n->frame;
    if (!f->function || !f->file || n->n_lines == 0) {
        cmt_frame_describe(f, buf, len);
        return;
    }
    size_t used = (size_t)snprintf(buf, len, "%s at %s:", f->function, f->file);
    for (unsigned i = 0; i < n->n_lines && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? "," : "", n->lines[i]);
    if (used < len && n->more_lines)
        used += (size_t)snprintf(buf + used, len - used, ",...");
    if (used < len && f->inlined)
        snprintf(buf + used, len - used, " (inlined)");
}
