/* SPDX-License-Identifier: MIT */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

enum cmt_account_class cmt_class_of_kind(unsigned kind)
{
    switch (kind) {
    case CMT_KIND_MANAGED:
        return CMT_CLASS_MANAGED;
    case CMT_KIND_HOST_PINNED:
        return CMT_CLASS_HOST;
    default:
        return CMT_CLASS_DEVICE;
    }
}

enum cmt_account_class cmt_class_of_allocation(unsigned kind, int32_t device)
{
    return device < 0 ? CMT_CLASS_HOST : cmt_class_of_kind(kind);
}

enum cmt_namespace cmt_namespace_of_kind(unsigned kind)
{
    switch (kind) {
    case CMT_KIND_VMM_PHYSICAL:
        return CMT_NS_VMM_HANDLE;
    case CMT_KIND_VMM_RESERVE:
        return CMT_NS_VMM_RESERVE;
    case CMT_KIND_VMM_MAP:
        return CMT_NS_VMM_MAP;
    case CMT_KIND_ARRAY:
        return CMT_NS_ARRAY;
    default:
        return CMT_NS_POINTER;
    }
}

bool cmt_kind_holds_memory(unsigned kind)
{
    return kind != CMT_KIND_VMM_RESERVE && kind != CMT_KIND_VMM_MAP;
}

int cmt_replay_init(struct cmt_replay *r)
{
    memset(r, 0, sizeof *r);
    return cmt_live_set_init(&r->live);
}

static void account_free(struct cmt_account *a)
{
    if (!a)
        return;
    free(a->site_live);
    free(a->site_peak);
    free(a->dirty);
    free(a->dirty_list);
    free(a);
}

void cmt_replay_free(struct cmt_replay *r)
{
    cmt_live_set_free(&r->live);
    free(r->maps.addrs);
    for (int d = 0; d <= CMT_MAX_DEVICES; d++)
        for (int c = 0; c < CMT_CLASS_COUNT; c++)
            account_free(r->accounts[d][c]);
    free(r->sites);
    memset(r, 0, sizeof *r);
}

static size_t next_cap(size_t need)
{
    size_t cap = 64;
    while (cap <= need)
        cap *= 2;
    return cap;
}

static int account_reserve_site(struct cmt_account *a, uint32_t site)
{
    if (site < a->sites_cap)
        return 0;
    size_t cap = next_cap(site);
    struct cmt_site_cell *live = realloc(a->site_live, cap * sizeof *live);
    if (!live)
        return -1;
    a->site_live = live;
    struct cmt_site_cell *peak = realloc(a->site_peak, cap * sizeof *peak);
    if (!peak)
        return -1;
    a->site_peak = peak;
    uint8_t *dirty = realloc(a->dirty, cap);
    if (!dirty)
        return -1;
    a->dirty = dirty;
    uint32_t *list = realloc(a->dirty_list, cap * sizeof *list);
    if (!list)
        return -1;
    a->dirty_list = list;
    size_t old = a->sites_cap;
    memset(live + old, 0, (cap - old) * sizeof *live);
    memset(peak + old, 0, (cap - old) * sizeof *peak);
    memset(dirty + old, 0, cap - old);
    a->sites_cap = cap;
    return 0;
}

static struct cmt_account *account_get(struct cmt_replay *r, int32_t device, unsigned cls)
{
    struct cmt_account **slot = &r->accounts[device + 1][cls];
    if (!*slot) {
        struct cmt_account *a = calloc(1, sizeof *a);
        if (!a)
            return NULL;
        a->device = device;
        a->cls = (uint8_t)cls;
        a->seen = true;
        *slot = a;
    }
    return *slot;
}

static int site_stats_reserve(struct cmt_replay *r, uint32_t site)
{
    if (site < r->sites_cap)
        return 0;
    size_t cap = next_cap(site);
    struct cmt_site_stats *s = realloc(r->sites, cap * sizeof *s);
    if (!s)
        return -1;
    memset(s + r->sites_cap, 0, (cap - r->sites_cap) * sizeof *s);
    r->sites = s;
    r->sites_cap = cap;
    return 0;
}

