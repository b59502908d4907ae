/* SPDX-License-Identifier: MIT */
#include "replay.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"
#include "pairing.h"

/* The namespace a release of each API looks in (its default kind's); the
 * reading thread's pairing reads them too (pairing.h). */
uint8_t cmt_replay_namespace_of_api[256];
/* APIs this analyzer knows (newer writers may add some: their events are
 * counted as bad and skipped). */
bool cmt_replay_api_known[256];
#define namespace_of_api cmt_replay_namespace_of_api
#define api_known cmt_replay_api_known
/* The pairing's namespaces (pairing.h): of an allocation by kind, of a
 * release by api; CMT_NS_COUNT where none pairs. */
uint8_t cmt_pairing_alloc_ns[256];
uint8_t cmt_pairing_free_ns[256];

static void init_tables(void)
{
    for (unsigned api = 0; api < 256; api++) {
        namespace_of_api[api] = (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(api));
        api_known[api] = api != CMT_API_UNKNOWN && api < CMT_API_COUNT;
        uint8_t ns = namespace_of_api[api];
        bool pairs = api_known[api] && api != CMT_API_CU_MEM_RELEASE && api != CMT_API_CU_MEM_UNMAP &&
                     (CMT_PAIRED_NAMESPACES >> ns & 1);
        cmt_pairing_free_ns[api] = pairs ? ns : CMT_NS_COUNT;
    }
    for (unsigned kind = 0; kind < 256; kind++) {
        uint8_t ns = (uint8_t)cmt_namespace_of_kind(kind);
        cmt_pairing_alloc_ns[kind] = kind < CMT_KIND_COUNT && (CMT_PAIRED_NAMESPACES >> ns & 1) ? ns : CMT_NS_COUNT;
    }
}

int cmt_replay_init(struct cmt_replay *r)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_tables);
    memset(r, 0, sizeof *r);
    r->stack_id_limit = CMT_MAX_STACK_ID;
    cmt_timeline_init(&r->timeline);
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

void cmt_replay_live_only(struct cmt_replay *r)
{
    r->live_only = true;
    r->growth.started = true; /* and never checkpoints */
    r->growth.next_ts = UINT64_MAX;
}

void cmt_replay_set_origin(struct cmt_replay *r, uint64_t origin)
{
    cmt_timeline_set_origin(&r->timeline, origin);
    if (!r->growth.started) {
        r->growth.started = true;
        r->growth.origin = origin;
        r->growth.shift = CMT_GROWTH_FIRST_SHIFT;
        r->growth.next_ts = cmt_replay_checkpoint_ts(r, 0);
    }
}

uint64_t cmt_replay_checkpoint_ts(const struct cmt_replay *r, uint32_t i)
{
    /* Past the end of time (a trace's timestamps are its own to choose):
     * UINT64_MAX, an interval that never completes. Wrapping round instead
     * made growth_advance checkpoint forever, doubling the interval length
     * past 64 bits. */
    uint64_t room = UINT64_MAX - r->growth.origin;
    if (r->growth.shift >= 64 || (uint64_t)i + 1 > room >> r->growth.shift)
        return UINT64_MAX;
    return r->growth.origin + ((uint64_t)(i + 1) << r->growth.shift);
}

static void account_free(struct cmt_account *a)
{
    if (!a)
        return;
    free(a->sites);
    free(a->site_peak);
    free(a->dirty_list);
    free(a);
}

void cmt_replay_free(struct cmt_replay *r)
{
    cmt_live_set_free(&r->live);
    cmt_replay_pairing_free(r->pairing);
    free(r->maps.addrs);
    cmt_ipc_free(&r->ipc);
    for (int d = 0; d <= CMT_MAX_DEVICES; d++)
        for (int c = 0; c < CMT_CLASS_COUNT; c++)
            account_free(r->accounts[d][c]);
    for (size_t i = 0; i < r->n_active; i++)
        free(r->site_extra[r->active_sites[i]].samples);
    free(r->active_sites);
    cmt_timeline_free(&r->timeline);
    free(r->sites);
    free(r->home_peak);
    free(r->site_extra);
    memset(r, 0, sizeof *r);
}

static size_t next_cap(size_t need)
{
    size_t cap = 64;
    while (cap <= need)
        cap *= 2;
    return cap;
}

/* ---- account site tables ----------------------------------------------------- */

static inline size_t account_site_home(const struct cmt_account *a, uint32_t key)
{
    return (size_t)(((uint64_t)key * a->hash_mult) >> a->hash_shift);
}

/* Allocates the site table at cap slots and moves the old one's sites in;
 * the dirty list is rebuilt for the new slots (home entries kept). It has
 * room for every slot and every home site: each is listed once at most. */
