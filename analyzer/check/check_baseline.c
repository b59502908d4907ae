/* SPDX-License-Identifier: MIT */
/* Baselines: what an earlier run leaked, by call site, and its peaks. Sites
 * are matched by their symbolized frames (function, file, line, module), as
 * addresses and stack ids change from run to run; when no site matches with
 * lines, the frames without lines are tried, so a leak whose code only moved
 * stays known. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "size_parse.h"

struct site {
    char *key;   /* with lines */
    char *loose; /* without lines */
    uint64_t bytes, count;
    uint64_t stack; /* current runs: the largest row's stack, for the location */
    uint8_t api;
    bool matched;
};

struct site_list {
    struct site *items;
    size_t n, cap;
};

struct cmt_baseline {
    struct site_list sites; /* sorted by key once loaded */
    uint64_t peak[CMT_MAX_DEVICES];
    uint64_t device_mask;
    /* Each baseline trace's executable ("" when it names none), in the order given. */
    char (*exes)[512];
    size_t n_exes;
};

static void site_list_free(struct site_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].loose);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct site *)a)->key, ((const struct site *)b)->key);
}

/* The memory-holding leak rows of a report, one entry per site key (rows of
 * one key summed), sorted by key. */
static int collect_sites(const struct cmt_report *r, struct site_list *out)
{
    memset(out, 0, sizeof *out);
    out->items = calloc(r->n_leaks ? r->n_leaks : 1, sizeof *out->items);
    if (!out->items)
        return -1;
    for (size_t i = 0; i < r->n_leaks; i++) {
        const struct cmt_site_row *row = &r->leaks[i];
        if (!cmt_kind_holds_memory(row->kind))
            continue;
        const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, row->stack);
        struct site *s = &out->items[out->n];
        s->key = cmt_check_site_key(sf, row->kind, true);
        s->loose = cmt_check_site_key(sf, row->kind, false);
        if (!s->key || !s->loose) {
            free(s->key);
            free(s->loose);
            site_list_free(out);
            return -1;
        }
        s->bytes = row->bytes;
        s->count = row->count;
        s->stack = row->stack;
        s->api = row->api;
        out->n++;
    }
    /* Rows come largest first; a stable merge keeps the largest row's stack
     * as the site's. */
    for (size_t i = 0; i < out->n; i++) {
        for (size_t k = i + 1; k < out->n;) {
            if (strcmp(out->items[i].key, out->items[k].key) != 0) {
                k++;
                continue;
            }
            out->items[i].bytes += out->items[k].bytes;
            out->items[i].count += out->items[k].count;
            free(out->items[k].key);
            free(out->items[k].loose);
            memmove(&out->items[k], &out->items[k + 1], (out->n - k - 1) * sizeof *out->items);
            out->n--;
        }
    }
    qsort(out->items, out->n, sizeof *out->items, by_key);
    return 0;
}

static int by_bytes_desc(const void *pa, const void *pb)
{
    const struct site *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return strcmp(a->key, b->key);
}

static struct site *find_key(const struct site_list *l, const char *key)
{
    struct site probe = {.key = (char *)key};
    if (l->n == 0)
        return NULL;
    return bsearch(&probe, l->items, l->n, sizeof *l->items, by_key);
}

/* Folds one baseline trace in: per site the larger of what the traces
 * leaked, per device the larger peak. */
