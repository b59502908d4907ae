/* SPDX-License-Identifier: MIT */
#include "forensics_report.h"

#include <stdlib.h>
#include <string.h>

#include "blocks_report.h"
#include "report.h"

/* --- PyTorch's own OOM of a failure --------------------------------------------- */

/* The end of the failure's window: the thread's next allocation, or, when
 * that was a retry that failed too (PyTorch asks again after releasing its
 * cache), the retry's own window. UINT64_MAX: no next allocation seen. */
static uint64_t window_end(const struct cmt_forensics *f, size_t i)
{
    for (size_t hops = 0; hops < f->n_cases; hops++) {
        const struct cmt_oom_case *c = &f->cases[i];
        if (!c->next_ts)
            return UINT64_MAX;
        if (!c->retried || c->retry_result == 0)
            return c->next_ts;
        size_t j = i + 1;
        while (j < f->n_cases && !(f->cases[j].tid == c->tid && f->cases[j].ts == c->next_ts))
            j++;
        if (j == f->n_cases)
            return c->next_ts;
        i = j;
    }
    return UINT64_MAX;
}

static const struct cmt_blocks_oom *block_oom_of(const struct cmt_report *r, const struct cmt_forensics *f, size_t i)
{
    const struct cmt_oom_case *c = &f->cases[i];
    if (!r->blocks || !r->blocks->on || c->device < 0)
        return NULL;
    uint64_t end = window_end(f, i);
    const struct cmt_blocks_oom *best = NULL;
    for (size_t d = 0; d < r->blocks->n_devices; d++) {
        const struct cmt_blocks_device *bd = &r->blocks->devices[d];
        if (bd->ordinal != c->device)
            continue;
        for (size_t k = 0; k < bd->n_ooms; k++) {
            const struct cmt_blocks_oom *o = &bd->ooms[k];
            if (o->tid == c->tid && o->at.ts >= c->ts && o->at.ts < end && (!best || o->at.ts < best->at.ts))
                best = o;
        }
    }
    return best;
}

/* --- call sites -------------------------------------------------------------- */

static int live_site_cmp(const void *pa, const void *pb)
{
    const struct cmt_live_site *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static void build_oom(struct cmt_report *r, struct cmt_forensics_report *fr, const struct cmt_forensics *f)
{
    for (size_t i = 0; i < f->n_cases; i++) {
        const struct cmt_oom_case *c = &f->cases[i];
        struct cmt_oom_view *v = &fr->oom[fr->n_oom++];
        v->c = c;
        cmt_oom_figures_of(f, c, fr->allowance, &v->fig);
        cmt_oom_decide(&v->fig, &v->verdict);
        v->verdict_name = cmt_verdict_name(v->verdict.verdict);
        v->rule_id = cmt_verdict_rule_id(v->verdict.rule);
        v->stack = cmt_frames_canonical(r->frames, c->stack);
        v->allocator = cmt_allocator_family_of(r->frames, c->stack);
        v->allocator_name = cmt_allocator_family_name(v->allocator);
        v->allocator_remedy = v->allocator == CMT_ALLOCATOR_PYTORCH && r->blocks && r->blocks->expandable
                                  ? cmt_allocator_family_remedy_expandable()
                                  : cmt_allocator_family_remedy(v->allocator);
        v->block_oom = block_oom_of(r, f, i);
        if (v->block_oom) {
            /* the cache's own record knows more: it decides (R11, R12) */
            const struct cmt_blocks_oom *bo = v->block_oom;
            struct cmt_cache_oom_figures cf = {bo->rounded, bo->cache_free, bo->device_free};
            cmt_oom_decide_in_cache(&v->fig, &cf, &v->verdict);
            v->verdict_name = cmt_verdict_name(v->verdict.verdict);
            v->rule_id = cmt_verdict_rule_id(v->verdict.rule);
        }
        v->cache_cannot_serve = v->block_oom && v->verdict.rule == CMT_VRULE_CACHE_FULL;
        uint8_t flags = c->failure_index < CMT_MAX_FAILURES_KEPT && r->failure_flags ? r->failure_flags[c->failure_index] : 0;
        v->probe = flags & CMT_FAILURE_PROBE;
        v->retry_of = SIZE_MAX;
        if (flags & CMT_FAILURE_RETRY)
            for (size_t k = i; k-- > 0;)
                if (f->cases[k].tid == c->tid) {
                    /* the failure it repeats, itself perhaps a retry */
                    v->retry_of = fr->oom[k].retry_of != SIZE_MAX ? fr->oom[k].retry_of : k;
                    fr->oom[v->retry_of].retries++;
                    fr->oom[v->retry_of].last_retry_ts = c->ts;
                    break;
                }
        if (v->probe)
            fr->n_probes++;
        else if (v->retry_of == SIZE_MAX)
            fr->n_failures++;
        /* The raw sites, merged by call site. */
        size_t n = 0;
        for (size_t k = 0; k < c->n_top; k++) {
            uint64_t key = cmt_frames_canonical(r->frames, c->top[k].stack);
            size_t j = 0;
            while (j < n && v->top[j].stack != key)
                j++;
            if (j == n)
                v->top[n++] = (struct cmt_live_site){key, 0, 0};
            v->top[j].bytes += c->top[k].bytes;
            v->top[j].count += c->top[k].count;
        }
        qsort(v->top, n, sizeof *v->top, live_site_cmp);
        v->n_top = n;
    }
}

/* A churn row per call site, except that every call path into a known
 * caching allocator is one row: the allocator is the call site that picks
 * segment sizes, whichever operation asked it for memory. */
struct churn_entry {
    uint64_t group, canonical;
    uint32_t raw;
    int family;
};

static int churn_entry_cmp(const void *pa, const void *pb)
{
    const struct churn_entry *a = pa, *b = pb;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->canonical != b->canonical)
        return a->canonical < b->canonical ? -1 : 1;
    return a->raw < b->raw ? -1 : a->raw > b->raw;
}

