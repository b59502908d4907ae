/* SPDX-License-Identifier: MIT */
/* Fragmentation over time: each device's span allocations (holes.h), holes
 * measured at checkpoints, the worst instant kept with the holes and the
 * allocations that bound them; internal waste and size churn per call site. */
#include <stdlib.h>
#include <string.h>

#include "alloc_views.h"
#include "forensics.h"

static bool is_pitched(uint8_t api)
{
    return cmt_api_is_pitched(api);
}

/* Granted minus requested bytes of a pitched allocation: when it becomes
 * live, from the event that allocates it (its aux0 is the bytes asked for,
 * replay.h); when it goes, from what was kept then (the live set keeps no
 * aux word for device pointers). Returns -1 when out of memory. */
static int pitch_waste(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_live *l, bool live,
                       uint64_t *waste)
{
    *waste = 0;
    if (!is_pitched(l->api))
        return 0;
    if (!live) {
        struct cmt_live kept;
        if (cmt_live_set_take(&f->pitched, CMT_NS_POINTER, l->addr, &kept))
            *waste = kept.size;
        return 0;
    }
    const struct cmt_replay_in *e = r->event;
    if (!e || e->type != CMT_REC_ALLOC || !e->aux0 || e->aux0 >= l->size)
        return 0;
    *waste = l->size - e->aux0;
    struct cmt_live kept = {.addr = l->addr, .size = *waste, .ns = CMT_NS_POINTER, .device = l->device};
    return cmt_live_set_put(&f->pitched, &kept, NULL) < 0 ? -1 : 0;
}

/* Bytes up to the next 512-byte step of a plain device allocation: what the
 * simulated device and NVIDIA's drivers add at least. Pitched ones are
 * already whole steps. */
static uint64_t round_waste(const struct cmt_live *l)
{
    if (l->kind != CMT_KIND_DEVICE || is_pitched(l->api))
        return 0;
    uint64_t rem = l->size % CMT_HOLE_MIN_BYTES;
    return rem ? CMT_HOLE_MIN_BYTES - rem : 0;
}

static void *grow_per_stack(void *array, size_t *cap, uint32_t stack, size_t elem)
{
    if (stack < *cap)
        return array;
    size_t n = *cap ? *cap : 64;
    while (n <= stack)
        n *= 2;
    char *a = realloc(array, n * elem);
    if (!a)
        return NULL;
    memset(a + *cap * elem, 0, (n - *cap) * elem);
    *cap = n;
    return a;
}

/* Stream-ordered bytes live on the device and their peak (forensics.h). */
static inline void note_async(struct cmt_device_forensics *d, const struct cmt_live *l, bool live, uint64_t ts)
{
    if (live) {
        d->async_live += l->size;
        if (d->async_live > d->async_peak) {
            d->async_peak = d->async_live;
            d->async_peak_ts = ts;
        }
    } else {
        d->async_live -= l->size < d->async_live ? l->size : d->async_live;
    }
}

static int note_waste(struct cmt_forensics *f, const struct cmt_replay *r, struct cmt_device_forensics *d,
                      const struct cmt_live *l, bool live, uint64_t ts)
{
    uint64_t pitch, round = round_waste(l);
    if (pitch_waste(f, r, l, live, &pitch) != 0)
        return -1;
    if (!pitch && !round)
        return 0;
    if (live) {
        struct cmt_waste_site *w = grow_per_stack(f->waste, &f->waste_cap, l->stack, sizeof *w);
        if (!w)
            return -1;
        f->waste = w;
        w[l->stack].pitch_bytes += pitch;
        w[l->stack].pitch_count += pitch != 0;
        w[l->stack].round_bytes += round;
        d->pitch_waste_live += pitch;
        d->round_waste_live += round;
        if (d->pitch_waste_live > d->pitch_waste_peak) {
            d->pitch_waste_peak = d->pitch_waste_live;
            d->pitch_waste_peak_ts = ts;
        }
        if (d->round_waste_live > d->round_waste_peak) {
            d->round_waste_peak = d->round_waste_live;
            d->round_waste_peak_ts = ts;
        }
    } else {
        d->pitch_waste_live -= pitch;
        d->round_waste_live -= round;
    }
    return 0;
}