static int account_resize_sites(struct cmt_account *a, size_t cap)
{
    void *mem = NULL;
    if (cap > UINT32_MAX / 2 || posix_memalign(&mem, 64, cap * sizeof(struct cmt_account_site)) != 0)
        return -1;
    struct cmt_account_site *sites = mem;
    struct cmt_site_cell *peak = calloc(cap, sizeof *peak);
    size_t dirty_cap = cap + a->n_home;
    uint32_t *dirty = malloc(dirty_cap * sizeof *dirty);
    if (!peak || !dirty) {
        free(sites);
        free(peak);
        free(dirty);
        return -1;
    }
    memset(sites, 0, cap * sizeof *sites);
    struct cmt_account_site *old = a->sites;
    struct cmt_site_cell *old_peak = a->site_peak;
    size_t old_cap = a->sites_cap;
    a->sites = sites;
    a->site_peak = peak;
    a->sites_cap = cap;
    a->hash_shift = 64 - cmt_log2_pow2(cap);
    size_t n_dirty = 0;
    for (size_t k = 0; k < a->n_dirty; k++)
        if (a->dirty_list[k] & CMT_DIRTY_HOME)
            dirty[n_dirty++] = a->dirty_list[k];
    a->n_dirty = n_dirty;
    a->dirty_cap = dirty_cap;
    for (size_t k = 0; k < old_cap; k++) {
        if (!old[k].key)
            continue;
        size_t i = account_site_home(a, old[k].key);
        while (sites[i].key)
            i = (i + 1) & (cap - 1);
        sites[i] = old[k];
        peak[i] = old_peak[k];
        if (sites[i].dirty)
            dirty[a->n_dirty++] = (uint32_t)i;
    }
    free(old);
    free(old_peak);
    free(a->dirty_list);
    a->dirty_list = dirty;
    return 0;
}

/* Not found: adds the stack, growing the table to stay at most half full. */
static __attribute__((noinline)) size_t account_site_insert(struct cmt_account *a, uint32_t key)
{
    if ((a->n_sites + 1) * 2 > a->sites_cap && account_resize_sites(a, a->sites_cap * 2) != 0)
        return SIZE_MAX;
    size_t mask = a->sites_cap - 1, i = account_site_home(a, key);
    while (a->sites[i].key)
        i = (i + 1) & mask;
    a->sites[i].key = key;
    a->n_sites++;
    return i;
}

/* The slot holding this stack in the account's site table, or the empty
 * slot that ends its probe run (*found false). */
static inline size_t account_site_probe(const struct cmt_account *a, uint32_t stack, bool *found)
{
    uint32_t key = stack + 1;
    size_t mask = a->sites_cap - 1;
    for (size_t i = account_site_home(a, key);; i = (i + 1) & mask) {
        if (a->sites[i].key == key || !a->sites[i].key) {
            *found = a->sites[i].key == key;
            return i;
        }
    }
}

/* The slot of this stack in the account's site table, added when new;
 * SIZE_MAX when out of memory. */
static inline size_t account_site(struct cmt_account *a, uint32_t stack)
{
    bool found;
    size_t i = account_site_probe(a, stack, &found);
    return found ? i : account_site_insert(a, stack + 1);
}

/* One more site makes a its home: room for it in the dirty list. */
static int account_add_home(struct cmt_account *a)
{
    if (a->sites_cap + a->n_home + 1 > a->dirty_cap) {
        size_t cap = a->dirty_cap * 2;
        uint32_t *d = realloc(a->dirty_list, cap * sizeof *d);
        if (!d)
            return -1;
        a->dirty_list = d;
        a->dirty_cap = cap;
    }
    a->n_home++;
    return 0;
}

static struct cmt_account *account_new(struct cmt_replay *r, int32_t device, unsigned cls)
{
    struct cmt_account *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->device = device;
    a->cls = (uint8_t)cls;
    a->index = cmt_account_index(device, cls);
    a->seen = true;
    a->hash_mult = cmt_hash_multiplier();
    if (account_resize_sites(a, 64) != 0) {
        free(a);
        return NULL;
    }
    r->accounts[device + 1][cls] = a;
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
        if (cmt_class_of_allocation(k, device) == cls)
            r->account_of_kind[device + 1][k] = a;
    return a;
}

static inline struct cmt_account *account_get(struct cmt_replay *r, int32_t device, unsigned cls)
{
    struct cmt_account *a = r->accounts[device + 1][cls];
    return a ? a : account_new(r, device, cls);
}