static void account_change(struct cmt_account *a, uint32_t site, unsigned kind, uint64_t bytes, bool add,
                           uint64_t ts)
{
    struct cmt_site_cell *cell = &a->site_live[site];
    if (add) {
        a->live += bytes;
        a->live_count++;
        a->live_by_kind[kind & 7] += bytes;
        cell->bytes += bytes;
        cell->count++;
    } else {
        a->live -= bytes;
        a->live_count--;
        a->live_by_kind[kind & 7] -= bytes;
        cell->bytes -= bytes;
        cell->count--;
    }
    if (!a->dirty[site]) {
        a->dirty[site] = 1;
        a->dirty_list[a->n_dirty++] = site;
    }
    if (add && a->live > a->peak) {
        for (size_t i = 0; i < a->n_dirty; i++) {
            uint32_t s = a->dirty_list[i];
            a->site_peak[s] = a->site_live[s];
            a->dirty[s] = 0;
        }
        a->n_dirty = 0;
        a->peak = a->live;
        a->peak_ts = ts;
        a->peak_count = a->live_count;
        memcpy(a->peak_by_kind, a->live_by_kind, sizeof a->peak_by_kind);
    }
}

static void stat_change(uint64_t *live, uint64_t *peak, uint64_t *count, uint64_t bytes, bool add)
{
    if (add) {
        *live += bytes;
        (*count)++;
        if (*live > *peak)
            *peak = *live;
    } else {
        *live -= bytes;
        (*count)--;
    }
}

static void virtual_change(struct cmt_replay *r, const struct cmt_live *l, bool add)
{
    struct cmt_virtual_stats *v = &r->virt[l->device + 1];
    switch (l->kind) {
    case CMT_KIND_VMM_PHYSICAL:
        stat_change(&v->physical_live, &v->physical_peak, &v->physical_count, l->size, add);
        break;
    case CMT_KIND_VMM_RESERVE:
        stat_change(&v->reserve_live, &v->reserve_peak, &v->reserve_count, l->size, add);
        break;
    case CMT_KIND_VMM_MAP:
        stat_change(&v->map_live, &v->map_peak, &v->map_count, l->size, add);
        break;
    default:
        break;
    }
}

/* Adds or removes a live allocation from every aggregate. */
static int apply(struct cmt_replay *r, const struct cmt_live *l, bool add, uint64_t ts)
{
    virtual_change(r, l, add);
    if (cmt_kind_holds_memory(l->kind)) {
        struct cmt_account *a = account_get(r, l->device, cmt_class_of_allocation(l->kind, l->device));
        if (!a || account_reserve_site(a, l->stack) != 0)
            return -1;
        account_change(a, l->stack, l->kind, l->size, add, ts);
    }
    if (r->observer && r->observer->on_change)
        return r->observer->on_change(r->observer->ctx, r, l, add);
    return 0;
}

/* --- VMM: mappings by address, physical handles by mapping count ---------- */

static size_t map_lower_bound(const struct cmt_map_index *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->addrs[mid] < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int map_index_insert(struct cmt_map_index *m, uint64_t addr)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        uint64_t *a = realloc(m->addrs, cap * sizeof *a);
        if (!a)
            return -1;
        m->addrs = a;
        m->cap = cap;
    }
    size_t at = map_lower_bound(m, addr);
    memmove(m->addrs + at + 1, m->addrs + at, (m->n - at) * sizeof *m->addrs);
    m->addrs[at] = addr;
    m->n++;
    return 0;
}

/* The physical handle a mapping maps; NULL when it was created before the
 * trace (or by another process and imported). */
static struct cmt_live *mapped_handle(struct cmt_replay *r, uint64_t handle)
{
    return (struct cmt_live *)cmt_live_set_find(&r->live, CMT_NS_VMM_HANDLE, handle);
}

