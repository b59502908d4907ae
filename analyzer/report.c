/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "forensics_report.h"
#include "size_parse.h"

const char *cmt_class_name(unsigned cls)
{
    static const char *const names[] = {"device", "managed", "pinned-host"};
    return cls < CMT_CLASS_COUNT ? names[cls] : "unknown";
}

uint64_t cmt_report_rel_ns(const struct cmt_report *r, uint64_t ts)
{
    uint64_t start = r->analysis->info.start_monotonic_ns;
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

static int row_key_cmp(const void *pa, const void *pb)
{
    const struct cmt_site_row *a = pa, *b = pb;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return (int)a->kind - (int)b->kind;
}

/* Sorts rows by (stack, kind), merges equal keys, then orders by bytes. */
static size_t merge_rows(struct cmt_site_row *rows, size_t n)
{
    if (n == 0)
        return 0;
    qsort(rows, n, sizeof *rows, row_key_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && rows[out - 1].stack == rows[i].stack && rows[out - 1].kind == rows[i].kind) {
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

static int build_account(struct cmt_report *r, const struct cmt_account *acc, struct cmt_account_view *v)
{
    v->account = acc;
    size_t n = 0;
    for (size_t s = 0; s < acc->sites_cap; s++)
        if (acc->site_peak[s].count)
            n++;
    struct cmt_site_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return -1;
    size_t k = 0;
    for (size_t s = 0; s < acc->sites_cap; s++) {
        if (!acc->site_peak[s].count)
            continue;
        const struct cmt_site_stats *st = s < r->analysis->replay.sites_cap ? &r->analysis->replay.sites[s] : NULL;
        rows[k++] = (struct cmt_site_row){
            .stack = cmt_frames_canonical(r->frames, s),
            .bytes = acc->site_peak[s].bytes,
            .count = acc->site_peak[s].count,
            .api = st ? st->api : 0,
            .first_ts = st ? st->first_ts : 0,
        };
    }
    v->n_sites_at_peak = merge_rows(rows, k);
    v->top = rows;
    v->n_top = v->n_sites_at_peak < r->opt->top ? v->n_sites_at_peak : r->opt->top;
    return 0;
}

static int build_leaks(struct cmt_report *r)
{
    const struct cmt_live_set *live = &r->analysis->replay.live;
    size_t cap = live->count ? live->count : 1;
    struct cmt_site_row *rows = calloc(cap, sizeof *rows);
    struct cmt_site_row *set_aside = calloc(cap, sizeof *set_aside);
    if (!rows || !set_aside) {
        free(rows);
        free(set_aside);
        return -1;
    }
    size_t k = 0, n_aside = 0;
    for (size_t i = 0; i < live->cap; i++) {
        const struct cmt_live *l = &live->slots[i];
        if (!l->used)
            continue;
        struct cmt_site_row row = {
            .stack = cmt_frames_canonical(r->frames, l->stack),
            .bytes = l->size,
            .count = 1,
            .kind = l->kind,
            .api = l->api,
            .first_ts = l->ts,
        };
        bool holds = cmt_kind_holds_memory(l->kind);
        if (r->opt->suppress_leak && r->opt->suppress_leak(r->opt->suppress_ctx, r->frames, l)) {
            set_aside[n_aside++] = row;
            if (holds) {
                r->suppressed_bytes += l->size;
                r->suppressed_count++;
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
    r->n_leaks = merge_rows(rows, k);
    r->leaks = rows;
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
    r->n_suppressed = merge_rows(set_aside, n_aside);
    r->suppressed = set_aside;
    return 0;
}

static int build_failures(struct cmt_report *r)
{
    const struct cmt_replay *rp = &r->analysis->replay;
    r->failures = calloc(rp->n_failures ? rp->n_failures : 1, sizeof *r->failures);
    if (!r->failures)
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
        if (f->size < g->min_size)
            g->min_size = f->size;
        if (f->size > g->max_size)
            g->max_size = f->size;
    }
    return 0;
}

static void collect_warnings(struct cmt_report *r)
{
    const struct cmt_analysis *a = r->analysis;
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
                                  "later events were not recorded",
                               b1, (unsigned long long)a->info.events_dropped);
    } else if (flags & CMT_FILE_FLAG_WRITE_ERROR) {
        cmt_report_add_warning(r, "recording stopped early: the trace file could not grow (disk full?); %llu "
                                  "later events were not recorded",
                               (unsigned long long)a->info.events_dropped);
    }
    if (!(flags & CMT_FILE_FLAG_CLEAN_EXIT))
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

int cmt_report_build(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_report_options *opt)
{
    memset(r, 0, sizeof *r);
    r->analysis = a;
    r->opt = opt;
    r->frames = cmt_frames_new(&a->model, &opt->frames);
    if (!r->frames)
        return -1;
    const struct cmt_replay *rp = &a->replay;
    r->accounts = calloc((CMT_MAX_DEVICES + 1) * CMT_CLASS_COUNT, sizeof *r->accounts);
    if (!r->accounts)
        return -1;
    /* Devices in order, each with its managed memory; pinned host last. */
    for (int i = 1; i <= CMT_MAX_DEVICES + 1; i++) {
        int d = i % (CMT_MAX_DEVICES + 1);
        for (int c = 0; c < CMT_CLASS_COUNT; c++)
            if (rp->accounts[d][c] && build_account(r, rp->accounts[d][c], &r->accounts[r->n_accounts++]) != 0)
                return -1;
    }
    if (build_leaks(r) != 0 || build_failures(r) != 0)
        return -1;
    if (a->forensics) {
        r->forensics = cmt_forensics_report_build(r, opt->context_allowance_set ? opt->context_allowance
                                                                                  : CMT_DEFAULT_CONTEXT_ALLOWANCE);
        if (!r->forensics)
            return -1;
    }
    collect_warnings(r);
    return 0;
}

void cmt_report_free(struct cmt_report *r)
{
    for (size_t i = 0; i < r->n_accounts; i++)
        free(r->accounts[i].top);
    free(r->accounts);
    free(r->leaks);
    free(r->suppressed);
    free(r->failures);
    cmt_forensics_report_free(r->forensics);
    for (size_t i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    cmt_frames_free(r->frames);
    memset(r, 0, sizeof *r);
}