static int note_opened(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_device_forensics *d,
                       const struct cmt_addr_removal *rm)
{
    if (!rm->interior || rm->hole_size < CMT_HOLE_MIN_BYTES)
        return 0;
    /* address space between the driver's ranges opens no hole (asked of the
     * index: no copy per release) */
    if ((d->device_bytes && rm->hole_size > d->device_bytes) ||
        cmt_addr_index_overlaps(&f->reserve_index, rm->hole_addr, rm->hole_addr + rm->hole_size))
        return 0;
    /* nor a gap holding another process's memory mapped here */
    if (r->ipc.live_count) {
        if (cmt_frag_ipc_maps_refresh(f, r) != 0)
            return -1;
        if (cmt_frag_ipc_maps_overlap(f, rm->hole_addr, rm->hole_addr + rm->hole_size))
            return 0;
    }
    uint32_t stack = rm->removed.stack;
    struct cmt_opener_site *o = grow_per_stack(f->openers, &f->openers_cap, stack, sizeof *o);
    if (!o)
        return -1;
    f->openers = o;
    o[stack].count++;
    o[stack].bytes += rm->hole_size;
    if (rm->hole_size > o[stack].largest)
        o[stack].largest = rm->hole_size;
    return 0;
}

/* The ordered index of a device's span allocations (track_holes): each
 * release knows the hole it opens. */
static int index_change(struct cmt_forensics *f, const struct cmt_replay *r, struct cmt_device_forensics *d,
                        const struct cmt_live *l, bool live, uint64_t ts)
{
    if (live) {
        f->span_total++;
        struct cmt_interval v = {.addr = l->addr, .end = l->addr + (l->size ? l->size : 1), .ts = l->ts,
                                 .stack = l->stack, .region = cmt_holes_region(l)};
        return cmt_addr_index_insert(&d->index, &v);
    }
    f->span_total--;
    struct cmt_addr_removal rm;
    cmt_addr_index_remove(&d->index, l->addr, l->stack, ts, &rm);
    return rm.found ? note_opened(f, r, d, &rm) : 0;
}

/* A VMM reservation made or released: the ordered index of every device's
 * (struct cmt_span_bounds), which the clock counts with the span (a
 * checkpoint copies it). Returns -1 when out of memory. */
static int reserve_change(struct cmt_forensics *f, const struct cmt_live *l, bool live)
{
    f->reserves_changed = true;
    if (live) {
        struct cmt_interval v = {.addr = l->addr, .end = l->addr + (l->size ? l->size : 1), .ts = l->ts,
                                 .stack = l->stack};
        size_t before = f->reserve_index.count;
        if (cmt_addr_index_insert(&f->reserve_index, &v) != 0)
            return -1;
        if (f->opt.track_holes)
            f->span_total += f->reserve_index.count - before; /* 0 when it replaced one */
        return 0;
    }
    struct cmt_addr_removal rm;
    cmt_addr_index_remove(&f->reserve_index, l->addr, 0, 0, &rm);
    if (rm.found && f->opt.track_holes)
        f->span_total--;
    return 0;
}

/* A change of any kind, whatever the state: a pitched allocation's waste,
 * rounding waste, the first change of a device or at a call site, a
 * release dated before its allocation, VMM reservations and mappings. */
static __attribute__((noinline)) int on_change_general(struct cmt_forensics *f, const struct cmt_replay *r,
                                                       const struct cmt_live *l, bool live)
{
    const struct cmt_replay_in *e = r->event;
    uint64_t ts = e ? e->ts : l->ts;
    if (l->ns == CMT_NS_VMM_RESERVE && reserve_change(f, l, live) != 0)
        return -1;
    if (cmt_kind_holds_memory(l->kind)) {
        if (live) {
            if (cmt_churn_alloc(&f->churn, l->stack, l->size) != 0)
                return -1;
        } else {
            cmt_churn_release(&f->churn, l->stack, ts > l->ts ? ts - l->ts : 0);
        }
    }
    if (l->kind == CMT_KIND_ASYNC && l->device >= 0) {
        struct cmt_device_forensics *d = cmt_forensics_device(f, l->device);
        if (!d)
            return -1;
        note_async(d, l, live, ts);
    }
    if (cmt_holes_counts(l)) {
        struct cmt_device_forensics *d = cmt_forensics_device(f, l->device);
        if (!d)
            return -1;
        if (note_waste(f, r, d, l, live, ts) != 0)
            return -1;
        if (!f->changed[l->device]) {
            f->changed[l->device] = true;
            f->devices_changed++;
            cmt_frag_clock_set(f);
        }
        if (f->opt.track_holes && index_change(f, r, d, l, live, ts) != 0)
            return -1;
    }
    f->events_since_checkpoint++;
    if (cmt_frag_checkpoint_due(f, r) && cmt_frag_checkpoint_changed(f, r) != 0)
        return -1;
    /* the failure examiner follows a thread only after its failure */
    if (f->n_watches && cmt_oom_on_change(f, r, l, live) != 0)
        return -1;
    cmt_frag_clock_set(f); /* a watch may have ended */
    return 0;
}

