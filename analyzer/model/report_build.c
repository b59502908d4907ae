/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks_report.h"
#include "forensics_report.h"
#include "units.h"
#include "holder_peaks.h"
#include "oom_replay.h"
#include "whatif_uncached.h"
#include "size_parse.h"
#include "allocator_family.h"
#include "oom_verdict.h"

const char *cmt_class_name(unsigned cls)
{
    static const char *const names[] = {"device", "managed", "pinned-host"};
    return cls < CMT_CLASS_COUNT ? names[cls] : "unknown";
}

void cmt_account_label(const struct cmt_account_figures *acc, char *buf, size_t len)
{
    if (acc->cls == CMT_CLASS_HOST)
        snprintf(buf, len, "Pinned host memory");
    else if (acc->cls == CMT_CLASS_MANAGED)
        snprintf(buf, len, "Managed memory, device %d", acc->device);
    else
        snprintf(buf, len, "Device %d", acc->device);
}

uint64_t cmt_report_rel_ns(const struct cmt_report *r, uint64_t ts)
{
    uint64_t start = r->trace.start_ns;
    return ts > start ? ts - start : 0;
}

void cmt_report_add_warning(struct cmt_report *r, const char *fmt, ...)
{
    char buf[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **w = realloc(r->warnings, (r->n_warnings + 1) * sizeof *w);
    if (!w)
        return;
    r->warnings = w;
    w[r->n_warnings] = strdup(buf);
    if (w[r->n_warnings])
        r->n_warnings++;
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct cmt_site_row *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return (int)a->kind - (int)b->kind;
}

/* By (stack, kind), then by first allocation: merging keeps the earliest,
 * and rows equal in all of these are interchangeable, so merged rows never
 * depend on the order they came in. */
static int row_key_cmp(const void *pa, const void *pb)
{
    const struct cmt_site_row *a = pa, *b = pb;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    if (a->suppression != b->suppression)
        return a->suppression < b->suppression ? -1 : 1;
    if (a->holder != b->holder)
        return (int)a->holder - (int)b->holder;
    if (a->first_ts != b->first_ts)
        return a->first_ts < b->first_ts ? -1 : 1;
    return (int)a->api - (int)b->api;
}

/* A call site is named by the first stack id met with its display frames
 * (cmt_frames_canonical): rows by raw stack id are met in stack id order,
 * whatever order the replay's hash tables hold them in, so a report never
 * varies between runs. */
static void canonicalize_rows(struct cmt_report *r, struct cmt_site_row *rows, size_t n)
{
    if (n)
        qsort(rows, n, sizeof *rows, row_key_cmp);
    for (size_t i = 0; i < n; i++)
        rows[i].stack = cmt_frames_canonical(r->frames, rows[i].stack);
}

/* Sorts rows by (stack, kind, suppression), merges equal keys, then orders
 * by bytes. */
static size_t merge_rows(struct cmt_site_row *rows, size_t n)
{
    if (n == 0)
        return 0;
    qsort(rows, n, sizeof *rows, row_key_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && rows[out - 1].stack == rows[i].stack && rows[out - 1].kind == rows[i].kind &&
            rows[out - 1].suppression == rows[i].suppression && rows[out - 1].holder == rows[i].holder) {
            rows[out - 1].bytes += rows[i].bytes;
            rows[out - 1].count += rows[i].count;
            if (rows[i].first_ts < rows[out - 1].first_ts) {
                rows[out - 1].first_ts = rows[i].first_ts;
                rows[out - 1].api = rows[i].api;
            }
        } else {
            rows[out++] = rows[i];
        }
    }
    qsort(rows, out, sizeof *rows, row_cmp);
    return out;
}

/* Rows and call tree of what an account held: its peak cells, or (at_peak
 * false) those live now. by_holder, when given, gets the bytes of each
 * holder. */
static int build_snapshot(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_account *acc, bool at_peak,
                          struct cmt_snapshot *snap, uint64_t *by_holder)
{
    /* With PyTorch's block layer its segments are shown by their tensors
     * ("PyTorch's tensors"): their rows are marked and kept out of the
     * call tree, so the device's view counts them once, as its cache. */
    bool cache_apart = a->blocks && a->blocks->seen && acc->cls == CMT_CLASS_DEVICE;
    const struct cmt_replay *rp = &a->replay;
    /* Rows for the cells that held something then, counted first: most of
     * an account's sites hold nothing at its peak. */
    size_t held = 0;
    for (size_t i = 0; i < acc->sites_cap; i++) {
        const struct cmt_site_cell *cell = at_peak ? &acc->site_peak[i] : &acc->sites[i].live;
        held += cmt_account_site_stack(acc, i) >= 0 && cell->count;
    }
    snap->rows = calloc(held ? held : 1, sizeof *snap->rows);
    if (!snap->rows || cmt_call_tree_init(&snap->tree) != 0)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < acc->sites_cap; i++) {
        int64_t s = cmt_account_site_stack(acc, i);
        const struct cmt_site_cell *cell = at_peak ? &acc->site_peak[i] : &acc->sites[i].live;
        if (s < 0 || !cell->count)
            continue;
        const struct cmt_site_stats *st = (size_t)s < rp->sites_cap ? &rp->sites[s] : NULL;
        enum cmt_holder holder = cmt_report_holder(r, (uint64_t)s);
        if (by_holder)
            by_holder[holder] += cell->bytes;
        snap->rows[k++] = (struct cmt_site_row){
            .stack = (uint64_t)s,
            .bytes = cell->bytes,
            .count = cell->count,
            .api = st ? st->api : 0,
            .first_ts = st ? rp->site_extra[s].first_ts : 0,
            .holder = cache_apart && holder == CMT_HOLDER_PYTORCH ? CMT_HOLDER_PYTORCH : CMT_HOLDER_OTHER,
        };
    }
    /* In stack id order: the call tree keeps siblings of equal bytes in the
     * order they came, and canonical ids are given in the order met. */
    if (k)
        qsort(snap->rows, k, sizeof *snap->rows, row_key_cmp);
    for (size_t i = 0; i < k; i++) {
        struct cmt_site_row *row = &snap->rows[i];
        if (row->holder == CMT_HOLDER_OTHER &&
            cmt_call_tree_add(&snap->tree, cmt_frames_get(r->frames, row->stack), row->bytes, row->count) != 0)
            return -1;
        row->stack = cmt_frames_canonical(r->frames, row->stack);
    }
    snap->n_rows = merge_rows(snap->rows, k);
    snap->n_top = snap->n_rows < r->opt->top ? snap->n_rows : r->opt->top;
    return cmt_call_tree_sort(&snap->tree);
}

static const struct cmt_timeline_series *account_series(const struct cmt_analysis *a, const struct cmt_account *acc)
{
    const struct cmt_timeline *tl = &a->replay.timeline;
    switch (acc->cls) {
    case CMT_CLASS_MANAGED:
        return cmt_timeline_find(tl, acc->device, CMT_KIND_MANAGED);
    case CMT_CLASS_HOST:
        return cmt_timeline_find(tl, -1, CMT_TIMELINE_TOTAL);
    default:
        return cmt_timeline_find(tl, acc->device, CMT_TIMELINE_TOTAL);
    }
}