/* Grows the tables by stack id to hold site (below stack_id_limit). */
static int site_stats_grow(struct cmt_replay *r, uint32_t site)
{
    size_t cap = next_cap(site), old = r->sites_cap;
    if (cap > r->stack_id_limit)
        cap = r->stack_id_limit;
    void *mem = NULL;
    if (posix_memalign(&mem, 64, cap * sizeof(struct cmt_site_stats)) != 0)
        return -1;
    struct cmt_site_stats *s = mem;
    struct cmt_site_extra *x = realloc(r->site_extra, cap * sizeof *x);
    if (!x) {
        free(s);
        return -1;
    }
    r->site_extra = x;
    struct cmt_site_cell *hp = realloc(r->home_peak, cap * sizeof *hp);
    if (!hp) {
        free(s);
        return -1;
    }
    r->home_peak = hp;
    if (old)
        memcpy(s, r->sites, old * sizeof *s);
    memset(s + old, 0, (cap - old) * sizeof *s);
    memset(x + old, 0, (cap - old) * sizeof *x);
    memset(hp + old, 0, (cap - old) * sizeof *hp);
    free(r->sites);
    r->sites = s;
    r->sites_cap = cap;
    return 0;
}

static inline int site_stats_reserve(struct cmt_replay *r, uint32_t site)
{
    return site < r->sites_cap ? 0 : site_stats_grow(r, site);
}

/* ---- growth checkpoints ---------------------------------------------------- */

/* Halves the resolution of every site's samples (replay.h). */
static void growth_compact(struct cmt_replay *r)
{
    const uint32_t half = CMT_GROWTH_CHECKPOINTS / 2;
    for (size_t i = 0; i < r->n_active; i++) {
        uint32_t id = r->active_sites[i];
        r->sites[id].first_cp /= 2;
        uint64_t *samples = r->site_extra[id].samples;
        if (!samples)
            continue;
        for (uint32_t k = 0; k < half; k++) {
            uint64_t a = samples[2 * k], b = samples[2 * k + 1];
            samples[k] = a < b ? a : b;
        }
    }
    r->growth.n = half;
    r->growth.shift++;
}

/* Records the floors of the interval that ended at growth.next_ts. */
static int growth_checkpoint(struct cmt_replay *r)
{
    uint32_t k = r->growth.n;
    for (size_t i = 0; i < r->n_active; i++) {
        uint32_t id = r->active_sites[i];
        struct cmt_site_stats *s = &r->sites[id];
        struct cmt_site_extra *x = &r->site_extra[id];
        if (!x->samples) {
            /* Floors of zero so far need no array (its readers take a
             * missing one for zeros): a site that never held memory over
             * an interval end, most sites of most traces, costs nothing
             * here; 512 bytes each were most of the replay's memory on a
             * trace of a million call sites (issue 32). */
            if (!s->floor) {
                s->floor = s->live_bytes;
                continue;
            }
            x->samples = calloc(CMT_GROWTH_CHECKPOINTS, sizeof *x->samples);
            if (!x->samples)
                return -1;
        }
        x->samples[k] = s->floor;
        s->floor = s->live_bytes;
    }
    r->growth.n = k + 1;
    if (r->growth.n == CMT_GROWTH_CHECKPOINTS)
        growth_compact(r);
    r->growth.next_ts = cmt_replay_checkpoint_ts(r, r->growth.n);
    return 0;
}

static int growth_advance(struct cmt_replay *r, uint64_t ts)
{
    if (!r->growth.started)
        cmt_replay_set_origin(r, ts);
    while (ts >= r->growth.next_ts && r->growth.next_ts != UINT64_MAX)
        if (growth_checkpoint(r) != 0)
            return -1;
    return 0;
}

static int site_activate(struct cmt_replay *r, uint32_t stack, const struct cmt_replay_in *e, uint8_t kind)
{
    if (r->n_active == r->active_cap) {
        size_t cap = r->active_cap ? r->active_cap * 2 : 256;
        uint32_t *a = realloc(r->active_sites, cap * sizeof *a);
        if (!a)
            return -1;
        r->active_sites = a;
        r->active_cap = cap;
    }
    r->active_sites[r->n_active++] = stack;
    struct cmt_site_stats *s = &r->sites[stack];
    s->active = true;
    s->first_cp = r->growth.n;
    s->api = e->api;
    s->kind = kind;
    r->site_extra[stack].first_ts = e->ts;
    return 0;
}

/* ---- accounts ------------------------------------------------------------------ */

/* The site's home account (cmt_account_index() + 1), 0 when it has none yet. */
static inline unsigned site_home(const struct cmt_site_stats *s)
{
    return s->home & ~CMT_SITE_HOME_DIRTY;
}

/* The site's home cell at its home account's last peak: a cell not changed
 * since is what it is now. */
static inline struct cmt_site_cell home_cell_at_peak(const struct cmt_replay *r, uint32_t stack)
{
    const struct cmt_site_stats *s = &r->sites[stack];
    return (s->home & CMT_SITE_HOME_DIRTY) ? r->home_peak[stack] : (struct cmt_site_cell){s->home_bytes, s->home_count};
}

/* A new peak of account a: the cells changed since the last one are what
 * was live at it. */