/* What on_change_fast needs of a change's namespace and kind, and of its
 * API: one table lookup each (struct cmt_forensics's ns_kind_class and
 * api_class, filled by cmt_frag_init). */
enum {
    CLASS_SPAN = 1,    /* plain or pool: in its device's span (cmt_holes_counts) when of a device */
    CLASS_ROUND = 2,   /* plain: rounding waste (round_waste) */
    CLASS_GENERAL = 4, /* no memory (VMM reservations, mappings), pitched: on_change_general */
    /* of the kind alone, for the views (views_then_fast): */
    CLASS_HOLDS = 8,        /* cmt_kind_holds_memory */
    CLASS_DEVICE_KIND = 16, /* cmt_class_of_kind is CMT_CLASS_DEVICE */
};

/* The rest of a common change, when there is any: a size new to the site,
 * the ordered index, a checkpoint, a failure watched. */
static __attribute__((noinline)) int on_change_rest(struct cmt_forensics *f, const struct cmt_replay *r,
                                                    const struct cmt_live *l, bool live, bool new_size)
{
    if (new_size && cmt_churn_add_size(&f->churn.sites[l->stack], l->size, &f->churn.pool) != 0)
        return -1;
    /* on_change_fast found the device's record */
    if (f->opt.track_holes && cmt_holes_counts(l) &&
        index_change(f, r, f->devices[l->device], l, live, r->event ? r->event->ts : l->ts) != 0)
        return -1;
    if (cmt_frag_checkpoint_due(f, r) && cmt_frag_checkpoint_changed(f, r) != 0)
        return -1;
    if (f->n_watches) {
        if (cmt_oom_on_change(f, r, l, live) != 0)
            return -1;
        cmt_frag_clock_set(f); /* a watch may have ended */
    }
    return 0;
}

/* on_change for the common changes, live and indexed (opt.track_holes)
 * constants: a plain allocation in whole 512-byte steps or a pool one, of
 * a device already seen, pinned host or managed memory, at a call site the
 * churn table holds. The same as on_change_general, with the rare work out
 * of line (tail calls) so that this path saves no registers. */
static inline __attribute__((always_inline)) int on_change_fast_nk(struct cmt_forensics *f,
                                                                   const struct cmt_replay *r,
                                                                   const struct cmt_live *l, const bool live,
                                                                   const bool indexed, unsigned nk)
{
    uint32_t stack = l->stack;
    unsigned cls = (nk & (CLASS_SPAN | CLASS_ROUND | CLASS_GENERAL)) | f->api_class[l->api];
    /* (a release's lifetime: from the event's time, not before the allocation) */
    if (__builtin_expect(stack >= f->churn.cap || (cls & CLASS_GENERAL) ||
                             (!live && (!r->event || r->event->ts < l->ts)),
                         0))
        return on_change_general(f, r, l, live);
    bool span = cls & CLASS_SPAN;
    if (span) {
        /* a device of 0 to 63; rounding waste (round_waste) is rare: most
         * sizes are whole steps */
        uint32_t device = (uint32_t)l->device;
        if (__builtin_expect(device >= CMT_MAX_DEVICES ||
                                 ((cls & CLASS_ROUND) && l->size % CMT_HOLE_MIN_BYTES != 0),
                             0))
            return on_change_general(f, r, l, live);
        /* changed since its last checkpoint: it has a record */
        if (__builtin_expect(!f->changed[device], 0)) {
            if (!f->devices[device])
                return on_change_general(f, r, l, live);
            f->changed[device] = true;
            f->devices_changed++;
            cmt_frag_clock_set(f);
        }
        if (__builtin_expect(l->kind == CMT_KIND_ASYNC, 0))
            note_async(f->devices[device], l, live, r->event ? r->event->ts : l->ts);
    }
    struct cmt_churn_site *s = &f->churn.sites[stack];
    bool new_size = false;
    if (live) {
        new_size = cmt_churn_site_alloc(s, l->size);
    } else {
        cmt_churn_site_release(s, r->event->ts - l->ts);
    }
    uint64_t ev = ++f->events_since_checkpoint;
    /* With the index, a span change moves span_total: the rest decides. */
    uint64_t examined = indexed ? f->span_total : r->live.count;
    bool due = ev >= f->clock_floor && ev >= f->clock_step * examined;
    if (__builtin_expect(due || new_size || (indexed && span), 0)) {
        if (!indexed && !due)
            return cmt_churn_add_size(s, l->size, &f->churn.pool); /* new_size */
        return on_change_rest(f, r, l, live, new_size);
    }
    return 0;
}

