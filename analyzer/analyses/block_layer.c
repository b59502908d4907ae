/* SPDX-License-Identifier: MIT */
#include "block_layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BLOCK 512ull
#define SMALL_SIZE (1ull << 20)

enum cmt_bl_class cmt_bl_class_of(uint64_t segment_size)
{
    if (segment_size == CMT_BL_SMALL_SEGMENT)
        return CMT_BL_CLASS_SMALL;
    if (segment_size == CMT_BL_LARGE_SEGMENT)
        return CMT_BL_CLASS_LARGE;
    return CMT_BL_CLASS_HUGE;
}

const char *cmt_bl_class_name(enum cmt_bl_class c)
{
    static const char *const names[CMT_BL_CLASS_COUNT] = {"small (2 MiB segments)", "large (20 MiB segments)",
                                                          "huge (one segment per tensor of 10 MiB or more)"};
    return c < CMT_BL_CLASS_COUNT ? names[c] : "?";
}

const char *cmt_bl_verdict_name(enum cmt_bl_verdict v)
{
    switch (v) {
    case CMT_BL_VERDICT_CAPACITY:
        return "capacity";
    case CMT_BL_VERDICT_FRAGMENTATION:
        return "fragmentation";
    case CMT_BL_VERDICT_OTHERS:
        return "others";
    }
    return "?";
}

uint64_t cmt_bl_round(uint64_t request)
{
    return request < MIN_BLOCK ? MIN_BLOCK : MIN_BLOCK * ((request + MIN_BLOCK - 1) / MIN_BLOCK);
}

void cmt_block_layer_init(struct cmt_block_layer *bl)
{
    memset(bl, 0, sizeof *bl);
}

static void snapshot_free(struct cmt_bl_snapshot *s)
{
    free(s->sites);
    s->sites = NULL;
    s->n_sites = 0;
}

void cmt_block_layer_free(struct cmt_block_layer *bl)
{
    for (size_t i = 0; i < bl->n_devices; i++) {
        struct cmt_bl_device *d = &bl->devices[i];
        free(d->segments);
        free(d->blocks);
        free(d->sites);
        snapshot_free(&d->peak);
        for (size_t k = 0; k < d->n_ooms; k++)
            snapshot_free(&d->ooms[k].at);
        free(d->ooms);
        free(d->points);
    }
    memset(bl, 0, sizeof *bl);
}

static void inconsistent(struct cmt_block_layer *bl, uint8_t api, int32_t device, uint64_t ts, uint64_t addr,
                         const char *what)
{
    if (bl->inconsistencies++ == 0) {
        struct cmt_bl_inconsistency *f = &bl->first_inconsistency;
        f->ts = ts;
        f->device = device;
        f->api = api;
        f->addr = addr;
        snprintf(f->what, sizeof f->what, "%s", what);
    }
}

