/* SPDX-License-Identifier: MIT */
#include "diff.h"
#include "text_escape.h"

#include "blocks_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cmt_diff_init(struct cmt_diff *d)
{
    memset(d, 0, sizeof *d);
}

void cmt_diff_free(struct cmt_diff *d)
{
    for (size_t i = 0; i < d->n_sites; i++) {
        free(d->sites[i].key);
        free(d->sites[i].identity);
    }
    free(d->sites);
    memset(d, 0, sizeof *d);
}

int64_t cmt_diff_delta(uint64_t old_v, uint64_t new_v)
{
    if (new_v >= old_v)
        return new_v - old_v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(new_v - old_v);
    return old_v - new_v > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)(old_v - new_v);
}

bool cmt_diff_site_changed(const struct cmt_diff_site *s)
{
    return s->side[0].peak != s->side[1].peak || s->side[0].leak != s->side[1].leak ||
           s->side[0].calls != s->side[1].calls || s->side[0].tensor_peak != s->side[1].tensor_peak ||
           s->side[0].tensor_kept != s->side[1].tensor_kept;
}

bool cmt_diff_site_suppressed_changed(const struct cmt_diff_site *s)
{
    return s->side[0].suppressed != s->side[1].suppressed ||
           s->side[0].suppressed_count != s->side[1].suppressed_count;
}

/* The site's identity: its frames shown, one per line, each with its
 * control characters escaped (text_escape.h), so that a name from the trace
 * holding a newline stays one frame, and one line; a frame without a name by
 * its module and offset only (the address differs from run to run). */
static char *site_key(struct cmt_frames *frames, uint64_t stack, size_t *n_lines)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(frames, stack);
    if (sf->n == 0) {
        *n_lines = 1;
        return strdup("(no stack recorded)");
    }
    size_t cap = 256, len = 0;
    char *key = malloc(cap);
    if (!key)
        return NULL;
    key[0] = 0;
    char raw[1024], buf[1024];
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *fr = &sf->frames[i];
        if (!fr->function && fr->module && *fr->module)
            snprintf(raw, sizeof raw, "%s+0x%" PRIx64, cmt_basename(fr->module), fr->module_offset);
        else
            cmt_frame_describe(fr, raw, sizeof raw);
        cmt_escape_into(raw, buf, sizeof buf);
        size_t need = len + strlen(buf) + 2;
        if (need > cap) {
            while (cap < need)
                cap *= 2;
            char *n = realloc(key, cap);
            if (!n) {
                free(key);
                return NULL;
            }
            key = n;
        }
        len += (size_t)snprintf(key + len, cap - len, "%s%s", i ? "\n" : "", buf);
    }
    *n_lines = sf->n;
    return key;
}

static struct cmt_diff_site *site_for(struct cmt_diff *d, struct cmt_frames *frames, uint64_t stack, uint8_t api)
{
    /* Matched by what identifies a site in both runs, as check --baseline
     * matches (frames.h): the same source built in two directories names
     * its files by other paths. */
    const struct cmt_stack_frames *sf = cmt_frames_get(frames, stack);
    char *identity = sf->n ? cmt_frames_site_identity(sf, true) : strdup("(no stack recorded)");
    if (!identity)
        return NULL;
    /* Sites number in the thousands at most in a report: a scan is enough. */
    for (size_t i = 0; i < d->n_sites; i++)
        if (!strcmp(d->sites[i].identity, identity)) {
            free(identity);
            return &d->sites[i];
        }
    size_t n_lines;
    char *key = site_key(frames, stack, &n_lines);
    if (!key) {
        free(identity);
        return NULL;
    }
    if (d->n_sites == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct cmt_diff_site *n = realloc(d->sites, cap * sizeof *n);
        if (!n) {
            free(key);
            free(identity);
            return NULL;
        }
        d->sites = n;
        d->cap = cap;
    }
    struct cmt_diff_site *s = &d->sites[d->n_sites++];
    memset(s, 0, sizeof *s);
    s->key = key;
    s->identity = identity;
    s->n_lines = n_lines;
    snprintf(s->api, sizeof s->api, "%s", cmt_api_name(api));
    return s;
}