/* A handle's memory goes once it is released and its last mapping is gone,
 * whichever comes last (cuMemRelease documents this). */
static int handle_unmapped(struct cmt_replay *r, uint64_t handle, uint64_t ts)
{
    struct cmt_live *h = mapped_handle(r, handle);
    if (!h)
        return 0;
    if (h->vmm.map_refs)
        h->vmm.map_refs--;
    if (h->vmm.map_refs || !h->vmm.released)
        return 0;
    struct cmt_live gone;
    cmt_live_set_take(&r->live, CMT_NS_VMM_HANDLE, handle, &gone);
    return apply(r, &gone, false, ts);
}

static int on_release(struct cmt_replay *r, const struct cmt_event_in *e)
{
    struct cmt_live *h = mapped_handle(r, e->addr);
    if (!h) {
        r->unmatched_frees++;
        return 0;
    }
    r->frees++;
    r->sites[h->stack].frees++;
    if (h->vmm.map_refs) {
        h->vmm.released = 1; /* still mapped: the memory stays */
        return 0;
    }
    struct cmt_live gone;
    cmt_live_set_take(&r->live, CMT_NS_VMM_HANDLE, e->addr, &gone);
    return apply(r, &gone, false, e->ts);
}

/* cuMemUnmap(ptr, size) removes every mapping starting in [ptr, ptr+size):
 * a driver refuses a span that splits one, so a successful unmap covers
 * whole mappings. */
static int on_unmap(struct cmt_replay *r, const struct cmt_event_in *e)
{
    struct cmt_map_index *m = &r->maps;
    uint64_t end = e->size && e->addr + e->size > e->addr ? e->addr + e->size : e->addr + 1;
    size_t first = map_lower_bound(m, e->addr), last = first;
    while (last < m->n && m->addrs[last] < end)
        last++;
    if (first == last) {
        r->unmatched_frees++;
        return 0;
    }
    for (size_t i = first; i < last; i++) {
        struct cmt_live gone;
        if (!cmt_live_set_take(&r->live, CMT_NS_VMM_MAP, m->addrs[i], &gone))
            continue;
        r->frees++;
        r->sites[gone.stack].frees++;
        if (apply(r, &gone, false, e->ts) != 0 || handle_unmapped(r, gone.aux, e->ts) != 0)
            return -1;
    }
    memmove(m->addrs + first, m->addrs + last, (m->n - last) * sizeof *m->addrs);
    m->n -= last - first;
    return 0;
}

/* A new mapping: attributed to its handle's device, and counted on it. */
static void on_map(struct cmt_replay *r, struct cmt_live *l)
{
    struct cmt_live *h = mapped_handle(r, l->aux);
    if (h) {
        l->device = h->device;
        h->vmm.map_refs++;
    }
}

static int note_failure(struct cmt_replay *r, const struct cmt_event_in *e, uint32_t stack)
{
    if (r->observer && r->observer->on_failure && r->observer->on_failure(r->observer->ctx, r, e) != 0)
        return -1;
    r->failed_allocs++;
    r->sites[stack].failures++;
    if (r->n_failures == CMT_MAX_FAILURES_KEPT)
        return 0;
    const struct cmt_account *a = cmt_replay_account(r, e->device, CMT_CLASS_DEVICE);
    r->failures[r->n_failures++] = (struct cmt_failure){
        .api = e->api,
        .kind = e->kind,
        .result = e->result,
        .device = e->device,
        .tid = e->tid,
        .size = e->size,
        .ts = e->ts,
        .stack = stack,
        .live_device_bytes = a ? a->live : 0,
    };
    return 0;
}