static struct cmt_bl_device *device_of(struct cmt_block_layer *bl, int32_t ordinal)
{
    for (size_t i = 0; i < bl->n_devices; i++)
        if (bl->devices[i].ordinal == ordinal)
            return &bl->devices[i];
    if (bl->n_devices == CMT_BL_MAX_DEVICES)
        return NULL;
    struct cmt_bl_device *d = &bl->devices[bl->n_devices++];
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    return d;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

/* First segment index whose address is > addr, minus one: the segment that
 * may hold addr. */
static size_t segment_index(const struct cmt_bl_device *d, uint64_t addr, bool *found)
{
    size_t lo = 0, hi = d->n_segments;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->segments[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo > 0 && addr < d->segments[lo - 1].addr + d->segments[lo - 1].size;
    return lo; /* insertion point; the holder is lo - 1 when found */
}

/* First block index whose address is >= addr. */
static size_t block_lower(const struct cmt_bl_device *d, uint64_t addr)
{
    size_t lo = 0, hi = d->n_blocks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->blocks[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool site_add(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint64_t stack, int64_t bytes,
                     int64_t blocks)
{
    if ((d->n_sites + 1) * 10 > d->cap_sites * 7) {
        size_t ncap = d->cap_sites ? d->cap_sites * 2 : 256;
        struct cmt_bl_site *n = calloc(ncap, sizeof *n);
        if (!n) {
            bl->out_of_memory = true;
            return false;
        }
        for (size_t i = 0; i < d->cap_sites; i++) {
            struct cmt_bl_site *s = &d->sites[i];
            if (!s->stack)
                continue;
            size_t j = (size_t)(s->stack * 0x9e3779b97f4a7c15ull >> 20) & (ncap - 1);
            while (n[j].stack)
                j = (j + 1) & (ncap - 1);
            n[j] = *s;
        }
        free(d->sites);
        d->sites = n;
        d->cap_sites = ncap;
    }
    /* Slots hold stack + 1, so that stack 0 (none) is a site too and 0
     * marks an empty slot. */
    uint64_t key = stack + 1;
    size_t j = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (d->cap_sites - 1);
    while (d->sites[j].stack && d->sites[j].stack != key)
        j = (j + 1) & (d->cap_sites - 1);
    if (!d->sites[j].stack) {
        d->sites[j].stack = key;
        d->n_sites++;
    }
    d->sites[j].bytes += (uint64_t)bytes;
    d->sites[j].blocks += (uint64_t)blocks;
    d->sites[j].made += blocks > 0 ? (uint64_t)blocks : 0;
    return true;
}

const struct cmt_bl_site *cmt_bl_site_find(const struct cmt_bl_device *d, uint64_t stack)
{
    if (!d->cap_sites)
        return NULL;
    uint64_t key = stack + 1;
    size_t j = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (d->cap_sites - 1);
    while (d->sites[j].stack && d->sites[j].stack != key)
        j = (j + 1) & (d->cap_sites - 1);
    return d->sites[j].stack ? &d->sites[j] : NULL;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct cmt_bl_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void take_snapshot(struct cmt_block_layer *bl, const struct cmt_bl_device *d, struct cmt_bl_snapshot *s,
                          uint64_t ts)
{
    snapshot_free(s);
    memset(s, 0, sizeof *s);
    s->ts = ts;
    s->allocated = d->allocated;
    s->reserved = d->reserved;
    s->requested = d->requested;
    size_t b = 0;
    for (size_t i = 0; i < d->n_segments; i++) {
        const struct cmt_bl_segment *g = &d->segments[i];
        struct cmt_bl_class_state *c = &s->classes[cmt_bl_class_of(g->size)];
        c->segments++;
        c->reserved += g->size;
        uint64_t at = g->addr, end = g->addr + g->size;
        while (b < d->n_blocks && d->blocks[b].addr < g->addr)
            b++;
        for (; b < d->n_blocks && d->blocks[b].addr < end; b++) {
            const struct cmt_bl_block *k = &d->blocks[b];
            if (k->addr > at && k->addr - at > c->largest_free)
                c->largest_free = k->addr - at;
            if (k->allocated)
                c->allocated += k->size;
            at = k->addr + k->size;
        }
        if (end > at && end - at > c->largest_free)
            c->largest_free = end - at;
    }
    if (!d->n_sites)
        return;
    s->sites = malloc(d->n_sites * sizeof *s->sites);
    if (!s->sites) {
        bl->out_of_memory = true;
        return;
    }
    for (size_t i = 0; i < d->cap_sites; i++)
        if (d->sites[i].stack && d->sites[i].bytes) {
            s->sites[s->n_sites] = d->sites[i];
            s->sites[s->n_sites++].stack -= 1;
        }
    qsort(s->sites, s->n_sites, sizeof *s->sites, by_bytes_desc);
}

/* Before anything lowers the allocated bytes: the state at the peak. */
static void settle_peak(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint64_t ts)
{
    (void)ts;
    if (d->peak_pending) {
        uint64_t peak_ts = d->peak.ts;
        take_snapshot(bl, d, &d->peak, peak_ts);
        d->peak_pending = false;
    }
}

static void on_alloc(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts, uint64_t addr,
                     uint64_t request, uint64_t stack)
{
    bool in;
    size_t si = segment_index(d, addr, &in);
    if (!in) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a tensor's block outside every live segment");
        return;
    }
    const struct cmt_bl_segment *g = &d->segments[si - 1];
    size_t j = block_lower(d, addr);
    if (j < d->n_blocks && d->blocks[j].addr == addr) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a block allocated again before it was freed");
        return;
    }
    if (j > 0 && d->blocks[j - 1].addr + d->blocks[j - 1].size > addr) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a block inside another live block");
        return;
    }
    uint64_t seg_end = g->addr + g->size;
    uint64_t range_end = j < d->n_blocks && d->blocks[j].addr < seg_end ? d->blocks[j].addr : seg_end;
    uint64_t range = range_end - addr, rounded = cmt_bl_round(request), size = rounded;
    if (range < rounded) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a block larger than the free range it starts");
    } else {
        uint64_t rest = range - rounded;
        /* should_split: the small pool and expandable segments split any
         * rest of a block's minimum size, the large pool only a rest over
         * 1 MiB */
        bool small = g->size == CMT_BL_SMALL_SEGMENT || g->expandable;
        bool split = small ? rest >= MIN_BLOCK : rest > SMALL_SIZE;
        if (!split)
            size = range;
    }
    if (!grow((void **)&d->blocks, &d->cap_blocks, d->n_blocks + 1, sizeof *d->blocks)) {
        bl->out_of_memory = true;
        return;
    }
    memmove(&d->blocks[j + 1], &d->blocks[j], (d->n_blocks - j) * sizeof *d->blocks);
    d->blocks[j] = (struct cmt_bl_block){.addr = addr, .size = size, .requested = request, .stack = stack, .ts = ts,
                                         .seq = ++d->allocs, .tid = bl->event_tid, .allocated = true};
    d->n_blocks++;
    d->allocated += size;
    d->requested += request;
    d->last_alloc_ts = ts;
    site_add(bl, d, stack, (int64_t)size, 1);
    if (d->allocated > d->peak_allocated) {
        d->peak_allocated = d->allocated;
        d->peak_pending = true;
        d->peak.ts = ts;
    }
    if (bl->listener.on_tensor)
        bl->listener.on_tensor(bl->listener.ctx, d, &d->blocks[j], true, ts);
}

static void on_free_requested(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts,
                              uint64_t addr)
{
    size_t j = block_lower(d, addr);
    if (j == d->n_blocks || d->blocks[j].addr != addr || !d->blocks[j].allocated) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a block freed that was not allocated");
        return;
    }
    settle_peak(bl, d, ts);
    struct cmt_bl_block *k = &d->blocks[j];
    if (bl->listener.on_tensor)
        bl->listener.on_tensor(bl->listener.ctx, d, k, false, ts);
    k->allocated = false;
    d->allocated -= k->size;
    d->requested -= k->requested;
    site_add(bl, d, k->stack, -(int64_t)k->size, -1);
}

