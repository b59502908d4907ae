/* SPDX-License-Identifier: MIT */
/* A fragmentation checkpoint (frag.c decides when, oom.c takes one at a
 * failure): a device's holes measured against what bounds its span now, the
 * point added to its series, the worst instant kept with the call sites
 * that pin its holes. */
#include <stdlib.h>
#include <string.h>

#include "forensics.h"

static int interval_cmp_addr(const void *pa, const void *pb)
{
    const struct cmt_interval *a = pa, *b = pb;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The open mappings of another process's memory, ordered, when they changed
 * (the replay's map of open imports: a walk of the mappings open at most at
 * once, not of every one the trace ever opened). Returns -1 when out of
 * memory. */
int cmt_frag_ipc_maps_refresh(struct cmt_forensics *f, const struct cmt_replay *r)
{
    const struct cmt_ipc_state *s = &r->ipc;
    if (s->open_changes == f->ipc_seen)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < s->open.cap; i++) {
        if (!s->open.vals[i])
            continue;
        const struct cmt_ipc_import *m = &s->imports[s->open.vals[i] - 1];
        if (n == f->ipc_maps_cap) {
            size_t c = f->ipc_maps_cap ? f->ipc_maps_cap * 2 : 16;
            struct cmt_interval *b = realloc(f->ipc_maps, c * sizeof *b);
            if (!b)
                return -1;
            f->ipc_maps = b;
            f->ipc_maps_cap = c;
        }
        uint64_t end = m->addr + (m->size ? m->size : 1);
        f->ipc_maps[n++] = (struct cmt_interval){.addr = m->addr, .end = end > m->addr ? end : UINT64_MAX,
                                                 .ts = m->open_ts, .stack = m->stack};
    }
    if (n) /* none open: ipc_maps may still be NULL, which qsort must not get */
        qsort(f->ipc_maps, n, sizeof *f->ipc_maps, interval_cmp_addr);
    f->n_ipc_maps = n;
    f->ipc_seen = s->open_changes;
    f->bounds_stale = true;
    return 0;
}

/* True when [lo, hi) holds an open mapping of another process's memory. */
bool cmt_frag_ipc_maps_overlap(const struct cmt_forensics *f, uint64_t lo, uint64_t hi)
{
    /* the first mapping starting at or after hi; one before it may reach in */
    size_t a = 0, b = f->n_ipc_maps;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (f->ipc_maps[m].addr < hi)
            a = m + 1;
        else
            b = m;
    }
    /* mappings of one process do not overlap, so the one below hi decides;
     * a few more looks for a trace that says otherwise */
    for (size_t i = a, looks = 0; i-- > 0 && looks < 8; looks++)
        if (f->ipc_maps[i].end > lo)
            return true;
    return false;
}

/* What a device's gaps are measured against now (holes.h): the
 * reservations copied in order when they changed, and the open mappings of
 * another process's memory merged with them. Returns -1 when out of
 * memory. */
static int span_bounds(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_device_forensics *d,
                       struct cmt_span_bounds *out)
{
    if (f->reserves_changed) {
        long n = cmt_addr_index_copy(&f->reserve_index, &f->reserves, &f->reserves_cap);
        if (n < 0)
            return -1;
        f->n_reserves = (size_t)n;
        f->reserves_changed = false;
        f->bounds_stale = true;
    }
    if (cmt_frag_ipc_maps_refresh(f, r) != 0)
        return -1;
    uint64_t device_bytes = d ? d->device_bytes : 0;
    if (!f->n_ipc_maps) {
        *out = (struct cmt_span_bounds){f->reserves, f->n_reserves, device_bytes};
        return 0;
    }
    if (f->bounds_stale) {
        size_t n = f->n_reserves + f->n_ipc_maps;
        if (n > f->bounds_cap) {
            struct cmt_interval *b = realloc(f->bounds, n * sizeof *b);
            if (!b)
                return -1;
            f->bounds = b;
            f->bounds_cap = n;
        }
        /* both ordered by address: a merge (holes.h's cursor wants order, not disjointness) */
        size_t i = 0, j = 0, k = 0;
        while (i < f->n_reserves || j < f->n_ipc_maps)
            if (j == f->n_ipc_maps || (i < f->n_reserves && f->reserves[i].addr <= f->ipc_maps[j].addr))
                f->bounds[k++] = f->reserves[i++];
            else
                f->bounds[k++] = f->ipc_maps[j++];
        f->n_bounds = n;
        f->bounds_stale = false;
    }
    *out = (struct cmt_span_bounds){f->bounds, f->n_bounds, device_bytes};
    return 0;
}

int cmt_frag_checkpoint_changed(struct cmt_forensics *f, const struct cmt_replay *r)
{
    uint64_t ts = r->event ? r->event->ts : r->last_ts;
    for (int dv = 0; dv < CMT_MAX_DEVICES; dv++)
        if (f->changed[dv] && cmt_frag_checkpoint(f, r, dv, ts, NULL) != 0)
            return -1;
    f->events_since_checkpoint = 0;
    return 0;
}

/* One side of a hole: the allocation there (its index in the sorted live
 * set) and, unless the other side's site was credited already, the hole. */
struct pin_credit {
    uint32_t stack;
    bool hole;
    uint64_t bytes, ts;
    size_t alloc;
};

static int pin_cmp_stack(const void *pa, const void *pb)
{
    const struct pin_credit *a = pa, *b = pb;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return a->alloc < b->alloc ? -1 : a->alloc > b->alloc;
}