static int on_alloc(struct cmt_replay *r, const struct cmt_event_in *e, uint32_t stack)
{
    struct cmt_site_stats *s = &r->sites[stack];
    if (e->result != 0) {
        if (note_failure(r, e, stack) != 0)
            return -1;
        if (!s->api) {
            s->api = e->api;
            s->kind = e->kind;
        }
        return 0;
    }
    r->allocs++;
    s->allocs++;
    s->alloc_bytes += e->size;
    if (!s->first_ts) {
        s->first_ts = e->ts;
        s->api = e->api;
        s->kind = e->kind;
    }
    s->last_ts = e->ts;
    if (e->addr == 0)
        return 0; /* a successful zero-byte allocation returns NULL: nothing to track */
    struct cmt_live l = {
        .addr = e->addr,
        .size = e->size,
        .ts = e->ts,
        .stack = stack,
        .device = e->device,
        .ns = (uint8_t)cmt_namespace_of_kind(e->kind),
        .kind = e->kind,
        .api = e->api,
        .tid = e->tid,
    };
    if (e->kind == CMT_KIND_VMM_MAP) {
        l.aux = e->aux[0];
        on_map(r, &l);
    } else if (e->kind != CMT_KIND_VMM_PHYSICAL) {
        l.aux = e->aux[1];
    }
    struct cmt_live old;
    int rc = cmt_live_set_put(&r->live, &l, &old);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        /* The address is handed out again while we still hold it live: its
         * release went unrecorded (an untraced path). Count the old one gone. */
        r->reused_addresses++;
        if (apply(r, &old, false, e->ts) != 0)
            return -1;
        if (old.kind == CMT_KIND_VMM_MAP && handle_unmapped(r, old.aux, e->ts) != 0)
            return -1;
    } else if (l.kind == CMT_KIND_VMM_MAP && map_index_insert(&r->maps, l.addr) != 0) {
        return -1;
    }
    return apply(r, &l, true, e->ts);
}

static int on_free(struct cmt_replay *r, const struct cmt_event_in *e)
{
    if (e->result != 0) {
        r->failed_frees++;
        return 0;
    }
    if (e->api == CMT_API_CU_MEM_RELEASE)
        return on_release(r, e);
    if (e->api == CMT_API_CU_MEM_UNMAP)
        return on_unmap(r, e);
    struct cmt_live l;
    uint8_t ns = (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(e->api));
    if (!cmt_live_set_take(&r->live, ns, e->addr, &l)) {
        r->unmatched_frees++;
        return 0;
    }
    r->frees++;
    r->sites[l.stack].frees++;
    return apply(r, &l, false, e->ts);
}

int cmt_replay_event(struct cmt_replay *r, const struct cmt_event_in *e)
{
    r->event = e;
    if (e->type != CMT_REC_ALLOC && e->type != CMT_REC_FREE) {
        if (r->observer && r->observer->on_record && r->observer->on_record(r->observer->ctx, r, e) != 0) {
            r->out_of_memory = true;
            return -1;
        }
        return 0;
    }
    if (e->api == CMT_API_UNKNOWN || e->api >= CMT_API_COUNT || e->kind >= CMT_KIND_COUNT || e->device < -1 ||
        e->device >= CMT_MAX_DEVICES) {
        r->bad_events++;
        return 0;
    }
    uint32_t stack = e->stack < CMT_MAX_STACK_ID ? (uint32_t)e->stack : 0;
    if (site_stats_reserve(r, stack) != 0) {
        r->out_of_memory = true;
        return -1;
    }
    r->events++;
    r->events_by_api[e->api]++;
    if (!r->first_ts || e->ts < r->first_ts)
        r->first_ts = e->ts;
    if (e->ts > r->last_ts)
        r->last_ts = e->ts;
    int rc = e->type == CMT_REC_ALLOC ? on_alloc(r, e, stack) : on_free(r, e);
    if (rc != 0) {
        r->out_of_memory = true;
        return -1;
    }
    if (e->type == CMT_REC_ALLOC && e->result == 0) {
        if (e->device >= 0)
            r->device_mask |= 1ull << e->device;
        else
            r->host_seen = true;
    }
    return 0;
}