static void on_free_completed(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts,
                              uint64_t addr)
{
    size_t j = block_lower(d, addr);
    if (j == d->n_blocks || d->blocks[j].addr != addr) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a block's free completed that was not allocated");
        return;
    }
    if (d->blocks[j].allocated)
        on_free_requested(bl, d, api, ts, addr);
    memmove(&d->blocks[j], &d->blocks[j + 1], (d->n_blocks - j - 1) * sizeof *d->blocks);
    d->n_blocks--;
}

static void segment_insert(struct cmt_block_layer *bl, struct cmt_bl_device *d, size_t at, uint64_t addr,
                           uint64_t size, bool expandable)
{
    if (!grow((void **)&d->segments, &d->cap_segments, d->n_segments + 1, sizeof *d->segments)) {
        bl->out_of_memory = true;
        return;
    }
    memmove(&d->segments[at + 1], &d->segments[at], (d->n_segments - at) * sizeof *d->segments);
    d->segments[at] = (struct cmt_bl_segment){addr, size, expandable};
    d->n_segments++;
}

static void segment_remove(struct cmt_bl_device *d, size_t at)
{
    memmove(&d->segments[at], &d->segments[at + 1], (d->n_segments - at - 1) * sizeof *d->segments);
    d->n_segments--;
}

static bool blocks_in(const struct cmt_bl_device *d, uint64_t addr, uint64_t size)
{
    size_t j = block_lower(d, addr);
    return j < d->n_blocks && d->blocks[j].addr < addr + size;
}