static int merge_trace(struct cmt_baseline *b, const struct cmt_report *r)
{
    struct site_list now;
    if (collect_sites(r, &now) != 0)
        return -1;
    for (size_t i = 0; i < now.n; i++) {
        struct site *have = NULL;
        for (size_t k = 0; k < b->sites.n && !have; k++)
            if (strcmp(b->sites.items[k].key, now.items[i].key) == 0)
                have = &b->sites.items[k];
        if (have) {
            if (now.items[i].bytes > have->bytes) {
                have->bytes = now.items[i].bytes;
                have->count = now.items[i].count;
            }
            continue;
        }
        if (b->sites.n == b->sites.cap) {
            size_t cap = b->sites.cap ? b->sites.cap * 2 : 16;
            struct site *more = realloc(b->sites.items, cap * sizeof *more);
            if (!more) {
                site_list_free(&now);
                return -1;
            }
            b->sites.items = more;
            b->sites.cap = cap;
        }
        b->sites.items[b->sites.n++] = now.items[i];
        now.items[i].key = now.items[i].loose = NULL; /* moved */
    }
    site_list_free(&now);
    for (size_t i = 0; i < r->n_accounts; i++) {
        const struct cmt_account *acc = r->accounts[i].account;
        if (acc->cls != CMT_CLASS_DEVICE || acc->device < 0 || acc->device >= CMT_MAX_DEVICES)
            continue;
        b->device_mask |= 1ull << acc->device;
        if (acc->peak > b->peak[acc->device])
            b->peak[acc->device] = acc->peak;
    }
    return 0;
}

static int load_one(struct cmt_check *c, struct cmt_baseline *b, const char *path, char *err, size_t errlen)
{
    struct cmt_analysis a;
    if (cmt_analysis_run(&a, path, 0) != 0) {
        snprintf(err, errlen, "baseline %s: %s", path, a.message);
        cmt_analysis_free(&a);
        return -1;
    }
    int rc = -1;
    uint32_t flags = a.info.flags;
    if (a.damaged || cmt_reader_truncated(a.reader)) {
        snprintf(err, errlen, "baseline %s: the trace is %s; record the baseline again", path,
                 a.damaged ? "damaged" : "truncated");
    } else if ((!(flags & CMT_FILE_FLAG_CLEAN_EXIT) ||
                (flags & (CMT_FILE_FLAG_SIZE_LIMIT | CMT_FILE_FLAG_WRITE_ERROR))) &&
               !c->opt->check_incomplete) {
        snprintf(err, errlen,
                 "baseline %s: the process did not exit normally or recording stopped early, so its leaks are "
                 "unknown; record the baseline from a complete run (or pass --check-incomplete)",
                 path);
    } else {
        struct cmt_report r;
        if (cmt_check_build_report(c, &a, &r, false) != 0 || merge_trace(b, &r) != 0)
            snprintf(err, errlen, "baseline %s: out of memory", path);
        else
            rc = 0;
        if (a.model.has_process)
            snprintf(b->exes[b->n_exes], sizeof b->exes[b->n_exes], "%s", cmt_model_string(&a.model, a.model.exe_id));
        b->n_exes++;
        cmt_report_free(&r);
    }
    cmt_analysis_free(&a);
    return rc;
}

struct cmt_baseline *cmt_baseline_load(struct cmt_check *c, char *err, size_t errlen)
{
    struct cmt_baseline *b = calloc(1, sizeof *b);
    if (b && !(b->exes = calloc(c->opt->n_baselines ? c->opt->n_baselines : 1, sizeof *b->exes))) {
        free(b);
        b = NULL;
    }
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < c->opt->n_baselines; i++) {
        if (load_one(c, b, c->opt->baselines[i], err, errlen) != 0) {
            cmt_baseline_free(b);
            return NULL;
        }
    }
    if (b->sites.n) /* items is NULL when no baseline leaked */
        qsort(b->sites.items, b->sites.n, sizeof *b->sites.items, by_key);
    return b;
}

void cmt_baseline_free(struct cmt_baseline *b)
{
    if (!b)
        return;
    site_list_free(&b->sites);
    free(b->exes);
    free(b);
}

size_t cmt_baseline_count(const struct cmt_baseline *b)
{
    return b->n_exes;
}

const char *cmt_baseline_exe(const struct cmt_baseline *b, size_t i)
{
    return i < b->n_exes ? b->exes[i] : "";
}

bool cmt_baseline_device_peak(const struct cmt_baseline *b, int32_t device, uint64_t *peak)
{
    *peak = 0;
    if (device < 0 || device >= CMT_MAX_DEVICES || !(b->device_mask & (1ull << device)))
        return false;
    *peak = b->peak[device];
    return true;
}