static int pin_cmp_bytes(const void *pa, const void *pb)
{
    const struct cmt_pin_site *a = pa, *b = pb;
    if (a->pinned_bytes != b->pinned_bytes)
        return a->pinned_bytes < b->pinned_bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The call sites whose allocations bound holes: each hole counts once for
 * each site beside it (once when both sides are one site), each allocation
 * beside a hole once among its site's allocations. */
static void rank_pins(struct cmt_frag_worst *w, const struct cmt_interval *v, size_t n,
                      const struct cmt_span_bounds *bounds)
{
    size_t cursor = 0;
    w->n_pins = 0;
    struct pin_credit *c = malloc((2 * n + 1) * sizeof *c);
    if (!c)
        return;
    size_t k = 0;
    uint64_t reach = n ? v[0].end : 0;
    size_t reach_index = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].addr > reach &&
            cmt_holes_gap_kind(bounds, &cursor, reach, v[i].addr, v[reach_index].region, v[i].region) == CMT_GAP_HOLE) {
            uint64_t gap = v[i].addr - reach;
            bool twin = v[i].stack == v[reach_index].stack;
            c[k++] = (struct pin_credit){v[reach_index].stack, true, gap, v[reach_index].ts, reach_index};
            c[k++] = (struct pin_credit){v[i].stack, !twin, twin ? 0 : gap, v[i].ts, i};
        }
        if (v[i].end > reach) {
            reach = v[i].end;
            reach_index = i;
        }
    }
    qsort(c, k, sizeof *c, pin_cmp_stack);
    struct cmt_pin_site *sites = malloc((k + 1) * sizeof *sites);
    if (!sites) {
        free(c);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && sites[m - 1].stack == c[i].stack) {
            sites[m - 1].pinned_bytes += c[i].bytes;
            sites[m - 1].holes += c[i].hole;
            sites[m - 1].allocations += c[i].alloc != c[i - 1].alloc;
            if (c[i].ts < sites[m - 1].oldest_ts)
                sites[m - 1].oldest_ts = c[i].ts;
        } else {
            sites[m++] = (struct cmt_pin_site){c[i].stack, c[i].bytes, c[i].hole, 1, c[i].ts};
        }
    }
    qsort(sites, m, sizeof *sites, pin_cmp_bytes);
    w->n_pins = m < CMT_TOP_PINS ? m : CMT_TOP_PINS;
    memcpy(w->pins, sites, w->n_pins * sizeof *sites);
    free(sites);
    free(c);
}

void cmt_frag_consider_worst(struct cmt_forensics *f, int32_t device, const struct cmt_frag_point *p,
                             const struct cmt_interval *v, size_t n, const struct cmt_hole *top, size_t n_top,
                             const struct cmt_span_bounds *bounds)
{
    struct cmt_device_forensics *d = f->devices[device];
    uint64_t stranded = cmt_holes_stranded(&p->holes);
    /* The worst instant strands the most free bytes of the span outside its
     * largest hole; the earliest wins a tie. */
    if (stranded == 0 || (d->worst.valid && stranded <= cmt_holes_stranded(&d->worst.point.holes)))
        return;
    struct cmt_frag_worst *w = &d->worst;
    w->valid = true;
    w->point = *p;
    w->n_top = n_top;
    for (size_t i = 0; i < n_top; i++)
        w->top[i] = (struct cmt_hole_view){
            .addr = top[i].addr,
            .size = top[i].size,
            .left = v[top[i].left],
            .right = v[top[i].right],
        };
    rank_pins(w, v, n, bounds);
}

int cmt_frag_checkpoint(struct cmt_forensics *f, const struct cmt_replay *r, int32_t device, uint64_t ts,
                        struct cmt_frag_point *out)
{
    struct cmt_device_forensics *d = cmt_forensics_device(f, device);
    if (!d)
        return -1;
    struct cmt_interval *v = NULL;
    long n = -1;
    if (f->opt.track_holes) {
        n = cmt_addr_index_copy(&d->index, &f->scratch, &f->scratch_cap);
        v = f->scratch;
    } else {
        n = cmt_intervals_of_device(&r->live, device, &f->scratch, &f->scratch_cap, &v);
    }
    if (n < 0)
        return -1;
    const struct cmt_account *a = cmt_replay_account(r, device, CMT_CLASS_DEVICE);
    struct cmt_frag_point p = {.ts = ts, .live = a ? a->live : 0};
    if (device >= 0 && device < CMT_MAX_DEVICES) {
        p.vmm_reserved = r->virt[device + 1].reserve_live;
        p.vmm_mapped = r->virt[device + 1].map_live;
    }
    size_t n_top = 0;
    struct cmt_span_bounds bounds;
    if (span_bounds(f, r, d, &bounds) != 0)
        return -1;
    cmt_holes_scan(v, (size_t)n, &bounds, &p.holes, f->scratch_holes, CMT_TOP_HOLES, &n_top);
    bool halved;
    struct cmt_frag_point *slot = cmt_series_push(&d->point_series, d->points, sizeof *d->points, &halved);
    *slot = p;
    if (halved && f->checkpoint_interval < (UINT64_MAX >> 1))
        f->checkpoint_interval *= 2;
    cmt_frag_consider_worst(f, device, &p, v, (size_t)n, f->scratch_holes, n_top, &bounds);
    d->last_point = p;
    if (f->changed[device]) {
        f->changed[device] = false;
        f->devices_changed--;
    }
    cmt_frag_clock_set(f); /* checkpoint_interval or devices_changed moved */
    f->checkpoints++;
    if (out)
        *out = p;
    return 0;
}