static __attribute__((noinline)) void account_new_peak(struct cmt_replay *r, struct cmt_account *a, uint64_t ts)
{
    for (size_t i = 0; i < a->n_dirty; i++) {
        uint32_t d = a->dirty_list[i];
        if (d & CMT_DIRTY_HOME) {
            struct cmt_site_stats *s = &r->sites[d & ~CMT_DIRTY_HOME];
            r->home_peak[d & ~CMT_DIRTY_HOME] = (struct cmt_site_cell){s->home_bytes, s->home_count};
            s->home &= (uint8_t)~CMT_SITE_HOME_DIRTY;
        } else {
            a->site_peak[d] = a->sites[d].live;
            a->sites[d].dirty = 0;
        }
    }
    a->n_dirty = 0;
    a->peak = a->live;
    a->peak_ts = ts;
    a->peak_count = a->live_count;
    memcpy(a->peak_by_kind, a->live_by_kind, sizeof a->peak_by_kind);
}

/* The account's totals; its call-site cell is the caller's. */
static inline __attribute__((always_inline)) void account_change(struct cmt_replay *r, struct cmt_account *a,
                                                                 unsigned kind, uint64_t bytes, bool add, uint64_t ts)
{
    if (add) {
        a->live += bytes;
        a->live_count++;
        a->live_by_kind[kind & 7] += bytes;
        if (a->live > a->high)
            a->high = a->live;
        if (a->live > a->peak)
            account_new_peak(r, a, ts);
    } else {
        a->live -= bytes;
        a->live_count--;
        a->live_by_kind[kind & 7] -= bytes;
    }
}

/* The site's cell in its home account, in its own record. */
static inline __attribute__((always_inline)) void home_cell_change(struct cmt_account *a, struct cmt_site_stats *s,
                                                                   uint32_t stack, uint64_t bytes, bool add)
{
    if (add) {
        s->home_bytes += bytes;
        s->home_count++;
    } else {
        s->home_bytes -= bytes;
        s->home_count--;
    }
    if (!(s->home & CMT_SITE_HOME_DIRTY)) {
        s->home |= CMT_SITE_HOME_DIRTY;
        a->dirty_list[a->n_dirty++] = stack | CMT_DIRTY_HOME;
    }
}

/* The site's cell in another account: that account's table. Returns -1
 * when out of memory. */
static __attribute__((noinline)) int table_cell_change(struct cmt_account *a, uint32_t stack, uint64_t bytes, bool add)
{
    size_t slot = account_site(a, stack);
    if (slot == SIZE_MAX)
        return -1;
    struct cmt_account_site *site = &a->sites[slot];
    if (add) {
        site->live.bytes += bytes;
        site->live.count++;
    } else {
        site->live.bytes -= bytes;
        site->live.count--;
    }
    if (!site->dirty) {
        site->dirty = 1;
        a->dirty_list[a->n_dirty++] = (uint32_t)slot;
    }
    return 0;
}

bool cmt_replay_site_cells(const struct cmt_replay *r, const struct cmt_account *a, uint32_t stack,
                           struct cmt_site_cell *live, struct cmt_site_cell *peak)
{
    if (!r->home_cells_merged && stack < r->sites_cap && site_home(&r->sites[stack]) == a->index + 1u) {
        const struct cmt_site_stats *s = &r->sites[stack];
        *live = (struct cmt_site_cell){s->home_bytes, s->home_count};
        *peak = home_cell_at_peak(r, stack);
        return true;
    }
    bool found;
    size_t i = account_site_probe(a, stack, &found);
    if (found) {
        *live = a->sites[i].live;
        *peak = a->site_peak[i];
    }
    return found;
}

void cmt_replay_account_cells(const struct cmt_replay *r, const struct cmt_account *a,
                              void (*fn)(void *ctx, uint32_t stack, const struct cmt_site_cell *live), void *ctx)
{
    for (size_t i = 0; i < a->sites_cap; i++)
        if (a->sites[i].key)
            fn(ctx, a->sites[i].key - 1, &a->sites[i].live);
    if (r->home_cells_merged)
        return;
    for (size_t i = 0; i < r->n_active; i++) {
        uint32_t stack = r->active_sites[i];
        const struct cmt_site_stats *s = &r->sites[stack];
        if (site_home(s) == a->index + 1u) {
            struct cmt_site_cell cell = {s->home_bytes, s->home_count};
            fn(ctx, stack, &cell);
        }
    }
}

/* After the replay: every home cell goes to its account's table, so that
 * the tables list every site (report_build.c, tests). Returns -1 when out of
 * memory. */