static int build_account(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_account *acc, struct cmt_account_view *v)
{
    v->account = acc;
    v->fig = (struct cmt_account_figures){.device = acc->device,
                                          .cls = acc->cls,
                                          .live = acc->live,
                                          .live_count = acc->live_count,
                                          .peak = acc->peak,
                                          .peak_ts = acc->peak_ts,
                                          .peak_count = acc->peak_count};
    memcpy(v->fig.peak_by_kind, acc->peak_by_kind, sizeof v->fig.peak_by_kind);
    v->series = account_series(a, acc);
    v->peak.ts = acc->peak_ts;
    v->peak.bytes = acc->peak;
    v->peak.count = acc->peak_count;
    memcpy(v->peak.by_kind, acc->peak_by_kind, sizeof v->peak.by_kind);
    if (build_snapshot(r, a, acc, true, &v->peak, acc->cls == CMT_CLASS_DEVICE ? v->peak_by_holder : NULL) != 0)
        return -1;
    v->top = v->peak.rows;
    v->n_sites_at_peak = v->peak.n_rows;
    v->n_top = v->peak.n_top;
    if (r->at) {
        v->has_at = true;
        v->at.ts = a->info.start_monotonic_ns + r->opt->at_ns;
        v->at.bytes = acc->live;
        v->at.count = acc->live_count;
        memcpy(v->at.by_kind, acc->live_by_kind, sizeof v->at.by_kind);
        if (build_snapshot(r, a, acc, false, &v->at, NULL) != 0)
            return -1;
    }
    return 0;
}

/* Totals of every call site (canonical stack) over the run. */
struct site_totals {
    uint64_t allocs, frees, failures;
};

static struct site_totals *build_site_totals(struct cmt_report *r, const struct cmt_analysis *a)
{
    const struct cmt_replay *rp = &a->replay;
    size_t cap = a->model.n_stacks > rp->sites_cap ? a->model.n_stacks : rp->sites_cap;
    struct site_totals *t = calloc(cap ? cap : 1, sizeof *t);
    if (!t)
        return NULL;
    for (size_t s = 0; s < rp->sites_cap; s++) {
        const struct cmt_site_stats *st = &rp->sites[s];
        const struct cmt_site_extra *x = &rp->site_extra[s];
        if (!st->allocs && !st->frees && !x->failures)
            continue;
        uint64_t c = cmt_frames_canonical(r->frames, s);
        if (c >= cap)
            continue;
        t[c].allocs += st->allocs;
        t[c].frees += st->frees;
        t[c].failures += x->failures;
    }
    return t;
}

/* ---- growth ------------------------------------------------------------------ */