static int add_finding(struct cmt_check_trace *t, const struct site *s, enum cmt_rule rule, enum cmt_level level,
                       uint64_t base_bytes, uint64_t base_count, const char *how)
{
    struct cmt_finding *f = cmt_check_add_finding(t, rule, level);
    if (!f)
        return -1;
    char desc[160], base[32];
    cmt_check_describe_leak(desc, sizeof desc, s->bytes, s->count, s->api);
    cmt_format_size(base_bytes, base, sizeof base);
    const char *allocs = base_count == 1 ? "allocation" : "allocations";
    if (rule == CMT_RULE_NEW_LEAK)
        snprintf(f->message, sizeof f->message, "%s, a new leak: this call site does not leak in the baseline", desc);
    else if (rule == CMT_RULE_LEAK_GROWTH)
        snprintf(f->message, sizeof f->message, "%s, more than the baseline's %s in %" PRIu64 " %s%s", desc, base,
                 base_count, allocs, how);
    else
        snprintf(f->message, sizeof f->message, "%s, known from the baseline (%s in %" PRIu64 " %s there%s)", desc,
                 base, base_count, allocs, how);
    f->site = true;
    f->stack = s->stack;
    f->bytes = s->bytes;
    f->count = s->count;
    f->api = s->api;
    f->has_baseline = rule != CMT_RULE_NEW_LEAK;
    f->baseline_bytes = base_bytes;
    f->baseline_count = base_count;
    f->fingerprint = cmt_check_hash(s->loose, rule);
    return 0;
}

int cmt_baseline_compare_leaks(struct cmt_check *c, struct cmt_check_trace *t)
{
    struct cmt_baseline *b = c->baseline;
    struct site_list now;
    if (collect_sites(&t->report, &now) != 0)
        return -1;
    qsort(now.items, now.n, sizeof *now.items, by_bytes_desc);
    for (size_t k = 0; k < b->sites.n; k++)
        b->sites.items[k].matched = false;
    int rc = 0;
    /* Exact: the same frames, lines included. */
    for (size_t i = 0; i < now.n && rc == 0; i++) {
        struct site *old = find_key(&b->sites, now.items[i].key);
        if (!old)
            continue;
        old->matched = true;
        now.items[i].matched = true;
        bool grew = now.items[i].bytes > old->bytes;
        rc = add_finding(t, &now.items[i], grew ? CMT_RULE_LEAK_GROWTH : CMT_RULE_LEAK,
                         grew ? CMT_LEVEL_ERROR : CMT_LEVEL_WARNING, old->bytes, old->count, "");
    }
    /* Loose: the rest, by frames without lines, site totals compared. */
    for (size_t i = 0; i < now.n && rc == 0; i++) {
        if (now.items[i].matched)
            continue;
        uint64_t cur = 0, base = 0, base_count = 0;
        bool known = false;
        for (size_t k = 0; k < now.n; k++)
            if (!now.items[k].matched && strcmp(now.items[k].loose, now.items[i].loose) == 0)
                cur += now.items[k].bytes;
        for (size_t k = 0; k < b->sites.n; k++)
            if (!b->sites.items[k].matched && strcmp(b->sites.items[k].loose, now.items[i].loose) == 0) {
                known = true;
                base += b->sites.items[k].bytes;
                base_count += b->sites.items[k].count;
            }
        if (!known)
            rc = add_finding(t, &now.items[i], CMT_RULE_NEW_LEAK, CMT_LEVEL_ERROR, 0, 0, "");
        else if (cur > base)
            rc = add_finding(t, &now.items[i], CMT_RULE_LEAK_GROWTH, CMT_LEVEL_ERROR, base, base_count,
                             " (matched by function: the lines moved)");
        else
            rc = add_finding(t, &now.items[i], CMT_RULE_LEAK, CMT_LEVEL_WARNING, base, base_count,
                             "; matched by function: the lines moved");
    }
    site_list_free(&now);
    return rc;
}