static inline __attribute__((always_inline)) int on_change_fast(struct cmt_forensics *f, const struct cmt_replay *r,
                                                                const struct cmt_live *l, const bool live,
                                                                const bool indexed)
{
    return on_change_fast_nk(f, r, l, live, indexed, f->ns_kind_class[l->ns | l->kind << 8]);
}

/* The observer's on_change, called for every allocation and release. */
static int on_change_plain(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return live ? on_change_fast(ctx, r, l, true, false) : on_change_fast(ctx, r, l, false, false);
}

/* The same with the ordered index (opt.track_holes). */
static int on_change_indexed(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return live ? on_change_fast(ctx, r, l, true, true) : on_change_fast(ctx, r, l, false, true);
}

/* The views' on_change followed by this one's (cmt_frag_follow_views), in
 * one function: one call per change, one set of register saves, where
 * alloc_views.c's on_change calling on_change_plain through a pointer cost
 * about 30 instructions per event of the twin (callgrind). */
static inline __attribute__((always_inline)) int views_then_fast(void *ctx, const struct cmt_replay *r,
                                                                 const struct cmt_live *l, const bool live,
                                                                 const bool indexed, const bool all)
{
    struct cmt_alloc_views *v = ctx;
    struct cmt_forensics *f = v->then_ctx;
    /* one lookup answers the views' tests of the kind and the tracker's */
    unsigned nk = f->ns_kind_class[l->ns | l->kind << 8];
    if (cmt_alloc_views_change_known(v, r, l, live, nk & CLASS_HOLDS, nk & CLASS_DEVICE_KIND, all) != 0)
        return -1;
    return on_change_fast_nk(f, r, l, live, indexed, nk);
}

/* With every view followed (a report's), and not. */
static int on_views_plain_all(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return live ? views_then_fast(ctx, r, l, true, false, true) : views_then_fast(ctx, r, l, false, false, true);
}

static int on_views_indexed_all(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return live ? views_then_fast(ctx, r, l, true, true, true) : views_then_fast(ctx, r, l, false, true, true);
}

static int on_views_plain(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return live ? views_then_fast(ctx, r, l, true, false, false) : views_then_fast(ctx, r, l, false, false, false);
}

static int on_views_indexed(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return live ? views_then_fast(ctx, r, l, true, true, false) : views_then_fast(ctx, r, l, false, true, false);
}

void cmt_frag_follow_views(struct cmt_forensics *f, struct cmt_alloc_views *v, struct cmt_replay *r)
{
    v->then = f->observer.on_change;
    v->then_ctx = f;
    bool all = v->site_calls && v->thread_use && v->holders;
    if (f->opt.track_holes)
        v->observer.on_change = all ? on_views_indexed_all : on_views_indexed;
    else
        v->observer.on_change = all ? on_views_plain_all : on_views_plain;
    cmt_replay_hand_over_changes(r, &f->observer);
}

void cmt_frag_init(struct cmt_forensics *f)
{
    /* cmt_holes_counts but for the device, round_waste but for the API */
    for (unsigned k = 0; k < 256; k++) {
        unsigned of_kind = (cmt_kind_holds_memory(k) ? CLASS_HOLDS : CLASS_GENERAL) |
                           (cmt_class_of_kind(k) == CMT_CLASS_DEVICE ? CLASS_DEVICE_KIND : 0);
        memset(&f->ns_kind_class[k << 8], (int)of_kind, 256);
    }
    for (unsigned ns = 0; ns < 256; ns++) {
        for (unsigned k = CMT_KIND_DEVICE; k <= CMT_KIND_ASYNC; k++) {
            struct cmt_live l = {.ns = (uint8_t)ns, .kind = (uint8_t)k, .device = 0};
            if (cmt_holes_counts(&l))
                f->ns_kind_class[ns | k << 8] |= k == CMT_KIND_DEVICE ? CLASS_SPAN | CLASS_ROUND : CLASS_SPAN;
        }
    }
    for (unsigned a = 0; a < 256; a++)
        f->api_class[a] = is_pitched((uint8_t)a) ? CLASS_GENERAL : 0;
    f->observer.on_change = f->opt.track_holes ? on_change_indexed : on_change_plain;
    cmt_frag_clock_set(f);
}