static int growth_cmp(const void *pa, const void *pb)
{
    const struct cmt_growth_row *a = pa, *b = pb;
    if (a->verdict.rate != b->verdict.rate)
        return a->verdict.rate < b->verdict.rate ? 1 : -1;
    if (a->live_bytes != b->live_bytes)
        return a->live_bytes < b->live_bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

struct site_ref {
    uint64_t canon;
    uint32_t stack;
};

static int site_ref_cmp(const void *pa, const void *pb)
{
    const struct site_ref *a = pa, *b = pb;
    if (a->canon != b->canon)
        return a->canon < b->canon ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* Sums the checkpoint floors of every recorded stack that shows as the same
 * call site, then judges each call site (growth.h). */
static int build_growth(struct cmt_report *r, const struct cmt_analysis *a, const struct site_totals *totals)
{
    const struct cmt_replay *rp = &a->replay;
    const uint32_t n_cp = rp->growth.n;
    size_t n_sites = rp->n_active;
    struct site_ref *refs = calloc(n_sites ? n_sites : 1, sizeof *refs);
    uint64_t *values = calloc(CMT_GROWTH_CHECKPOINTS + 1, sizeof *values);
    uint64_t *times = calloc(CMT_GROWTH_CHECKPOINTS + 1, sizeof *times);
    /* Grown as candidates are found: a row for every site (112 bytes) was
     * much of the report's memory on a trace of a million call sites. */
    size_t growth_cap = 16;
    r->growth = calloc(growth_cap, sizeof *r->growth);
    int rc = -1;
    if (!refs || !values || !times || !r->growth)
        goto out;
    for (size_t i = 0; i < n_sites; i++)
        refs[i] = (struct site_ref){cmt_frames_canonical(r->frames, rp->active_sites[i]), rp->active_sites[i]};
    qsort(refs, n_sites, sizeof *refs, site_ref_cmp);
    for (size_t i = 0, end; i < n_sites; i = end) {
        /* refs[i, end) show as one call site */
        uint32_t first_cp = UINT32_MAX;
        uint64_t live = 0, live_count = 0, first_ts = UINT64_MAX;
        const struct cmt_site_stats *lead = NULL;
        for (end = i; end < n_sites && refs[end].canon == refs[i].canon; end++) {
            const struct cmt_site_stats *st = &rp->sites[refs[end].stack];
            if (st->first_cp < first_cp)
                first_cp = st->first_cp;
            live += st->live_bytes;
            live_count += st->live_count;
            uint64_t st_first = rp->site_extra[refs[end].stack].first_ts;
            if (st_first && st_first < first_ts) {
                first_ts = st_first;
                lead = st;
            }
        }
        if (!lead)
            lead = &rp->sites[refs[i].stack];
        /* Complete intervals after the one of the first allocation, then the
         * live bytes at the end. */
        size_t n = 0;
        for (uint32_t k = first_cp + 1; k < n_cp; k++) {
            uint64_t sum = 0;
            for (size_t m = i; m < end; m++) {
                const struct cmt_site_stats *st = &rp->sites[refs[m].stack];
                const uint64_t *samples = rp->site_extra[refs[m].stack].samples;
                if (samples && k > st->first_cp)
                    sum += samples[k];
            }
            values[n] = sum;
            times[n++] = cmt_replay_checkpoint_ts(rp, k);
        }
        values[n] = live;
        times[n++] = rp->end_ts;
        /* canonical ids never exceed the stack ids they stand for */
        const struct site_totals *t = &totals[refs[i].canon];
        struct cmt_growth_verdict v;
        cmt_growth_evaluate(values, times, n, t->allocs, &v);
        if (!v.candidate)
            continue;
        /* PyTorch's segments grow as its tensors do: with its block layer
         * those are measured in tensors (r->tensors), not twice */
        if (a->blocks && a->blocks->seen && cmt_report_holder(r, refs[i].canon) == CMT_HOLDER_PYTORCH)
            continue;
        if (r->n_growth == growth_cap) {
            struct cmt_growth_row *more = realloc(r->growth, growth_cap * 2 * sizeof *more);
            if (!more)
                goto out;
            r->growth = more;
            growth_cap *= 2;
        }
        r->growth[r->n_growth++] = (struct cmt_growth_row){
            .stack = refs[i].canon,
            .kind = lead->kind,
            .api = lead->api,
            .verdict = v,
            .live_bytes = live,
            .live_count = live_count,
            .allocs = t->allocs,
            .frees = t->frees,
            .failures = t->failures,
            .first_ts = first_ts == UINT64_MAX ? 0 : first_ts,
        };
    }
    qsort(r->growth, r->n_growth, sizeof *r->growth, growth_cmp);
    rc = 0;
out:
    free(refs);
    free(values);
    free(times);
    return rc;
}

static int u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* The growth candidates' call sites, sorted, to look leak rows up in: a scan
 * per row would take leak sites times candidates, both up to the number of
 * call sites. NULL when out of memory. */
static uint64_t *growing_sites(const struct cmt_report *r)
{
    uint64_t *g = malloc((r->n_growth ? r->n_growth : 1) * sizeof *g);
    if (!g)
        return NULL;
    for (size_t i = 0; i < r->n_growth; i++)
        g[i] = r->growth[i].stack;
    if (r->n_growth)
        qsort(g, r->n_growth, sizeof *g, u64_cmp);
    return g;
}

/* ---- suppressions --------------------------------------------------------- */

/* The suppression matching a recorded stack (index), or -1; each stack is
 * asked once per report. */
static long suppression_of(struct cmt_report *r, long *cache, uint64_t stack)
{
    const struct cmt_report_options *o = r->opt;
    if (!o->suppress_stack || !r->n_suppressions || stack == 0)
        return -1;
    if (stack <= r->n_stacks && cache[stack] != -2)
        return cache[stack];
    long idx = o->suppress_stack(o->suppress_ctx, r->frames, stack);
    if (idx >= (long)r->n_suppressions)
        idx = -1;
    if (stack <= r->n_stacks)
        cache[stack] = idx;
    return idx;
}

static int by_bytes_desc(const void *pa, const void *pb)
{
    const struct cmt_blocks_site *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1; /* then as blocks_report.c orders sites */
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return a->suppression < b->suppression ? -1 : a->suppression > b->suppression;
}

/* The block layer's tensors never released, each raw stack matched on its
 * own (folding can file a workspace PyTorch keeps to exit under the same
 * operation as an ordinary tensor): what a suppression matches moves from a
 * device's leaks to its suppressed sites. */
static int suppress_tensors(struct cmt_report *r, long *cache)
{
    struct cmt_blocks_report *b = r->blocks;
    b->leak_blocks = b->leak_bytes = 0;
    for (size_t d = 0; d < b->n_devices; d++) {
        struct cmt_blocks_device *dv = &b->devices[d];
        dv->suppressed = calloc(dv->n_raw_leaks ? dv->n_raw_leaks : 1, sizeof *dv->suppressed);
        if (!dv->suppressed)
            return -1;
        for (size_t k = 0; k < dv->n_raw_leaks; k++) {
            const struct cmt_blocks_site *raw = &dv->raw_leaks[k];
            long idx = suppression_of(r, cache, raw->raw_stack);
            if (idx < 0)
                continue;
            struct cmt_suppression_use *u = &r->suppression_use[idx];
            u->tensors += raw->blocks;
            u->tensor_bytes += raw->bytes;
            struct cmt_blocks_site *to = NULL;
            for (size_t i = 0; i < dv->n_suppressed && !to; i++)
                if (dv->suppressed[i].stack == raw->stack && dv->suppressed[i].suppression == (uint32_t)idx + 1)
                    to = &dv->suppressed[i];
            if (!to) {
                to = &dv->suppressed[dv->n_suppressed++];
                *to = (struct cmt_blocks_site){.stack = raw->stack, .suppression = (uint32_t)idx + 1};
            }
            to->bytes += raw->bytes;
            to->blocks += raw->blocks;
            dv->suppressed_bytes += raw->bytes;
            dv->suppressed_blocks += raw->blocks;
            for (size_t i = 0; i < dv->n_leaks; i++) {
                struct cmt_blocks_site *s = &dv->leaks[i];
                if (s->stack != raw->stack)
                    continue;
                s->bytes -= raw->bytes <= s->bytes ? raw->bytes : s->bytes;
                s->blocks -= raw->blocks <= s->blocks ? raw->blocks : s->blocks;
                break;
            }
        }
        /* sites left with no tensor go; the rest stay largest first */
        size_t n = 0;
        dv->leak_blocks = dv->leak_bytes = 0;
        for (size_t i = 0; i < dv->n_leaks; i++)
            if (dv->leaks[i].blocks) {
                dv->leaks[n++] = dv->leaks[i];
                dv->leak_blocks += dv->leaks[i].blocks;
                dv->leak_bytes += dv->leaks[i].bytes;
            }
        dv->n_leaks = n;
        if (n && dv->n_suppressed) /* sites lost bytes: largest first again */
            qsort(dv->leaks, n, sizeof *dv->leaks, by_bytes_desc);
        if (dv->n_suppressed)
            qsort(dv->suppressed, dv->n_suppressed, sizeof *dv->suppressed, by_bytes_desc);
        b->leak_blocks += dv->leak_blocks;
        b->leak_bytes += dv->leak_bytes;
        b->suppressed_blocks += dv->suppressed_blocks;
        b->suppressed_bytes += dv->suppressed_bytes;
    }
    return 0;
}

/* The trace has PyTorch's block layer (or said it was attached). */
static bool blocks_on(const struct cmt_analysis *a)
{
    return a->blocks && (a->blocks->seen || (a->model.has_allocator && a->model.allocator.state == CMT_BLOCKS_ON));
}

/* Whose cache a live allocation is. With PyTorch's block layer what the
 * trace holds decides for PyTorch, not symbols (the same answer on a
 * machine without its libraries): an allocation made by libc10_cuda.so is
 * its cache when it is a segment the block layer saw (its address), or a
 * VMM allocation of expandable segments; else it held one tensor
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1). The memory's kind tells PyTorch's
 * device cache from its pinned host cache. */
static enum cmt_holder cache_of_allocation(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_live *l)
{
    enum cmt_holder c = cmt_report_cache(r, l->stack);
    bool pinned = l->kind == CMT_KIND_HOST_PINNED;
    if (blocks_on(a) && !pinned && cmt_report_holder(r, l->stack) == CMT_HOLDER_PYTORCH) {
        bool segment = l->kind != CMT_KIND_DEVICE || cmt_bl_segment_at(a->blocks, l->device, l->addr);
        return segment ? CMT_HOLDER_PYTORCH : CMT_HOLDER_OTHER;
    }
    if ((c == CMT_HOLDER_PYTORCH && pinned) || (c == CMT_HOLDER_PYTORCH_HOST && !pinned))
        return CMT_HOLDER_OTHER;
    return c;
}

static int build_leaks(struct cmt_report *r, const struct cmt_analysis *a, const struct site_totals *totals,
                       long *supp_cache)
{
    const struct cmt_live_set *live = &a->replay.live;
    /* Each live allocation goes to one of three lists: counted first, so
     * that each is allocated at its size (three of the live set's size were
     * 192 bytes per live allocation at once: issue 32). The holder and the
     * suppression of a stack are cached, the second pass costs lookups. */
    size_t n_rows = 0, n_aside_max = 0, n_held_max = 0;
    struct cmt_live entry;
    for (size_t i = 0; i < cmt_live_set_end(live); i++) {
        if (!cmt_live_set_at(live, i, &entry))
            continue;
        /* the same classification as the fill below: a count made one way
         * and a fill made another overran these lists */
        if (!r->opt->include_cached && cache_of_allocation(r, a, &entry) != CMT_HOLDER_OTHER)
            n_held_max++;
        else if (!r->at && suppression_of(r, supp_cache, entry.stack) >= 0)
            n_aside_max++;
        else
            n_rows++;
    }
    struct cmt_site_row *rows = calloc(n_rows ? n_rows : 1, sizeof *rows);
    struct cmt_site_row *set_aside = calloc(n_aside_max ? n_aside_max : 1, sizeof *set_aside);
    struct cmt_site_row *held = calloc(n_held_max ? n_held_max : 1, sizeof *held);
    if (!rows || !set_aside || !held) {
        free(rows);
        free(set_aside);
        free(held);
        return -1;
    }
    size_t k = 0, n_aside = 0, n_held = 0;
    for (size_t i = 0; i < cmt_live_set_end(live); i++) {
        if (!cmt_live_set_at(live, i, &entry))
            continue;
        const struct cmt_live *l = &entry;
        struct cmt_site_row row = {
            .stack = l->stack, /* canonical below, in stack id order */
            .bytes = l->size,
            .count = 1,
            .kind = l->kind,
            .api = l->api,
            .first_ts = l->ts,
        };
        bool holds = cmt_kind_holds_memory(l->kind);
        enum cmt_holder cache = r->opt->include_cached ? CMT_HOLDER_OTHER : cache_of_allocation(r, a, l);
        if (cache != CMT_HOLDER_OTHER) {
            row.holder = (uint8_t)cache;
            held[n_held++] = row;
            if (holds) {
                r->held_bytes[cache] += l->size;
                r->held_count[cache]++;
            }
            continue;
        }
        /* what is live at --at TIME is no leak to suppress */
        long sup = r->at ? -1 : suppression_of(r, supp_cache, l->stack);
        if (sup >= 0) {
            row.suppression = (uint32_t)sup + 1;
            set_aside[n_aside++] = row;
            r->suppression_use[sup].allocations++;
            if (holds) {
                r->suppressed_bytes += l->size;
                r->suppressed_count++;
                r->suppression_use[sup].bytes += l->size;
            }
            continue;
        }
        rows[k++] = row;
        if (holds) {
            r->leak_bytes += l->size;
            r->leak_count++;
        }
        r->leak_bytes_by_kind[l->kind < CMT_KIND_COUNT ? l->kind : 0] += l->size;
    }
    canonicalize_rows(r, rows, k);
    canonicalize_rows(r, set_aside, n_aside);
    canonicalize_rows(r, held, n_held);
    r->held = held;
    r->n_held = merge_rows(held, n_held);
    r->n_leaks = merge_rows(rows, k);
    r->leaks = rows;
    r->suppressed = set_aside; /* merged below; freed with the report from here on */
    /* Memory first; VMM reservations and mappings left at exit (address
     * space, not memory) after it, each part still largest first. */
    struct cmt_site_row *ordered = malloc((r->n_leaks ? r->n_leaks : 1) * sizeof *ordered);
    if (!ordered)
        return -1;
    size_t n = 0;
    for (int memory = 1; memory >= 0; memory--)
        for (size_t i = 0; i < r->n_leaks; i++)
            if (cmt_kind_holds_memory(rows[i].kind) == (memory == 1))
                ordered[n++] = rows[i];
    memcpy(rows, ordered, r->n_leaks * sizeof *rows);
    free(ordered);
    uint64_t *growing = growing_sites(r);
    if (!growing)
        return -1;
    for (size_t i = 0; i < r->n_leaks; i++) {
        struct cmt_site_row *row = &rows[i];
        row->site_allocs = totals[row->stack].allocs;
        row->site_frees = totals[row->stack].frees;
        row->growing = r->n_growth && bsearch(&row->stack, growing, r->n_growth, sizeof *growing, u64_cmp);
        if (!cmt_kind_holds_memory(row->kind))
            continue;
        if (row->site_allocs <= 1) {
            r->leak_once_bytes += row->bytes;
            r->leak_once_count += row->count;
        } else {
            r->leak_repeated_bytes += row->bytes;
            r->leak_repeated_count += row->count;
        }
    }
    free(growing);
    r->n_suppressed = merge_rows(set_aside, n_aside);
    return 0;
}

/* PyTorch raised OutOfMemoryError (its OOM record, the block layer) on
 * f's thread and device after from and before to: a failure at to is the
 * program asking again (it caught the error), not the allocator's own
 * retry after releasing its cache (issue 33). */
static bool torch_raised_between(const struct cmt_analysis *a, const struct cmt_failure *f, uint64_t from, uint64_t to)
{
    for (size_t d = 0; a->blocks && d < a->blocks->n_devices; d++) {
        const struct cmt_bl_device *dev = &a->blocks->devices[d];
        if (dev->ordinal != f->device)
            continue;
        for (size_t k = 0; k < dev->n_ooms; k++)
            if (dev->ooms[k].tid == f->tid && dev->ooms[k].at.ts > from && dev->ooms[k].at.ts < to)
                return true;
    }
    return false;
}

/* A caching allocator's probes and retries among the failures (report.h):
 * a probe failed not for lack of memory and the thread asked again at once
 * for the same size, and was served (PyTorch's expandable segments ask for
 * a shareable handle type the driver may refuse); a retry is the same
 * request failing again right after a failure (PyTorch releases its cache
 * and asks again before it raises). Both only through a caching allocator
 * (allocator_family.h, by module when symbols are missing). A failure after
 * PyTorch raised is the program's (torch_raised_between). */
static int classify_failures(struct cmt_report *r, const struct cmt_analysis *a)
{
    const struct cmt_replay *rp = &a->replay;
    r->failure_flags = calloc(rp->n_failures ? rp->n_failures : 1, 1);
    if (!r->failure_flags)
        return -1;
    /* Whether the program survived a failure: it allocated again after it
     * (a call, or a tensor its allocator served from its cache), or it
     * exited with status 0 (it caught the error and ended well). */
    uint64_t went_on_until = rp->last_alloc_ts;
    for (size_t d = 0; a->blocks && d < a->blocks->n_devices; d++)
        if (a->blocks->devices[d].last_alloc_ts > went_on_until)
            went_on_until = a->blocks->devices[d].last_alloc_ts;
    r->went_on_until = went_on_until;
    r->exit_status = a->model.has_end && a->model.end.reason == CMT_END_EXIT ? a->model.end.exit_status : -1;
    /* It ended badly: it exited with another status than 0, or it did not
     * exit (killed, crashed, _exit; not a trace still being written). A
     * trace of an older shim, without the status, says neither. */
    bool ended_badly = r->exit_status > 0 || (!a->model.has_end && !cmt_analysis_in_progress(a));
    for (size_t i = 0; i < rp->n_failures; i++) {
        const struct cmt_failure *f = &rp->failures[i];
        if (ended_badly && f->ts >= went_on_until) {
            r->failure_flags[i] |= CMT_FAILURE_FATAL;
            r->failed_calls_fatal++;
        }
        if (cmt_allocator_family_of(r->frames, f->stack) == CMT_ALLOCATOR_NONE)
            continue;
        if (f->result != CMT_CUDA_OUT_OF_MEMORY && f->next == CMT_NEXT_SAME_SERVED) {
            r->failure_flags[i] |= CMT_FAILURE_PROBE;
            r->failed_calls_probing++;
            continue;
        }
        for (size_t k = i; k-- > 0;) {
            if (rp->failures[k].tid != f->tid)
                continue;
            if (rp->failures[k].next == CMT_NEXT_SAME_FAILED && rp->failures[k].size == f->size &&
                !torch_raised_between(a, f, rp->failures[k].ts, f->ts)) {
                r->failure_flags[i] |= CMT_FAILURE_RETRY;
                r->failed_calls_retrying++;
            }
            break;
        }
    }
    return 0;
}

static int build_failures(struct cmt_report *r, const struct cmt_analysis *a)
{
    const struct cmt_replay *rp = &a->replay;
    r->failures = calloc(rp->n_failures ? rp->n_failures : 1, sizeof *r->failures);
    if (!r->failures || classify_failures(r, a) != 0)
        return -1;
    for (size_t i = 0; i < rp->n_failures; i++) {
        const struct cmt_failure *f = &rp->failures[i];
        uint64_t stack = cmt_frames_canonical(r->frames, f->stack);
        struct cmt_failure_group *g = NULL;
        for (size_t k = 0; k < r->n_failures && !g; k++) {
            struct cmt_failure_group *c = &r->failures[k];
            if (c->stack == stack && c->api == f->api && c->result == f->result && c->device == f->device)
                g = c;
        }
        if (!g) {
            g = &r->failures[r->n_failures++];
            *g = (struct cmt_failure_group){
                .stack = stack,
                .api = f->api,
                .result = f->result,
                .device = f->device,
                .min_size = f->size,
                .max_size = f->size,
                .first_ts = f->ts,
                .live_device_bytes = f->live_device_bytes,
                .first_index = i,
            };
        }
        g->count++;
        g->probes += (r->failure_flags[i] & CMT_FAILURE_PROBE) != 0;
        g->retries += (r->failure_flags[i] & CMT_FAILURE_RETRY) != 0;
        g->fatal += (r->failure_flags[i] & CMT_FAILURE_FATAL) != 0;
        if (f->size < g->min_size)
            g->min_size = f->size;
        if (f->size > g->max_size)
            g->max_size = f->size;
    }
    return 0;
}

static void collect_warnings(struct cmt_report *r, const struct cmt_analysis *a)
{
    const struct cmt_replay *rp = &a->replay;
    char b1[32];
    if (a->damaged)
        cmt_report_add_warning(r, "trace is damaged (%s); events before the damage are analysed", a->message);
    for (size_t i = 0; a->reader && i < cmt_reader_warning_count(a->reader); i++)
        cmt_report_add_warning(r, "%s", cmt_reader_warning(a->reader, i));
    uint32_t flags = a->info.flags;
    if (flags & CMT_FILE_FLAG_SIZE_LIMIT) {
        cmt_format_size(a->model.config.max_size, b1, sizeof b1);
        cmt_report_add_warning(r, "recording stopped early: the trace reached CUMEMTRACE_MAX_SIZE (%s); %llu "
                                  "later events were not recorded (raise it to record them)",
                               b1, (unsigned long long)a->info.events_dropped);
    } else if (flags & CMT_FILE_FLAG_WRITE_ERROR) {
        cmt_report_add_warning(r, "recording stopped early: the trace file could not grow (the disk full, or the "
                                  "file-size limit of `ulimit -f`: the profiler's warning said which); %llu later "
                                  "events were not recorded (free space or raise the limit to record them)",
                               (unsigned long long)a->info.events_dropped);
    }
    if (a->info.unrecorded_nested)
        cmt_report_add_warning(r, "%llu allocation or release calls were not recorded: they were made inside "
                                  "another CUDA call of the same thread (a signal handler) or during the "
                                  "profiler's own exit or fork work; live bytes and leaks miss them",
                               (unsigned long long)a->info.unrecorded_nested);
    bool cut = a->damaged || (a->reader && cmt_reader_truncated(a->reader));
    if (cmt_analysis_in_progress(a) && r->opt->state_in_verdict)
        ;
    else if (cmt_analysis_in_progress(a))
        cmt_report_add_warning(r, "the trace is still being written (process %llu is running): the figures cover "
                                  "what it had committed when it was read, up to offset %llu; what is live then is "
                                  "not leaked yet",
                               (unsigned long long)(a->model.has_process ? a->model.pid : a->info.pid),
                               (unsigned long long)a->info.claimed_end);
    else if (cut)
        cmt_report_add_warning(r, "the trace ends at a cut (truncated or damaged): what was live at the cut may "
                                  "have been released after it, and what came after it is unknown, so what is "
                                  "live at the end is not a list of leaks");
    else if (!(flags & CMT_FILE_FLAG_CLEAN_EXIT) && !r->opt->state_in_verdict)
        cmt_report_add_warning(r, "the process did not exit normally (killed, crashed, or _exit): \"live at "
                                  "exit\" means live when recording ended");
    if (rp->unmatched_frees)
        cmt_report_add_warning(r, "%llu releases of addresses never seen allocated (allocated before tracing "
                                  "or through an API cumemtrace does not hook)",
                               (unsigned long long)rp->unmatched_frees);
    if (rp->reused_addresses)
        cmt_report_add_warning(r, "%llu allocations returned an address still live in the trace: its release "
                                  "was not recorded",
                               (unsigned long long)rp->reused_addresses);
    if (rp->bad_events)
        cmt_report_add_warning(r, "%llu events with an unknown API or device were skipped",
                               (unsigned long long)rp->bad_events);
    if (a->model.rejected_records)
        cmt_report_add_warning(r, "%llu metadata records were out of sequence and ignored",
                               (unsigned long long)a->model.rejected_records);
    for (size_t i = 0; r->frames && i < cmt_frames_warning_count(r->frames); i++)
        cmt_report_add_warning(r, "%s", cmt_frames_warning(r->frames, i));
}

/* PyTorch's block layer, when the trace has one (or says why it has none). */
static int build_blocks(struct cmt_report *r, const struct cmt_analysis *a)
{
    r->blocks = calloc(1, sizeof *r->blocks);
    if (!r->blocks || cmt_blocks_report_build(r->blocks, a->blocks, r->frames) != 0)
        return -1;
    if (a->model.has_allocator) {
        const struct cmt_allocator_in *al = &a->model.allocator;
        r->blocks->on = al->state == CMT_BLOCKS_ON || a->blocks->seen;
        snprintf(r->blocks->version, sizeof r->blocks->version, "%s", cmt_model_string(&a->model, al->version_id));
        snprintf(r->blocks->backend, sizeof r->blocks->backend, "%s", cmt_model_string(&a->model, al->backend_id));
        r->blocks->settings_known = al->settings_known;
        snprintf(r->blocks->alloc_conf, sizeof r->blocks->alloc_conf, "%s",
                 cmt_model_string(&a->model, al->alloc_conf_id));
        snprintf(r->blocks->cuda_alloc_conf, sizeof r->blocks->cuda_alloc_conf, "%s",
                 cmt_model_string(&a->model, al->cuda_alloc_conf_id));
        r->blocks->expandable = strstr(r->blocks->cuda_alloc_conf, "expandable_segments:True") ||
                                strstr(r->blocks->alloc_conf, "expandable_segments:True");
    }
    return 0;
}

/* ---- tensors ------------------------------------------------------------------------------------ */

struct tensor_ctx {
    struct cmt_report *r;
    const struct cmt_analysis *a;
    long *supp_cache;
    struct cmt_workspace_calls workspaces; /* cuBLAS's, found without symbols (tensor_origin.h) */
};

static const char *thread_name(const struct cmt_trace_model *m, uint32_t tid)
{
    for (size_t i = 0; i < m->n_threads; i++)
        if (m->threads[i].tid == tid)
            return cmt_model_string(m, m->threads[i].name_id);
    return NULL;
}

static enum cmt_tensor_origin tensor_origin(void *ctx, uint64_t stack, uint32_t tid)
{
    struct tensor_ctx *t = ctx;
    enum cmt_tensor_origin o = cmt_tensor_origin_of(t->r->frames, stack, thread_name(&t->a->model, tid));
    if ((o == CMT_ORIGIN_PROGRAM || o == CMT_ORIGIN_BACKWARD) &&
        cmt_tensor_workspace_call(t->r->frames, stack, &t->workspaces))
        return CMT_ORIGIN_CUBLAS;
    return o;
}

/* cuBLAS's workspaces on autograd's threads, from the first reading's
 * tensors live at the end: where PyTorch asks the cache for them. */
static void find_workspaces(struct tensor_ctx *t)
{
    const struct cmt_block_layer *bl = t->a->blocks;
    for (size_t i = 0; bl && i < bl->n_devices; i++) {
        const struct cmt_bl_device *d = &bl->devices[i];
        for (size_t k = 0; k < d->n_blocks; k++) {
            const struct cmt_bl_block *b = &d->blocks[k];
            const struct cmt_bl_site *s = b->allocated ? cmt_bl_site_find(d, b->stack) : NULL;
            if (s)
                cmt_tensor_workspace_anchor(t->r->frames, b->stack, thread_name(&t->a->model, b->tid), b->requested,
                                            s->made, true, &t->workspaces);
        }
    }
}

/* Device memory outside the block layer: PyTorch's segments are counted
 * by the block layer (tensors and reserve); libraries' own memory by its
 * holder (memory_holder.h, by module without symbols). */
static enum cmt_tensor_category tensor_outside(void *ctx, uint64_t stack)
{
    struct tensor_ctx *t = ctx;
    switch (cmt_report_holder(t->r, stack)) {
    case CMT_HOLDER_PYTORCH:
        return CMT_CAT_RESERVE;
    case CMT_HOLDER_CUBLAS:
        return CMT_CAT_CUBLAS;
    case CMT_HOLDER_CUDNN:
        return CMT_CAT_CUDNN;
    case CMT_HOLDER_NCCL:
        return CMT_CAT_NCCL;
    default:
        return CMT_CAT_OTHER;
    }
}

static long tensor_suppression(void *ctx, uint64_t stack)
{
    struct tensor_ctx *t = ctx;
    return t->r->at ? -1 : suppression_of(t->r, t->supp_cache, stack);
}

/* PyTorch's tensors through the run (tensor_pass.h): a second reading of
 * the trace, then the view the report leads with. */
static int build_tensors(struct cmt_report *r, const struct cmt_analysis *a, long *supp_cache)
{
    struct tensor_ctx ctx = {r, a, supp_cache, {{0}, 0}};
    find_workspaces(&ctx);
    r->tensor_pass = calloc(1, sizeof *r->tensor_pass);
    r->tensors = calloc(1, sizeof *r->tensors);
    if (!r->tensor_pass || !r->tensors)
        return -1;
    struct cmt_tensor_pass_input in = {.analysis = a, .ctx = &ctx, .origin = tensor_origin, .outside = tensor_outside};
    if (cmt_tensor_pass_run(r->tensor_pass, &in) != 0)
        return -1;
    const struct cmt_blocks_report *b = r->blocks;
    bool expandable = b && b->expandable;
    struct cmt_tensors_report_input tin = {.pass = r->tensor_pass,
                                           .blocks = b,
                                           .frames = r->frames,
                                           .expandable = expandable,
                                           .suppression = tensor_suppression,
                                           .ctx = &ctx};
    return cmt_tensors_report_build(r->tensors, &tin);
}

/* With PyTorch's block layer the growth per step is measured in tensors:
 * its segments' rows go (they grow as the tensors do), the tensors' rows
 * growing per step come in, and the total is the tensors' (docs/report.md,
 * "Phases and steps"). */
static int tensor_step_growth(struct cmt_report *r, const struct cmt_analysis *a)
{
    struct cmt_phases_view *v = r->phases;
    const struct cmt_tensors_report *t = r->tensors;
    if (!v || !t || !t->on || !a->blocks || !a->blocks->seen)
        return 0;
    size_t n = 0;
    for (size_t i = 0; v->growth && i < v->n_growth; i++)
        if (cmt_report_holder(r, v->growth[i].stack) != CMT_HOLDER_PYTORCH)
            v->growth[n++] = v->growth[i];
    v->n_growth = n;
    size_t extra = 0;
    for (size_t i = 0; i < t->n_growth; i++)
        extra += t->growth[i].per_step;
    if (extra) {
        struct cmt_step_growth_row *rows = realloc(v->growth, (n + extra) * sizeof *rows);
        if (!rows)
            return -1;
        v->growth = rows;
        v->growth_built = true;
        for (size_t i = 0; i < t->n_growth; i++) {
            const struct cmt_tensor_site_row *g = &t->growth[i];
            if (g->per_step)
                rows[v->n_growth++] = (struct cmt_step_growth_row){
                    .stack = g->stack, .verdict = g->verdict, .live_bytes = g->live_bytes, .allocs = g->allocs,
                    .frees = g->frees, .tensors = true};
        }
    }
    if (t->n_samples)
        v->total_growth = t->total_growth;
    v->growth_in_tensors = true;
    return 0;
}

static int build_allocated(struct cmt_report *r, const struct cmt_replay *rp)
{
    r->allocated = calloc(rp->n_active ? rp->n_active : 1, sizeof *r->allocated);
    if (!r->allocated)
        return -1;
    for (size_t i = 0; i < rp->n_active; i++) {
        uint32_t id = rp->active_sites[i];
        if (rp->sites[id].alloc_bytes && cmt_kind_holds_memory(rp->sites[id].kind))
            r->allocated[r->n_allocated++] = (struct cmt_allocated_site){id, rp->sites[id].alloc_bytes};
    }
    return 0;
}

static int build_chart(struct cmt_report *r, const struct cmt_replay *rp)
{
    for (size_t i = 0; i < r->n_accounts; i++)
        r->accounts[i].chart_series = SIZE_MAX;
    r->charts = r->opt->chart_width && r->opt->chart_height && cmt_timeline_used(&rp->timeline) != 0;
    if (!r->charts)
        return 0;
    if (cmt_timeline_model_build(&r->chart, &rp->timeline, r->opt->chart_width) != 0)
        return -1;
    for (size_t i = 0; i < r->n_accounts; i++)
        r->accounts[i].chart_series = cmt_timeline_model_find(&r->chart, r->accounts[i].series);
    return 0;
}

static int build_trace_facts(struct cmt_report *r, const struct cmt_analysis *a)
{
    struct cmt_report_trace *t = &r->trace;
    const struct cmt_trace_model *m = &a->model;
    t->path = a->path;
    t->version_major = a->info.version_major;
    t->version_minor = a->info.version_minor;
    t->state = cmt_analysis_state(a);
    t->complete = cmt_analysis_complete(a);
    t->start_ns = a->info.start_monotonic_ns;
    t->end_ts = m->has_end ? m->end.ts : a->replay.last_ts;
    t->pid = m->has_process ? m->pid : a->info.pid;
    /* The header counts every call the trace recorded, the IPC records'
     * (which the replay keeps apart from the allocations) too. */
    t->events = a->replay.events + a->replay.ipc.records;
    t->failed_allocs = a->replay.failed_allocs;
    t->damaged = a->damaged;
    t->message = a->message;
    t->file_size = a->info.file_size;
    t->claimed_end = a->info.claimed_end;
    t->clean_exit = a->info.flags & CMT_FILE_FLAG_CLEAN_EXIT;
    t->in_progress = cmt_analysis_in_progress(a);
    bool cut = a->damaged || (a->reader && cmt_reader_truncated(a->reader));
    t->live_basis = r->at                                                         ? CMT_LIVE_AT_TIME
                    : cut                                                         ? CMT_LIVE_AT_CUT
                    : t->in_progress                                              ? CMT_LIVE_IN_PROGRESS
                    : !t->clean_exit || (a->info.flags & (CMT_FILE_FLAG_SIZE_LIMIT |
                                                           CMT_FILE_FLAG_WRITE_ERROR)) ? CMT_LIVE_RECORDING_ENDED
                                                                                  : CMT_LIVE_AT_EXIT;
    t->start_realtime_ns = a->info.start_realtime_ns;
    t->has_process = m->has_process;
    t->ppid = m->ppid;
    t->exe = cmt_model_string(m, m->exe_id);
    t->hostname = cmt_model_string(m, m->hostname_id);
    t->cwd = cmt_model_string(m, m->cwd_id);
    t->rank = m->rank;
    t->has_job = m->has_job;
    if (m->has_job) {
        const struct cmt_job_in *jb = &m->job;
        t->job_source = jb->source;
        t->job_rank = jb->rank;
        t->job_local_rank = jb->local_rank;
        t->job_world_size = jb->world_size;
        t->job_local_world_size = jb->local_world_size;
        t->has_job_id = jb->job_id != 0;
        t->job_id = cmt_model_string(m, jb->job_id);
        t->job_nvars = jb->nvars < CMT_JOB_MAX_VARS ? jb->nvars : CMT_JOB_MAX_VARS;
        for (size_t i = 0; i < t->job_nvars; i++)
            t->job_vars[i] = (struct cmt_report_var){cmt_model_string(m, jb->vars[i].name_id),
                                                     cmt_model_string(m, jb->vars[i].value_id)};
    }
    t->n_notes = m->n_notes;
    for (size_t i = 0; i < m->n_notes; i++)
        t->notes[i] = (struct cmt_report_note){cmt_note_source_name(m->notes[i].source),
                                               cmt_model_string(m, m->notes[i].text_id), m->notes[i].ts};
    t->notes_dropped = m->notes_dropped;
    memcpy(t->events_by_api, a->replay.events_by_api, sizeof t->events_by_api);
    for (unsigned i = 0; i <= CMT_API_IPC_LAST - CMT_API_IPC_FIRST; i++)
        t->events_by_api[CMT_API_IPC_FIRST + i] += a->replay.ipc.by_api[i];
    t->events_dropped = a->info.events_dropped;
    t->unrecorded_nested = a->info.unrecorded_nested;
    t->unmatched_frees = a->replay.unmatched_frees;
    t->device_mask = a->replay.device_mask;
    t->host_seen = a->replay.host_seen;
    t->growth_checkpoints = a->replay.growth.n;
    t->growth_interval_ns = a->replay.growth.started ? 1ull << a->replay.growth.shift : 0;
    memcpy(t->virt, a->replay.virt, sizeof t->virt);
    if (a->forensics) {
        t->frag_checkpoints = a->forensics->checkpoints;
        t->device_samples = a->forensics->samples;
    }
    if (m->argc) {
        t->argv = calloc(m->argc, sizeof *t->argv);
        if (!t->argv)
            return -1;
        for (uint32_t i = 0; i < m->argc; i++)
            t->argv[i] = cmt_model_string(m, m->arg_ids[i]);
        t->argc = m->argc;
    }
    return 0;
}

/* What if: the analysis's engine, or a cache-off trace's second reading,
 * under the settings the analysis was asked to replay. */
static int build_whatif(struct cmt_report *r, const struct cmt_analysis *a)
{
    const struct cmt_whatif *engine = a->whatif;
    if (engine->source == CMT_WHATIF_NONE) {
        if (cmt_whatif_uncached_run(&r->whatif_uncached, a, r->frames, r, &engine->asked[0], engine->n_asked,
                                    engine->capacity) != 0)
            return -1;
        /* nothing to replay: said in the report where the trace shows
         * PyTorch (its cache without the block layer), not for every
         * program of its own cudaMalloc calls */
        if (!r->whatif_uncached && !cmt_whatif_pytorch_seen(a, r->frames, r))
            return 0;
        if (r->whatif_uncached)
            engine = r->whatif_uncached;
    }
    r->whatif = calloc(1, sizeof *r->whatif);
    return r->whatif && cmt_whatif_report_build(r->whatif, a, engine, r->frames, r->phases, r) == 0 ? 0 : -1;
}

/* The report's frames: those the holders classified stacks with while the
 * trace was read, where they were made with the report's options and
 * answered as the whole model would (stack_holders.h), so that no stack is
 * symbolized twice (with symbols, loading the modules' debug information
 * twice was a third of a report of the twin's trace); else new ones. */
static struct cmt_frames *report_frames(struct cmt_report *r, const struct cmt_analysis *a,
                                        const struct cmt_report_options *opt)
{
    const struct cmt_stack_holders *h = a->passes ? &a->passes->holders : NULL;
    if (h && h->frames && h->opt == &opt->frames && cmt_stack_holders_exact(h) &&
        cmt_frames_take_over(h->frames) == 0) {
        r->frames_taken = true;
        return h->frames;
    }
    return cmt_frames_new(&a->model, &opt->frames);
}

int cmt_report_build(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_report_options *opt)
{
    memset(r, 0, sizeof *r);
    r->n_stacks = a->model.n_stacks;
    r->opt = opt;
    r->at = opt->at_set && a->stopped_early;
    r->at_past_end = opt->at_set && !a->stopped_early;
    r->frames = report_frames(r, a, opt);
    if (!r->frames || build_trace_facts(r, a) != 0)
        return -1;
    for (int h = 0; h < CMT_HOLDER_COUNT; h++) {
        r->holder_name[h] = cmt_holder_name((enum cmt_holder)h);
        r->holder_key[h] = cmt_holder_key((enum cmt_holder)h);
    }
    const struct cmt_replay *rp = &a->replay;
    r->accounts = calloc((CMT_MAX_DEVICES + 1) * CMT_CLASS_COUNT, sizeof *r->accounts);
    if (!r->accounts)
        return -1;
    /* Devices in order, each with its managed memory; pinned host last. */
    for (int i = 1; i <= CMT_MAX_DEVICES + 1; i++) {
        int d = i % (CMT_MAX_DEVICES + 1);
        for (int c = 0; c < CMT_CLASS_COUNT; c++)
            if (rp->accounts[d][c] && build_account(r, a, rp->accounts[d][c], &r->accounts[r->n_accounts++]) != 0)
                return -1;
    }
    r->suppressions = opt->suppress_stack ? opt->suppressions : NULL;
    r->n_suppressions = opt->suppress_stack ? opt->n_suppressions : 0;
    r->suppression_use = calloc(r->n_suppressions ? r->n_suppressions : 1, sizeof *r->suppression_use);
    long *supp_cache = malloc((r->n_stacks + 1) * sizeof *supp_cache);
    if (!r->suppression_use || !supp_cache) {
        free(supp_cache);
        return -1;
    }
    for (size_t i = 0; i <= r->n_stacks; i++)
        supp_cache[i] = -2;
    struct site_totals *totals = build_site_totals(r, a);
    int rc = totals && build_growth(r, a, totals) == 0 && build_leaks(r, a, totals, supp_cache) == 0 &&
                     build_failures(r, a) == 0
                 ? 0
                 : -1;
    free(totals);
    if (rc == 0 && a->blocks && (a->blocks->seen || a->model.has_allocator))
        rc = build_blocks(r, a) == 0 && (r->at || suppress_tensors(r, supp_cache) == 0) ? 0 : -1;
    if (rc == 0 && a->blocks && a->blocks->seen)
        rc = build_tensors(r, a, supp_cache);
    free(supp_cache);
    if (rc != 0)
        return -1;
    if (opt->holder_peaks && cmt_holder_peaks_build(r, a) != 0)
        return -1;
    if (cmt_timeline_model_build(&r->timeline, &rp->timeline, CMT_TIMELINE_BUCKETS) != 0 ||
        build_allocated(r, rp) != 0 || build_chart(r, rp) != 0 || cmt_report_events_build(&r->events, a) != 0)
        return -1;
    if (opt->site_floors && cmt_site_floors_build(&r->floors, r, a) != 0)
        return -1;
    if (a->forensics) {
        r->forensics = cmt_forensics_report_build(r, a, opt->context_allowance_set ? opt->context_allowance
                                                                                  : CMT_DEFAULT_CONTEXT_ALLOWANCE);
        if (!r->forensics)
            return -1;
    }
    if (cmt_phases_view_build(&r->phases, a, r->frames) != 0 || tensor_step_growth(r, a) != 0)
        return -1;
    for (size_t i = 0; r->phases && i < r->n_accounts; i++) {
        const struct cmt_account *acc = r->accounts[i].account;
        if (acc->cls == CMT_CLASS_DEVICE && acc->device >= 0 && acc->device < CMT_MAX_DEVICES &&
            r->phases->at_peak[acc->device])
            r->accounts[i].peak_phase = &r->phases->peak[acc->device];
    }
    if (a->whatif && build_whatif(r, a) != 0)
        return -1;
    /* PyTorch's failures said with what the replay found (oom_replay.h) */
    cmt_forensics_report_replay(r->forensics, r);
    cmt_oom_replay_sentences(r);
    if (a->site_calls && a->thread_use) {
        if (cmt_calls_view_build(&r->calls, r->frames, &a->replay, a->site_calls) != 0 ||
            cmt_threads_view_build(&r->threads, &a->model, a->thread_use) != 0)
            return -1;
        r->has_usage = true;
    }
    if (cmt_ipc_report_build(r, rp) != 0)
        return -1;
    collect_warnings(r, a);
    if (r->at_past_end) {
        const struct cmt_trace_model *m = &a->model;
        cmt_report_add_warning(r, "--at %s is after the end of the trace (%s): the report covers the whole run",
                               CMT_DURATION(opt->at_ns), CMT_DURATION(cmt_report_rel_ns(r, m->has_end ? m->end.ts : rp->last_ts)));
    }
    return 0;
}

void cmt_report_free(struct cmt_report *r)
{
    cmt_ipc_report_free(&r->ipc);
    free(r->trace.argv);
    cmt_timeline_model_free(&r->timeline);
    cmt_timeline_model_free(&r->chart);
    cmt_report_events_free(&r->events);
    cmt_site_floors_free(&r->floors);
    free(r->allocated);
    for (size_t i = 0; r->accounts && i < r->n_accounts; i++) {
        free(r->accounts[i].peak.rows);
        cmt_call_tree_free(&r->accounts[i].peak.tree);
        free(r->accounts[i].at.rows);
        cmt_call_tree_free(&r->accounts[i].at.tree);
    }
    free(r->accounts);
    free(r->growth);
    free(r->leaks);
    free(r->suppressed);
    free(r->suppression_use);
    free(r->held);
    free(r->holder_by_stack);
    free(r->cache_by_stack);
    free(r->failures);
    free(r->failure_flags);
    cmt_forensics_report_free(r->forensics);
    cmt_phases_view_free(r->phases);
    if (r->blocks)
        cmt_blocks_report_free(r->blocks);
    free(r->blocks);
    if (r->tensors)
        cmt_tensors_report_free(r->tensors);
    free(r->tensors);
    if (r->tensor_pass)
        cmt_tensor_pass_free(r->tensor_pass);
    free(r->tensor_pass);
    if (r->whatif)
        cmt_whatif_report_free(r->whatif);
    free(r->whatif);
    cmt_whatif_uncached_free(r->whatif_uncached);
    cmt_calls_view_free(&r->calls);
    cmt_threads_view_free(&r->threads);
    for (size_t i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    if (!r->frames_taken)
        cmt_frames_free(r->frames);
    memset(r, 0, sizeof *r);
}

const char *cmt_live_basis_key(enum cmt_live_basis b)
{
    switch (b) {
    case CMT_LIVE_AT_EXIT:
        return "exit";
    case CMT_LIVE_RECORDING_ENDED:
        return "recording_ended";
    case CMT_LIVE_AT_CUT:
        return "cut";
    case CMT_LIVE_IN_PROGRESS:
        return "in_progress";
    default:
        return "at";
    }
}

const char *cmt_report_live_words(const struct cmt_report *r)
{
    switch (r->trace.live_basis) {
    case CMT_LIVE_AT_CUT:
        return "at the cut";
    case CMT_LIVE_IN_PROGRESS:
        return "when read";
    case CMT_LIVE_AT_TIME:
        return "then";
    default:
        return "at exit";
    }
}