static void describe_run(struct cmt_diff_run *run, const struct cmt_report *r, const struct cmt_analysis *a, const char *trace)
{
    const struct cmt_trace_model *m = &a->model;
    snprintf(run->trace, sizeof run->trace, "%s", trace);
    size_t len = 0;
    run->program[0] = 0;
    if (m->has_process) {
        snprintf(run->exe, sizeof run->exe, "%s", cmt_model_string(m, m->exe_id));
        if (m->argc == 0)
            snprintf(run->program, sizeof run->program, "%s", cmt_model_string(m, m->exe_id));
        for (uint32_t i = 0; i < m->argc && len < sizeof run->program; i++)
            len += (size_t)snprintf(run->program + len, sizeof run->program - len, "%s%s", i ? " " : "",
                                    cmt_model_string(m, m->arg_ids[i]));
    } else {
        snprintf(run->program, sizeof run->program, "(not recorded)");
    }
    time_t start = (time_t)(a->info.start_realtime_ns / 1000000000ull);
    struct tm tm;
    snprintf(run->when, sizeof run->when, "?");
    if (gmtime_r(&start, &tm))
        strftime(run->when, sizeof run->when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    uint64_t end_ts = m->has_end ? m->end.ts : a->replay.last_ts;
    run->duration_ns = cmt_report_rel_ns(r, end_ts);
    cmt_summary_from_report(r, a, trace, &run->summary);
}

/* PyTorch's tensors: the run's figures and each tensor site's. */
static int add_tensors(struct cmt_diff *d, int which, const struct cmt_report *r)
{
    const struct cmt_tensors_report *t = r->tensors;
    struct cmt_diff_tensors *x = &d->run[which].tensors;
    if (!t || !t->on)
        return 0;
    x->on = true;
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        d->category_name[c] = t->category_name[c];
        d->category_key[c] = t->category_key[c];
    }
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct cmt_tensor_instant *p = &t->devices[i].pass->peak;
        x->peak += p->allocated;
        for (unsigned c = 0; c < CMT_CAT_COUNT; c++)
            x->cats[c] += p->cats.bytes[c];
    }
    x->kept_bytes = t->leak_bytes;
    x->kept_count = t->leak_count;
    x->alive_bytes = t->alive_bytes;
    x->alive_count = t->alive_count;
    x->steps = t->steps;
    x->rate_per_step = t->total_growth.candidate && t->total_growth.rate > 0 ? (uint64_t)(t->total_growth.rate + 0.5) : 0;
    for (size_t i = 0; r->blocks && i < r->blocks->n_devices; i++) {
        const struct cmt_blocks_view *v = &r->blocks->devices[i].peak;
        for (size_t k = 0; k < v->n_sites; k++) {
            struct cmt_diff_site *s = site_for(d, r->frames, v->sites[k].stack, CMT_API_TORCH_ALLOC);
            if (!s)
                return -1;
            s->side[which].tensor_peak += v->sites[k].bytes;
        }
    }
    for (size_t k = 0; k < t->n_alive; k++) {
        const struct cmt_tensor_site_row *a = &t->alive[k];
        if (!a->leak || a->suppression)
            continue;
        struct cmt_diff_site *s = site_for(d, r->frames, a->stack, CMT_API_TORCH_ALLOC);
        if (!s)
            return -1;
        s->side[which].tensor_kept += a->kept_bytes;
    }
    return 0;
}

