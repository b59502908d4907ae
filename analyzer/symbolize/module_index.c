/* SPDX-License-Identifier: MIT */
#include "module_index.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Leaves are the elementary intervals [ends[j], ends[j + 1]) between sorted,
 * distinct range ends. A module's range is stored at the O(log n) nodes that
 * cover it exactly; each node lists its module ids in increasing order (the
 * modules are inserted by id). A query walks from the address's leaf to the
 * root and takes, at each node, the largest id within the limit. */
struct cmt_module_index {
    uint64_t *ends;
    size_t n_ends;
    size_t leaves; /* power of two >= n_ends - 1 */
    size_t *first; /* node i lists ids[first[i] .. first[i + 1]) */
    uint32_t *ids;
};

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Index of v in ends (v is one of them). */
static size_t end_index(const struct cmt_module_index *x, uint64_t v)
{
    size_t lo = 0, hi = x->n_ends;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->ends[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Calls visit(node) for the nodes covering leaves [a, b). */
#define FOR_EACH_COVER(x, a, b, node, body)                     \
    for (size_t l_ = (a) + (x)->leaves, r_ = (b) + (x)->leaves; \
         l_ < r_; l_ >>= 1, r_ >>= 1) {                         \
        if (l_ & 1) {                                           \
            size_t node = l_++;                                 \
            body;                                               \
        }                                                       \
        if (r_ & 1) {                                           \
            size_t node = --r_;                                 \
            body;                                               \
        }                                                       \
    }

static bool usable(const struct cmt_module_def *m)
{
    return m->lo < m->hi;
}

struct cmt_module_index *cmt_module_index_new(const struct cmt_trace_model *model)
{
    struct cmt_module_index *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    size_t n_mods = model->n_modules;
    x->ends = malloc((n_mods ? n_mods : 1) * 2 * sizeof *x->ends);
    if (!x->ends)
        goto fail;
    for (uint32_t id = 1; id < n_mods; id++)
        if (usable(&model->modules[id])) {
            x->ends[x->n_ends++] = model->modules[id].lo;
            x->ends[x->n_ends++] = model->modules[id].hi;
        }
    if (x->n_ends)
        qsort(x->ends, x->n_ends, sizeof *x->ends, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < x->n_ends; i++)
        if (k == 0 || x->ends[i] != x->ends[k - 1])
            x->ends[k++] = x->ends[i];
    x->n_ends = k;
    x->leaves = 1;
    while (x->leaves + 1 < x->n_ends)
        x->leaves *= 2;
    size_t nodes = 2 * x->leaves;
    x->first = calloc(nodes + 1, sizeof *x->first);
    if (!x->first)
        goto fail;
    /* Two passes: count per node, then fill in id order. */
    size_t total = 0;
    for (uint32_t id = 1; id < n_mods; id++) {
        const struct cmt_module_def *m = &model->modules[id];
        if (!usable(m))
            continue;
        FOR_EACH_COVER(x, end_index(x, m->lo), end_index(x, m->hi), node, (x->first[node + 1]++, total++));
    }
    for (size_t i = 0; i < nodes; i++)
        x->first[i + 1] += x->first[i];
    x->ids = malloc((total ? total : 1) * sizeof *x->ids);
    size_t *fill = malloc(nodes * sizeof *fill);
    if (!x->ids || !fill) {
        free(fill);
        goto fail;
    }
    memcpy(fill, x->first, nodes * sizeof *fill);
    for (uint32_t id = 1; id < n_mods; id++) {
        const struct cmt_module_def *m = &model->modules[id];
        if (!usable(m))
            continue;
        FOR_EACH_COVER(x, end_index(x, m->lo), end_index(x, m->hi), node, x->ids[fill[node]++] = id);
    }
    free(fill);
    return x;
fail:
    cmt_module_index_free(x);
    return NULL;
}

uint32_t cmt_module_index_find(const struct cmt_module_index *x, uint64_t ip, uint32_t max_id)
{
    if (x->n_ends < 2 || ip < x->ends[0] || ip >= x->ends[x->n_ends - 1])
        return 0;
    /* The leaf: last end <= ip. */
    size_t lo = 0, hi = x->n_ends;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->ends[mid] <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t best = 0;
    for (size_t node = lo - 1 + x->leaves; node >= 1; node >>= 1) {
        /* Largest id <= max_id in ids[first[node] .. first[node + 1]). */
        size_t a = x->first[node], b = x->first[node + 1];
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (x->ids[mid] <= max_id)
                a = mid + 1;
            else
                b = mid;
        }
        if (a > x->first[node] && x->ids[a - 1] > best)
            best = x->ids[a - 1];
    }
    return best;
}

void cmt_module_index_free(struct cmt_module_index *x)
{
    if (!x)
        return;
    free(x->ends);
    free(x->first);
    free(x->ids);
    free(x);
}