static void on_segment_alloc(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts,
                             uint64_t addr, uint64_t size)
{
    bool in;
    size_t at = segment_index(d, addr, &in);
    if (in || (at < d->n_segments && d->segments[at].addr < addr + size)) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a segment over a live segment");
        return;
    }
    segment_insert(bl, d, at, addr, size, false);
    d->reserved += size;
    if (d->reserved > d->peak_reserved)
        d->peak_reserved = d->reserved;
}

static void on_segment_free(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts,
                            uint64_t addr, uint64_t size)
{
    bool in;
    size_t at = segment_index(d, addr, &in);
    if (!in || d->segments[at - 1].addr != addr) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a segment released that was not reserved");
        return;
    }
    settle_peak(bl, d, ts);
    struct cmt_bl_segment g = d->segments[at - 1];
    if (size && size != g.size)
        inconsistent(bl, api, d->ordinal, ts, addr, "a segment released with another size");
    if (blocks_in(d, g.addr, g.size))
        inconsistent(bl, api, d->ordinal, ts, addr, "a segment released with blocks in it");
    segment_remove(d, at - 1);
    d->reserved -= g.size;
}

/* Expandable segments: mapped ranges join the segment they extend. */
static void on_segment_map(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts,
                           uint64_t addr, uint64_t size)
{
    bool in;
    size_t at = segment_index(d, addr, &in);
    if (in) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a range mapped over a mapped one");
        return;
    }
    d->reserved += size;
    if (d->reserved > d->peak_reserved)
        d->peak_reserved = d->reserved;
    if (at > 0 && d->segments[at - 1].addr + d->segments[at - 1].size == addr) {
        d->segments[at - 1].size += size;
        if (at < d->n_segments && d->segments[at].addr == addr + size) {
            d->segments[at - 1].size += d->segments[at].size;
            segment_remove(d, at);
        }
        return;
    }
    if (at < d->n_segments && d->segments[at].addr == addr + size) {
        d->segments[at].addr = addr;
        d->segments[at].size += size;
        return;
    }
    segment_insert(bl, d, at, addr, size, true);
}

static void on_segment_unmap(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint8_t api, uint64_t ts,
                             uint64_t addr, uint64_t size)
{
    bool in;
    size_t at = segment_index(d, addr, &in);
    if (!in || addr + size > d->segments[at - 1].addr + d->segments[at - 1].size) {
        inconsistent(bl, api, d->ordinal, ts, addr, "a range unmapped that was not mapped");
        return;
    }
    if (blocks_in(d, addr, size))
        inconsistent(bl, api, d->ordinal, ts, addr, "a range unmapped with blocks in it");
    settle_peak(bl, d, ts);
    struct cmt_bl_segment g = d->segments[at - 1];
    d->reserved -= size;
    segment_remove(d, at - 1);
    if (addr + size < g.addr + g.size)
        segment_insert(bl, d, at - 1, addr + size, g.addr + g.size - addr - size, g.expandable);
    if (addr > g.addr)
        segment_insert(bl, d, at - 1, g.addr, addr - g.addr, g.expandable);
}

static void on_oom(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint64_t ts, uint64_t request,
                   uint64_t stack, uint64_t device_free)
{
    struct cmt_bl_oom *n = realloc(d->ooms, (d->n_ooms + 1) * sizeof *n);
    if (!n) {
        bl->out_of_memory = true;
        return;
    }
    d->ooms = n;
    struct cmt_bl_oom *o = &d->ooms[d->n_ooms++];
    memset(o, 0, sizeof *o);
    o->request = request;
    o->rounded = cmt_bl_round(request);
    o->device_free = device_free;
    o->stack = stack;
    o->tid = bl->event_tid;
    take_snapshot(bl, d, &o->at, ts);
    uint64_t cache_free = o->at.reserved > o->at.allocated ? o->at.reserved - o->at.allocated : 0;
    o->expandable_would_serve = cache_free + device_free >= o->rounded;
    o->verdict = cache_free >= o->rounded || o->expandable_would_serve ? CMT_BL_VERDICT_FRAGMENTATION
                                                                       : CMT_BL_VERDICT_CAPACITY;
}