int cmt_diff_add(struct cmt_diff *d, int which, const struct cmt_report *r, const struct cmt_analysis *a, const char *trace)
{
    const struct cmt_replay *rp = &a->replay;
    describe_run(&d->run[which], r, a, trace);
    if (add_tensors(d, which, r) != 0)
        return -1;
    for (size_t i = 0; i < r->n_accounts; i++) {
        const struct cmt_account_view *v = &r->accounts[i];
        if (v->account->cls != CMT_CLASS_DEVICE)
            continue;
        for (size_t k = 0; k < v->peak.n_rows; k++) {
            const struct cmt_site_row *row = &v->peak.rows[k];
            if (row->holder == CMT_HOLDER_PYTORCH)
                continue; /* its segments: counted as the tensors in them */
            struct cmt_diff_site *s = site_for(d, r->frames, row->stack, row->api);
            if (!s)
                return -1;
            s->side[which].peak += row->bytes;
        }
    }
    for (size_t k = 0; k < r->n_leaks; k++) {
        const struct cmt_site_row *row = &r->leaks[k];
        struct cmt_diff_site *s = site_for(d, r->frames, row->stack, row->api);
        if (!s)
            return -1;
        s->side[which].leak += row->bytes;
        s->side[which].leak_count += row->count;
    }
    /* set aside by a suppression: apart from the leaks, as the report has them */
    for (size_t k = 0; k < r->n_suppressed; k++) {
        const struct cmt_site_row *row = &r->suppressed[k];
        struct cmt_diff_site *s = site_for(d, r->frames, row->stack, row->api);
        if (!s)
            return -1;
        s->side[which].suppressed += row->bytes;
        s->side[which].suppressed_count += row->count;
        if (!s->suppression && row->suppression <= d->n_suppressions)
            s->suppression = row->suppression;
    }
    d->run[which].suppressed_bytes = r->suppressed_bytes;
    d->run[which].suppressed_count = r->suppressed_count;
    for (size_t k = 0; k < rp->n_active; k++) {
        uint32_t stack = rp->active_sites[k];
        const struct cmt_site_stats *st = &rp->sites[stack];
        if (!st->allocs)
            continue;
        struct cmt_diff_site *s = site_for(d, r->frames, cmt_frames_canonical(r->frames, stack), st->api);
        if (!s)
            return -1;
        s->side[which].calls += st->allocs;
        d->run[which].calls += st->allocs;
    }
    if (which == 1 && strcmp(d->run[0].exe, d->run[1].exe) != 0)
        d->different_program = true;
    return 0;
}

static uint64_t mag(int64_t v)
{
    return v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
}

/* Largest change of bytes first (peak or leak, whichever moved more), then
 * of calls, then the frames' text: the same order on every run. */
static int by_change(const void *pa, const void *pb)
{
    const struct cmt_diff_site *a = pa, *b = pb;
    uint64_t ab = mag(cmt_diff_delta(a->side[0].peak, a->side[1].peak)),
             al = mag(cmt_diff_delta(a->side[0].leak, a->side[1].leak));
    uint64_t bb = mag(cmt_diff_delta(b->side[0].peak, b->side[1].peak)),
             bl = mag(cmt_diff_delta(b->side[0].leak, b->side[1].leak));
    uint64_t at = mag(cmt_diff_delta(a->side[0].tensor_peak, a->side[1].tensor_peak)),
             ak = mag(cmt_diff_delta(a->side[0].tensor_kept, a->side[1].tensor_kept));
    uint64_t bt = mag(cmt_diff_delta(b->side[0].tensor_peak, b->side[1].tensor_peak)),
             bk = mag(cmt_diff_delta(b->side[0].tensor_kept, b->side[1].tensor_kept));
    ab = ab > at ? ab : at;
    al = al > ak ? al : ak;
    bb = bb > bt ? bb : bt;
    bl = bl > bk ? bl : bk;
    uint64_t am = ab > al ? ab : al, bm = bb > bl ? bb : bl;
    if (am != bm)
        return am > bm ? -1 : 1;
    uint64_t ac = mag(cmt_diff_delta(a->side[0].calls, a->side[1].calls)),
             bc = mag(cmt_diff_delta(b->side[0].calls, b->side[1].calls));
    if (ac != bc)
        return ac > bc ? -1 : 1;
    uint64_t as = mag(cmt_diff_delta(a->side[0].suppressed, a->side[1].suppressed)),
             bs = mag(cmt_diff_delta(b->side[0].suppressed, b->side[1].suppressed));
    if (as != bs)
        return as > bs ? -1 : 1;
    return strcmp(a->key, b->key);
}

void cmt_diff_finish(struct cmt_diff *d)
{
    if (d->n_sites)
        qsort(d->sites, d->n_sites, sizeof *d->sites, by_change);
}