static int merge_home_cells(struct cmt_replay *r)
{
    if (r->home_cells_merged)
        return 0;
    r->home_cells_merged = true;
    for (size_t i = 0; i < r->n_active; i++) {
        uint32_t stack = r->active_sites[i];
        struct cmt_site_stats *s = &r->sites[stack];
        unsigned home = site_home(s);
        if (!home)
            continue;
        unsigned index = home - 1;
        struct cmt_account *a = r->accounts[index / CMT_CLASS_COUNT][index % CMT_CLASS_COUNT];
        size_t slot = a ? account_site(a, stack) : SIZE_MAX;
        if (slot == SIZE_MAX)
            return -1;
        a->sites[slot].live = (struct cmt_site_cell){s->home_bytes, s->home_count};
        a->site_peak[slot] = home_cell_at_peak(r, stack);
        a->sites[slot].dirty = (s->home & CMT_SITE_HOME_DIRTY) != 0;
    }
    return 0;
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

/* Tells the observers (one predicted branch when there is none). */
static inline int notify_change(struct cmt_replay *r, const struct cmt_live *l, bool add)
{
    unsigned n = r->n_change_hooks;
    if (__builtin_expect(n == 0, 1))
        return 0;
    const struct cmt_replay_change_hook *h = r->change_hooks;
    if (n == 1) /* a report's (alloc_views.h calls the rest): no loop */
        return h[0].fn(h[0].ctx, r, l, add);
    for (unsigned i = 0; i < n; i++)
        if (h[i].fn(h[i].ctx, r, l, add) != 0)
            return -1;
    return 0;
}

static int notify_failure(struct cmt_replay *r, const struct cmt_replay_in *e)
{
    for (unsigned i = 0; i < r->n_observers; i++) {
        const struct cmt_replay_observer *o = r->observers[i];
        if (o->on_failure && o->on_failure(o->ctx, r, e) != 0)
            return -1;
    }
    return 0;
}

/* Adds or removes a live allocation from every aggregate. Inlined where
 * add is a constant: each path keeps only its own branches. */
static inline __attribute__((always_inline)) int apply(struct cmt_replay *r, const struct cmt_live *l, bool add, uint64_t ts)
{
    if (__builtin_expect(l->kind >= CMT_KIND_VMM_PHYSICAL && l->kind <= CMT_KIND_VMM_MAP, 0)) {
        virtual_change(r, l, add);
        if (!cmt_kind_holds_memory(l->kind))
            return notify_change(r, l, add);
    }
    struct cmt_account *a = r->account_of_kind[l->device + 1][l->kind];
    if (__builtin_expect(!a, 0) && !(a = account_get(r, l->device, cmt_class_of_allocation(l->kind, l->device))))
        return -1;
    /* The site's cell first (a new peak copies it), in its record when this
     * is its home account (struct cmt_site_stats). */
    struct cmt_site_stats *s = &r->sites[l->stack];
    unsigned home = site_home(s);
    if (__builtin_expect(home == a->index + 1u, 1)) {
        home_cell_change(a, s, l->stack, l->size, add);
    } else if (!home) {
        if (account_add_home(a) != 0)
            return -1;
        s->home = (uint8_t)(a->index + 1);
        home_cell_change(a, s, l->stack, l->size, add);
    } else if (table_cell_change(a, l->stack, l->size, add) != 0) {
        return -1;
    }
    account_change(r, a, l->kind, l->size, add, ts);
    struct cmt_timeline *tl = &r->timeline;
    if (__builtin_expect(r->live_only, 0))
        goto sites;
    if (__builtin_expect(!a->tl_kind[l->kind], 0)) {
        /* host memory is one set of series, whatever device was current */
        int32_t tl_device = a->cls == CMT_CLASS_HOST ? -1 : a->device;
        a->tl_kind[l->kind] = cmt_timeline_series_of(tl, tl_device, l->kind);
        if (a->cls != CMT_CLASS_MANAGED)
            a->tl_total = cmt_timeline_series_of(tl, tl_device, CMT_TIMELINE_TOTAL);
        if (!a->tl_kind[l->kind])
            return -1;
    }
    cmt_timeline_series_change(tl, a->tl_kind[l->kind], l->size, add, ts);
    if (a->tl_total)
        cmt_timeline_series_change(tl, a->tl_total, l->size, add, ts);
sites:
    if (add) {
        s->live_bytes += l->size;
        s->live_count++;
    } else {
        s->live_bytes -= l->size;
        s->live_count--;
        if (s->live_bytes < s->floor)
            s->floor = s->live_bytes;
    }
    return notify_change(r, l, add);
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

/* The state word of a live physical handle (struct cmt_live's vmm: its
 * mapping count and whether it was released), to update in place; NULL when
 * the handle is not live (created before the trace, or imported). */
static uint64_t *handle_state(struct cmt_replay *r, uint64_t handle)
{
    return cmt_live_set_aux(&r->live, CMT_NS_VMM_HANDLE, handle);
}

static int drop_handle(struct cmt_replay *r, uint64_t handle, uint64_t ts)
{
    struct cmt_live gone;
    if (!cmt_live_set_take(&r->live, CMT_NS_VMM_HANDLE, handle, &gone))
        return 0;
    return apply(r, &gone, false, ts);
}

/* A handle's memory goes once it is released and its last mapping is gone,
 * whichever comes last (cuMemRelease documents this). */
static int handle_unmapped(struct cmt_replay *r, uint64_t handle, uint64_t ts)
{
    uint64_t *state = handle_state(r, handle);
    if (!state)
        return 0;
    struct cmt_live h = {.aux = *state};
    if (h.vmm.map_refs)
        h.vmm.map_refs--;
    *state = h.aux;
    if (h.vmm.map_refs || !h.vmm.released)
        return 0;
    return drop_handle(r, handle, ts);
}

static int on_release(struct cmt_replay *r, const struct cmt_replay_in *e)
{
    struct cmt_live h;
    uint64_t *state = handle_state(r, e->addr);
    if (!state || !cmt_live_set_find(&r->live, CMT_NS_VMM_HANDLE, e->addr, &h)) {
        /* A handle imported from another process: none of this process's memory. */
        if (!cmt_ipc_release_handle(&r->ipc, e->addr))
            r->unmatched_frees++;
        return 0;
    }
    r->frees++;
    r->sites[h.stack].frees++;
    h.aux = *state;
    if (h.vmm.map_refs) {
        h.vmm.released = 1; /* still mapped: the memory stays */
        *state = h.aux;
        return 0;
    }
    return drop_handle(r, e->addr, e->ts);
}

/* cuMemUnmap(ptr, size) removes every mapping starting in [ptr, ptr+size):
 * a driver refuses a span that splits one, so a successful unmap covers
 * whole mappings. */
static int on_unmap(struct cmt_replay *r, const struct cmt_replay_in *e)
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
        cmt_ipc_unmapped(&r->ipc, gone.addr, e->ts);
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
    struct cmt_live h;
    uint64_t *state = handle_state(r, l->aux);
    if (state && cmt_live_set_find(&r->live, CMT_NS_VMM_HANDLE, l->aux, &h)) {
        l->device = h.device;
        h.aux = *state;
        h.vmm.map_refs++;
        *state = h.aux;
    }
}

/* The thread's next allocation call after a kept failure: what it says of
 * that failure (enum cmt_failure_next). Cold: only while a watch is open. */
static void failure_followed(struct cmt_replay *r, const struct cmt_replay_in *e, int32_t result)
{
    for (size_t i = 0; i < r->n_failure_watches; i++) {
        if (r->failure_watch_tid[i] != e->tid)
            continue;
        struct cmt_failure *f = &r->failures[r->failure_watch[i]];
        f->next = e->size != f->size ? CMT_NEXT_OTHER : result ? CMT_NEXT_SAME_FAILED : CMT_NEXT_SAME_SERVED;
        r->n_failure_watches--;
        r->failure_watch_tid[i] = r->failure_watch_tid[r->n_failure_watches];
        r->failure_watch[i] = r->failure_watch[r->n_failure_watches];
        return;
    }
}

static void watch_failure(struct cmt_replay *r, uint32_t tid, size_t index)
{
    if (r->n_failure_watches == 8) {
        memmove(r->failure_watch_tid, r->failure_watch_tid + 1, 7 * sizeof *r->failure_watch_tid);
        memmove(r->failure_watch, r->failure_watch + 1, 7 * sizeof *r->failure_watch);
        r->n_failure_watches--;
    }
    r->failure_watch_tid[r->n_failure_watches] = tid;
    r->failure_watch[r->n_failure_watches++] = (uint32_t)index;
}

static int note_failure(struct cmt_replay *r, const struct cmt_replay_in *e, uint32_t stack)
{
    if (r->n_failure_watches)
        failure_followed(r, e, e->result);
    if (notify_failure(r, e) != 0)
        return -1;
    r->failed_allocs++;
    r->site_extra[stack].failures++;
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
    watch_failure(r, e->tid, r->n_failures - 1);
    return 0;
}

/* kind: e's without CMT_REPLAY_IN_PAIRED; paired: e->result is the slot id
 * (the call succeeded). */
static inline __attribute__((always_inline)) int on_alloc(struct cmt_replay *r, const struct cmt_replay_in *e,
                                                          uint32_t stack, uint8_t kind, bool paired)
{
    struct cmt_site_stats *s = &r->sites[stack];
    if (!paired && e->result != 0) {
        if (note_failure(r, e, stack) != 0)
            return -1;
        if (!s->api) {
            s->api = e->api;
            s->kind = e->kind;
        }
        return 0;
    }
    r->allocs++;
    r->last_alloc_ts = e->ts;
    if (__builtin_expect(r->n_failure_watches != 0, 0))
        failure_followed(r, e, 0);
    if (e->device >= 0)
        r->device_mask |= 1ull << e->device;
    else
        r->host_seen = true;
    if (!s->active && site_activate(r, stack, e, kind) != 0)
        return -1;
    s->allocs++;
    s->alloc_bytes += e->size;
    if (e->addr == 0)
        return 0; /* a successful zero-byte allocation returns NULL: nothing to track */
    struct cmt_live l = {
        .addr = e->addr,
        .size = e->size,
        .ts = e->ts,
        .stack = stack,
        .device = e->device,
        .ns = (uint8_t)cmt_namespace_of_kind(kind),
        .kind = kind,
        .api = e->api,
        .tid = e->tid,
    };
    if (kind == CMT_KIND_VMM_MAP) {
        l.aux = e->aux0;
        on_map(r, &l);
        if (cmt_ipc_is_imported_handle(&r->ipc, l.aux) &&
            cmt_ipc_mapped(&r->ipc, l.aux, l.addr, l.size, e->ts, stack, e->device) != 0)
            return -1;
    }
    struct cmt_live old;
    int rc = paired ? cmt_live_set_put_id(&r->live, (uint32_t)e->result, &l, &old) : cmt_live_set_put(&r->live, &l, &old);
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

static inline __attribute__((always_inline)) int on_free(struct cmt_replay *r, const struct cmt_replay_in *e,
                                                         bool paired)
{
    struct cmt_live l;
    if (paired && __builtin_expect(cmt_live_set_take_id(&r->live, (uint32_t)e->result, &l), 1))
        goto taken;
    if (!paired && e->result != 0) {
        r->failed_frees++;
        return 0;
    }
    if (e->api == CMT_API_CU_MEM_RELEASE)
        return on_release(r, e);
    if (e->api == CMT_API_CU_MEM_UNMAP)
        return on_unmap(r, e);
    uint8_t ns = namespace_of_api[e->api];
    /* (a paired release finds its slot by id: the pairing mirrors the
     * slots, so it falls through here never) */
    if (!cmt_live_set_take(&r->live, ns, e->addr, &l)) {
        /* A pointer imported from another process's pool: its mapping closes. */
        if (!cmt_ipc_freed(&r->ipc, e->addr, e->ts))
            r->unmatched_frees++;
        return 0;
    }
taken:
    r->frees++;
    r->sites[l.stack].frees++;
    return apply(r, &l, false, e->ts);
}

/* A sample, pool record or mark: for the observers only; an IPC record
 * for the engine's own IPC state too. */
static int replay_record(struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    if (rec->type == CMT_REC_IPC && cmt_ipc_record(r, rec) != 0) {
        r->out_of_memory = true;
        return -1;
    }
    for (unsigned i = 0; i < r->n_observers; i++) {
        const struct cmt_replay_observer *o = r->observers[i];
        if (o->on_record && o->on_record(o->ctx, r, rec) != 0) {
            r->out_of_memory = true;
            return -1;
        }
    }
    return 0;
}

static void record_of(struct cmt_replay_record *rec, const struct cmt_replay_in *e, const uint64_t more[3])
{
    *rec = (struct cmt_replay_record){
        .ts = e->ts,
        .addr = e->addr,
        .size = e->size,
        .aux = {e->aux0, more[0], more[1], more[2]},
        .stack = e->stack,
        .tid = e->tid,
        .result = e->result,
        .device = e->device,
        .type = e->type,
        .api = e->api,
    };
}

/* Inlined into the batch loop: a call per event cost a fifth of its
 * instructions in saving and restoring registers (callgrind). */
static inline __attribute__((always_inline)) int replay_one(struct cmt_replay *r, const struct cmt_replay_in *e)
{
    if (e->type != CMT_REC_ALLOC && e->type != CMT_REC_FREE)
        return 0;
    r->event = e;
    bool paired = e->kind & CMT_REPLAY_IN_PAIRED;
    uint8_t kind = (uint8_t)(e->kind & ~CMT_REPLAY_IN_PAIRED);
    /* one test: a known api, a known kind, a device in range (packing maps
     * out-of-range devices to INT8_MIN); the pairing passed those it paired
     * (pairing.h) */
    if (__builtin_expect(!paired, 0) && (!api_known[e->api] || kind >= CMT_KIND_COUNT || e->device < -1)) {
        r->bad_events++;
        return 0;
    }
    uint32_t stack = e->stack; /* clamped when packed */
    if (site_stats_reserve(r, stack) != 0) {
        r->out_of_memory = true;
        return -1;
    }
    if (e->ts >= r->growth.next_ts && growth_advance(r, e->ts) != 0) {
        r->out_of_memory = true;
        return -1;
    }
    if (__builtin_expect(!r->live_only, 1)) {
        /* a paired allocation succeeded (its result is its slot id) */
        unsigned outcome = e->type != CMT_REC_ALLOC;
        if (__builtin_expect(!paired, 0) && !outcome && e->result != 0)
            outcome = 2;
        cmt_timeline_count(&r->timeline, e->ts, outcome);
    }
    r->events++;
    r->events_by_api[e->api]++;
    /* !first_ts || e->ts < first_ts in one compare (first_ts - 1 wraps to
     * UINT64_MAX while it is 0) */
    if (e->ts <= r->first_ts - 1)
        r->first_ts = e->ts;
    if (e->ts > r->last_ts)
        r->last_ts = e->ts;
    int rc = e->type == CMT_REC_ALLOC ? on_alloc(r, e, stack, kind, paired) : on_free(r, e, paired);
    if (rc != 0 || r->timeline.out_of_memory) {
        r->out_of_memory = true;
        return -1;
    }
    return 0;
}

void cmt_replay_finish(struct cmt_replay *r, uint64_t end_ts)
{
    if (end_ts < r->last_ts)
        end_ts = r->last_ts;
    r->end_ts = end_ts;
    cmt_timeline_finish(&r->timeline, end_ts);
    if (r->growth.started && growth_advance(r, end_ts) != 0)
        r->out_of_memory = true;
    if (merge_home_cells(r) != 0)
        r->out_of_memory = true;
}

_Static_assert(sizeof(struct cmt_replay_in) == 48, "a batch entry is 48 bytes");

/* ---- batches ------------------------------------------------------------------- */

/* Entries ahead whose slot by id is prefetched. */
#define PREFETCH_AHEAD 8

/* The slot of a paired entry, which the replay reads or writes: its line
 * may have left the cache since the id was last used. */
static inline void prefetch_slot(const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    uint32_t id = (uint32_t)e->result;
    if ((e->kind & CMT_REPLAY_IN_PAIRED) && id < r->live.id_cap)
        __builtin_prefetch(&r->live.by_id[id], 1);
}

int cmt_replay_events(struct cmt_replay *r, const struct cmt_replay_in *ev, size_t n)
{
    for (size_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
        prefetch_slot(r, &ev[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            prefetch_slot(r, &ev[i + PREFETCH_AHEAD]);
        if (__builtin_expect(cmt_replay_is_record(ev[i].type), 0)) {
            if (i + 1 == n)
                break; /* a record split from its second entry: never packed so */
            struct cmt_replay_record rec;
            const uint64_t more[3] = {ev[i + 1].ts, ev[i + 1].addr, ev[i + 1].size};
            record_of(&rec, &ev[i], more);
            i++;
            if (replay_record(r, &rec) != 0)
                return -1;
            continue;
        }
        if (replay_one(r, &ev[i]) != 0)
            return -1;
    }
    r->event = NULL; /* the batch is handed back */
    return 0;
}

int cmt_replay_event(struct cmt_replay *r, const struct cmt_event_in *e)
{
    struct cmt_replay_in in;
    cmt_replay_in_from(&in, e, r->stack_id_limit);
    if (cmt_replay_is_record(e->type)) {
        in.aux0 = e->aux[0];
        struct cmt_replay_record rec;
        const uint64_t more[3] = {e->aux[1], e->aux[2], cmt_replay_record_aux3(e)};
        record_of(&rec, &in, more);
        return replay_record(r, &rec);
    }
    int rc = replay_one(r, &in);
    r->event = NULL;
    return rc;
}

/* The awake observers' on_change, in the observers' order. */
static void change_hooks_build(struct cmt_replay *r)
{
    r->n_change_hooks = 0;
    for (unsigned i = 0; i < r->n_observers; i++)
        if (r->observers[i]->on_change && r->changes_awake[i])
            r->change_hooks[r->n_change_hooks++] =
                (struct cmt_replay_change_hook){r->observers[i]->on_change, r->observers[i]->ctx};
}

int cmt_replay_add_observer(struct cmt_replay *r, const struct cmt_replay_observer *o)
{
    if (r->n_observers == CMT_REPLAY_MAX_OBSERVERS)
        return -1;
    r->changes_awake[r->n_observers] = !o->changes_later;
    r->observers[r->n_observers++] = o;
    change_hooks_build(r);
    return 0;
}

void cmt_replay_hand_over_changes(struct cmt_replay *r, const struct cmt_replay_observer *o)
{
    for (unsigned i = 0; i < r->n_observers; i++)
        if (r->observers[i] == o && r->changes_awake[i]) {
            r->changes_awake[i] = false;
            change_hooks_build(r);
        }
}

void cmt_replay_wake_changes(struct cmt_replay *r, const struct cmt_replay_observer *o)
{
    for (unsigned i = 0; i < r->n_observers; i++)
        if (r->observers[i] == o && !r->changes_awake[i]) {
            r->changes_awake[i] = true;
            change_hooks_build(r);
        }
}

int cmt_replay_finish_observers(struct cmt_replay *r, uint64_t end_ts)
{
    for (unsigned i = 0; i < r->n_observers; i++) {
        const struct cmt_replay_observer *o = r->observers[i];
        if (o->on_finish && o->on_finish(o->ctx, r, end_ts) != 0)
            return -1;
    }
    return 0;
}
