/* SPDX-License-Identifier: MIT */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"

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
    r->stack_id_limit = CMT_MAX_STACK_ID;
    return cmt_live_set_init(&r->live);
}

/* The smallest STACK record: type, length, id, modules_known and frame
 * count, one byte each; a trace defines stack ids from 1 up, one record each. */
#define MIN_STACK_RECORD_BYTES 5u

void cmt_replay_bound_stacks(struct cmt_replay *r, uint64_t trace_bytes)
{
    uint64_t most = trace_bytes / MIN_STACK_RECORD_BYTES + 1;
    r->stack_id_limit = most < CMT_MAX_STACK_ID ? (uint32_t)most : CMT_MAX_STACK_ID;
}

static void account_free(struct cmt_account *a)
{
    if (!a)
        return;
    free(a->sites);
    free(a->dirty_list);
    free(a);
}

void cmt_replay_free(struct cmt_replay *r)
{
    cmt_live_set_free(&r->live);
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

static size_t site_slot(const struct cmt_account *a, uint32_t stack)
{
    return (size_t)(((uint64_t)stack * a->hash_mult) >> a->hash_shift);
}

/* Doubles the site table (keeping it at most half full) and rebuilds the
 * dirty list for the new slots. */
static int account_grow_sites(struct cmt_account *a)
{
    size_t cap = a->sites_cap ? a->sites_cap * 2 : 64;
    if (cap > UINT32_MAX)
        return -1;
    struct cmt_account_site *sites = calloc(cap, sizeof *sites);
    uint32_t *dirty = malloc(cap * sizeof *dirty);
    if (!sites || !dirty) {
        free(sites);
        free(dirty);
        return -1;
    }
    struct cmt_account_site *old = a->sites;
    size_t old_cap = a->sites_cap;
    a->sites = sites;
    a->sites_cap = cap;
    a->hash_shift = 64 - cmt_log2_pow2(cap);
    a->n_dirty = 0;
    for (size_t k = 0; k < old_cap; k++) {
        if (!old[k].used)
            continue;
        size_t i = site_slot(a, old[k].stack);
        while (sites[i].used)
            i = (i + 1) & (cap - 1);
        sites[i] = old[k];
        if (sites[i].dirty)
            dirty[a->n_dirty++] = (uint32_t)i;
    }
    free(old);
    free(a->dirty_list);
    a->dirty_list = dirty;
    return 0;
}

/* The account's entry for this stack id, created when new; NULL when out of
 * memory. */
static struct cmt_account_site *account_site(struct cmt_account *a, uint32_t stack)
{
    size_t mask = a->sites_cap - 1, i = 0;
    if (a->sites_cap) {
        for (i = site_slot(a, stack); a->sites[i].used; i = (i + 1) & mask)
            if (a->sites[i].stack == stack)
                return &a->sites[i];
    }
    if ((a->n_sites + 1) * 2 > a->sites_cap) {
        if (account_grow_sites(a) != 0)
            return NULL;
        mask = a->sites_cap - 1;
        for (i = site_slot(a, stack); a->sites[i].used; i = (i + 1) & mask)
            ;
    }
    a->sites[i] = (struct cmt_account_site){.stack = stack, .used = true};
    a->n_sites++;
    return &a->sites[i];
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
        a->hash_mult = cmt_hash_multiplier();
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

static void account_change(struct cmt_account *a, struct cmt_account_site *site, unsigned kind, uint64_t bytes,
                           bool add, uint64_t ts)
{
    struct cmt_site_cell *cell = &site->live;
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
    if (!site->dirty) {
        site->dirty = true;
        a->dirty_list[a->n_dirty++] = (uint32_t)(site - a->sites);
    }
    if (add && a->live > a->peak) {
        for (size_t i = 0; i < a->n_dirty; i++) {
            struct cmt_account_site *s = &a->sites[a->dirty_list[i]];
            s->peak = s->live;
            s->dirty = false;
        }
        a->n_dirty = 0;
        a->peak = a->live;
        a->peak_ts = ts;
        a->peak_count = a->live_count;
        memcpy(a->peak_by_kind, a->live_by_kind, sizeof a->peak_by_kind);
    }
}

static void virtual_change(struct cmt_replay *r, const struct cmt_live *l, bool add)
{
    struct cmt_virtual_stats *v = &r->virt[l->device + 1];
    if (l->kind == CMT_KIND_VMM_RESERVE) {
        if (add) {
            v->reserve_live += l->size;
            v->reserve_count++;
            if (v->reserve_live > v->reserve_peak)
                v->reserve_peak = v->reserve_live;
        } else {
            v->reserve_live -= l->size;
            v->reserve_count--;
        }
    } else {
        if (add) {
            v->map_live += l->size;
            v->map_count++;
            if (v->map_live > v->map_peak)
                v->map_peak = v->map_live;
        } else {
            v->map_live -= l->size;
            v->map_count--;
        }
    }
}

/* Adds or removes a live allocation from every aggregate. */
static int apply(struct cmt_replay *r, const struct cmt_live *l, bool add, uint64_t ts)
{
    if (!cmt_kind_holds_memory(l->kind)) {
        virtual_change(r, l, add);
        return 0;
    }
    struct cmt_account *a = account_get(r, l->device, cmt_class_of_kind(l->kind));
    struct cmt_account_site *site = a ? account_site(a, l->stack) : NULL;
    if (!site)
        return -1;
    account_change(a, site, l->kind, l->size, add, ts);
    return 0;
}

static void note_failure(struct cmt_replay *r, const struct cmt_event_in *e, uint32_t stack)
{
    r->failed_allocs++;
    r->sites[stack].failures++;
    if (r->n_failures == CMT_MAX_FAILURES_KEPT)
        return;
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
}

static int on_alloc(struct cmt_replay *r, const struct cmt_event_in *e, uint32_t stack)
{
    struct cmt_site_stats *s = &r->sites[stack];
    if (e->result != 0) {
        note_failure(r, e, stack);
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
        .aux = e->kind == CMT_KIND_VMM_MAP ? e->aux[0] : e->aux[1],
    };
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
    }
    return apply(r, &l, true, e->ts);
}

static int on_free(struct cmt_replay *r, const struct cmt_event_in *e)
{
    if (e->result != 0) {
        r->failed_frees++;
        return 0;
    }
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
    if (e->type != CMT_REC_ALLOC && e->type != CMT_REC_FREE)
        return 0;
    if (e->api == CMT_API_UNKNOWN || e->api >= CMT_API_COUNT || e->kind >= CMT_KIND_COUNT || e->device < -1 ||
        e->device >= CMT_MAX_DEVICES) {
        r->bad_events++;
        return 0;
    }
    uint32_t stack = e->stack < r->stack_id_limit ? (uint32_t)e->stack : 0;
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