static int merge_churn_group(const struct cmt_churn *ch, const struct churn_entry *e, size_t n,
                             struct cmt_churn_row *row)
{
    struct cmt_size_set merged = {0};
    uint64_t most = 0;
    int rc = 0;
    *row = (struct cmt_churn_row){.allocator = e[0].family};
    for (size_t j = 0; j < n; j++) {
        const struct cmt_churn_site *s = &ch->sites[e[j].raw];
        if (j == 0 || s->min_size < row->min_size)
            row->min_size = s->min_size;
        if (s->max_size > row->max_size)
            row->max_size = s->max_size;
        row->allocs += s->allocs;
        row->frees += s->frees;
        row->alloc_bytes += s->alloc_bytes;
        row->lifetime_ns += s->lifetime_ns;
        if (j == 0 || e[j].canonical != e[j - 1].canonical)
            row->paths++;
        if (s->allocs > most) { /* shown: the path that allocated most often */
            most = s->allocs;
            row->key = e[j].canonical;
        }
        /* a site of one size keeps no set: that size is its min_size */
        if (s->sizes.count ? cmt_size_set_merge(&merged, &s->sizes) != 0
                           : s->allocs && cmt_size_set_add(&merged, s->min_size) != 0)
            rc = -1;
    }
    row->distinct = merged.count;
    row->saturated = merged.saturated;
    cmt_size_set_free(&merged);
    return rc;
}