/* Every change of the tensors' or the segments' bytes, in time order. */
static void add_point(struct cmt_block_layer *bl, struct cmt_bl_device *d, uint64_t ts)
{
    const struct cmt_bl_point *last = d->n_points ? &d->points[d->n_points - 1] : NULL;
    if (last ? last->allocated == d->allocated && last->reserved == d->reserved : !d->allocated && !d->reserved)
        return;
    if (d->n_points == d->cap_points) {
        size_t cap = d->cap_points ? 2 * d->cap_points : 256;
        struct cmt_bl_point *p = realloc(d->points, cap * sizeof *p);
        if (!p) {
            bl->out_of_memory = true;
            return;
        }
        d->points = p;
        d->cap_points = cap;
    }
    d->points[d->n_points++] = (struct cmt_bl_point){ts, d->allocated, d->reserved};
}

void cmt_block_layer_event(struct cmt_block_layer *bl, uint8_t api, int32_t device, uint64_t ts, uint64_t addr,
                           uint64_t size, uint64_t stack, const uint64_t aux[CMT_AUX_COUNT])
{
    bl->seen = true;
    bl->events++;
    struct cmt_bl_device *d = device_of(bl, device);
    if (!d) {
        inconsistent(bl, api, device, ts, addr, "more devices than the block layer follows");
        return;
    }
    d->events++;
    switch (api) {
    case CMT_API_TORCH_ALLOC:
        on_alloc(bl, d, api, ts, addr, size, stack);
        break;
    case CMT_API_TORCH_FREE_REQUESTED:
        on_free_requested(bl, d, api, ts, addr);
        break;
    case CMT_API_TORCH_FREE_COMPLETED:
        on_free_completed(bl, d, api, ts, addr);
        break;
    case CMT_API_TORCH_SEGMENT_ALLOC:
        on_segment_alloc(bl, d, api, ts, addr, size);
        break;
    case CMT_API_TORCH_SEGMENT_FREE:
        on_segment_free(bl, d, api, ts, addr, size);
        break;
    case CMT_API_TORCH_SEGMENT_MAP:
        on_segment_map(bl, d, api, ts, addr, size);
        break;
    case CMT_API_TORCH_SEGMENT_UNMAP:
        on_segment_unmap(bl, d, api, ts, addr, size);
        break;
    case CMT_API_TORCH_OOM:
        on_oom(bl, d, ts, size, stack, aux[CMT_BLOCK_AUX_DEVICE_FREE]);
        break;
    default:
        break; /* an api of a newer writer */
    }
    add_point(bl, d, ts);
}

void cmt_block_layer_listen(struct cmt_block_layer *bl, const struct cmt_bl_listener *l)
{
    bl->listener = l ? *l : (struct cmt_bl_listener){0};
}

void cmt_block_layer_finish(struct cmt_block_layer *bl)
{
    for (size_t i = 0; i < bl->n_devices; i++)
        settle_peak(bl, &bl->devices[i], 0);
}

size_t cmt_bl_leaks(const struct cmt_bl_device *d, struct cmt_bl_site **sites, uint64_t *blocks, uint64_t *bytes)
{
    *sites = NULL;
    *blocks = *bytes = 0;
    size_t n = 0;
    struct cmt_bl_site *out = NULL;
    for (size_t i = 0; i < d->n_blocks; i++) {
        const struct cmt_bl_block *k = &d->blocks[i];
        if (!k->allocated)
            continue;
        (*blocks)++;
        *bytes += k->size;
        size_t j = 0;
        while (j < n && out[j].stack != k->stack)
            j++;
        if (j == n) {
            struct cmt_bl_site *q = realloc(out, (n + 1) * sizeof *q);
            if (!q) {
                free(out);
                return (size_t)-1;
            }
            out = q;
            out[n++] = (struct cmt_bl_site){k->stack, 0, 0};
        }
        out[j].bytes += k->size;
        out[j].blocks++;
    }
    if (n)
        qsort(out, n, sizeof *out, by_bytes_desc);
    *sites = out;
    return n;
}

bool cmt_bl_segment_at(const struct cmt_block_layer *bl, int32_t device, uint64_t addr)
{
    for (size_t i = 0; i < bl->n_devices; i++) {
        const struct cmt_bl_device *d = &bl->devices[i];
        if (d->ordinal != device)
            continue;
        bool in;
        size_t at = segment_index(d, addr, &in);
        return in && d->segments[at - 1].addr == addr;
    }
    return false;
}