static int build_churn(struct cmt_report *r, struct cmt_forensics_report *fr, const struct cmt_forensics *f,
                       const struct cmt_analysis *a)
{
    const struct cmt_churn *ch = &f->churn;
    struct churn_entry *entries = malloc((ch->cap ? ch->cap : 1) * sizeof *entries);
    /* Only the rows that can be ranked are kept (CMT_CHURN_MIN_SIZES sizes
     * or more): a row for every call site was 88 bytes a site, twice, on a
     * trace of a million of them (issue 32). */
    struct cmt_churn_row *rows = NULL;
    size_t rows_cap = 0;
    if (!entries)
        return -1;
    size_t n = 0;
    for (size_t s = 0; s < ch->cap; s++) {
        if (!ch->sites[s].allocs)
            continue;
        uint64_t canonical = cmt_frames_canonical(r->frames, s);
        int family = (int)cmt_allocator_family_of(r->frames, s);
        entries[n++] = (struct churn_entry){family ? (1ull << 63) | (uint64_t)family : canonical, canonical,
                                            (uint32_t)s, family};
    }
    qsort(entries, n, sizeof *entries, churn_entry_cmp);
    size_t m = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && entries[j].group == entries[i].group)
            j++;
        struct cmt_churn_row row;
        rc = merge_churn_group(ch, entries + i, j - i, &row);
        i = j;
        if (rc != 0 || row.distinct < CMT_CHURN_MIN_SIZES)
            continue;
        if (m == rows_cap) {
            size_t cap = rows_cap ? rows_cap * 2 : 16;
            struct cmt_churn_row *more = realloc(rows, cap * sizeof *more);
            if (!more) {
                rc = -1;
                break;
            }
            rows = more;
            rows_cap = cap;
        }
        rows[m++] = row;
    }
    free(entries);
    struct cmt_churn_row *ranked = NULL;
    long k = rc == 0 ? cmt_churn_rank(rows, m, CMT_CHURN_MIN_SIZES, &ranked) : -1;
    free(rows);
    if (k < 0)
        return -1;
    fr->churn = calloc((size_t)k + 1, sizeof *fr->churn);
    if (!fr->churn) {
        free(ranked);
        return -1;
    }
    /* The run: from the first allocation or release to the end. Not from the
     * trace's start: the time a process takes to start (far longer under a
     * sanitizer or a debugger) would make any buffer look brief. */
    uint64_t end = a->model.has_end ? a->model.end.ts : a->replay.last_ts;
    uint64_t duration = end > a->replay.first_ts ? end - a->replay.first_ts : 0;
    for (long i = 0; i < k; i++) {
        struct cmt_churn_view *v = &fr->churn[i];
        v->row = ranked[i];
        /* Short-lived: most released during the run, after a tenth of it or
         * less on average (a program's teardown releases its long-lived
         * buffers too). */
        bool most_released = ranked[i].frees * 2 >= ranked[i].allocs;
        bool brief = ranked[i].frees && ranked[i].lifetime_ns / ranked[i].frees * 10 <= duration;
        v->pattern = most_released && brief ? CMT_CHURN_SHORT_LIVED : CMT_CHURN_LONG_LIVED;
        v->allocator = (enum cmt_allocator_family)ranked[i].allocator;
        v->allocator_name = cmt_allocator_family_name(v->allocator);
        v->allocator_remedy = cmt_allocator_family_remedy(v->allocator);
    }
    fr->n_churn = (size_t)k;
    free(ranked);
    return 0;
}

static int waste_cmp(const void *pa, const void *pb)
{
    const struct cmt_waste_view *a = pa, *b = pb;
    uint64_t ta = a->pitch_bytes + a->round_bytes, tb = b->pitch_bytes + b->round_bytes;
    if (ta != tb)
        return ta < tb ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int build_waste(struct cmt_report *r, struct cmt_forensics_report *fr, const struct cmt_forensics *f)
{
    fr->waste = calloc(f->waste_cap + 1, sizeof *fr->waste);
    if (!fr->waste)
        return -1;
    for (size_t s = 0; s < f->waste_cap; s++) {
        const struct cmt_waste_site *w = &f->waste[s];
        if (!w->pitch_bytes && !w->round_bytes)
            continue;
        uint64_t key = cmt_frames_canonical(r->frames, s);
        size_t j = 0;
        while (j < fr->n_waste && fr->waste[j].stack != key)
            j++;
        if (j == fr->n_waste)
            fr->waste[fr->n_waste++] = (struct cmt_waste_view){.stack = key};
        fr->waste[j].pitch_bytes += w->pitch_bytes;
        fr->waste[j].pitch_count += w->pitch_count;
        fr->waste[j].round_bytes += w->round_bytes;
        fr->pitch_waste_total += w->pitch_bytes;
        fr->round_waste_total += w->round_bytes;
    }
    qsort(fr->waste, fr->n_waste, sizeof *fr->waste, waste_cmp);
    return 0;
}

static int opener_cmp(const void *pa, const void *pb)
{
    const struct cmt_opener_view *a = pa, *b = pb;
    if (a->largest != b->largest)
        return a->largest < b->largest ? 1 : -1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int build_openers(struct cmt_report *r, struct cmt_forensics_report *fr, const struct cmt_forensics *f)
{
    fr->openers = calloc(f->openers_cap + 1, sizeof *fr->openers);
    if (!fr->openers)
        return -1;
    for (size_t s = 0; s < f->openers_cap; s++) {
        const struct cmt_opener_site *o = &f->openers[s];
        if (!o->count)
            continue;
        uint64_t key = cmt_frames_canonical(r->frames, s);
        size_t j = 0;
        while (j < fr->n_openers && fr->openers[j].stack != key)
            j++;
        if (j == fr->n_openers)
            fr->openers[fr->n_openers++] = (struct cmt_opener_view){.stack = key};
        struct cmt_opener_view *v = &fr->openers[j];
        v->count += o->count;
        v->bytes += o->bytes;
        if (o->largest > v->largest)
            v->largest = o->largest;
    }
    qsort(fr->openers, fr->n_openers, sizeof *fr->openers, opener_cmp);
    return 0;
}

static int pin_cmp(const void *pa, const void *pb)
{
    const struct cmt_pin_view *a = pa, *b = pb;
    if (a->pinned_bytes != b->pinned_bytes)
        return a->pinned_bytes < b->pinned_bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static void build_pins(struct cmt_report *r, struct cmt_forensics_report *fr, const struct cmt_forensics *f)
{
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        const struct cmt_device_forensics *dev = f->devices[d];
        if (!dev || !dev->worst.valid)
            continue;
        size_t n = 0;
        for (size_t i = 0; i < dev->worst.n_pins; i++) {
            const struct cmt_pin_site *p = &dev->worst.pins[i];
            uint64_t key = cmt_frames_canonical(r->frames, p->stack);
            size_t j = 0;
            while (j < n && fr->pins[d][j].stack != key)
                j++;
            if (j == n)
                fr->pins[d][n++] = (struct cmt_pin_view){.stack = key, .oldest_ts = p->oldest_ts};
            struct cmt_pin_view *v = &fr->pins[d][j];
            v->pinned_bytes += p->pinned_bytes;
            v->holes += p->holes;
            v->allocations += p->allocations;
            if (p->oldest_ts < v->oldest_ts)
                v->oldest_ts = p->oldest_ts;
        }
        qsort(fr->pins[d], n, sizeof fr->pins[d][0], pin_cmp);
        fr->n_pins[d] = n;
    }
}

struct cmt_forensics_report *cmt_forensics_report_build(struct cmt_report *r, const struct cmt_analysis *a, uint64_t allowance)
{
    const struct cmt_forensics *f = a->forensics;
    if (!f)
        return NULL;
    struct cmt_forensics_report *fr = calloc(1, sizeof *fr);
    if (!fr)
        return NULL;
    fr->failures_seen = f->failures_seen;
    fr->track_holes = f->opt.track_holes;
    fr->samples = f->samples;
    fr->used_vmm = a->replay.events_by_api[CMT_API_CU_MEM_CREATE] != 0;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        fr->devices[d] = f->devices[d];
    fr->pools = f->pools;
    fr->n_pools = f->n_pools;
    fr->allowance = allowance;
    fr->oom = calloc(f->n_cases + 1, sizeof *fr->oom);
    if (!fr->oom) {
        cmt_forensics_report_free(fr);
        return NULL;
    }
    build_oom(r, fr, f);
    if (build_churn(r, fr, f, a) != 0 || build_waste(r, fr, f) != 0 || build_openers(r, fr, f) != 0) {
        cmt_forensics_report_free(fr);
        return NULL;
    }
    build_pins(r, fr, f);
    return fr;
}

void cmt_forensics_report_free(struct cmt_forensics_report *fr)
{
    if (!fr)
        return;
    free(fr->oom);
    free(fr->churn);
    free(fr->waste);
    free(fr->openers);
    free(fr);
}

const struct cmt_oom_view *cmt_forensics_report_failure(const struct cmt_forensics_report *fr, size_t failure_index)
{
    for (size_t i = 0; fr && i < fr->n_oom; i++)
        if (fr->oom[i].c->failure_index == failure_index)
            return &fr->oom[i];
    return NULL;
}

void cmt_forensics_report_replay(struct cmt_forensics_report *fr, const struct cmt_report *r)
{
    for (size_t i = 0; fr && i < fr->n_oom; i++) {
        struct cmt_oom_view *v = &fr->oom[i];
        if (v->block_oom)
            cmt_oom_replay_of(&v->replay, r, v->c->device, v->block_oom->at.ts);
        else if (!v->probe && v->retry_of == SIZE_MAX)
            cmt_oom_replay_uncached(&v->replay, r, v->c->device, v->c->ts);
    }
}
