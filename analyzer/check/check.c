/* SPDX-License-Identifier: MIT */
/* The check engine: one analysis and one report model per trace, judged
 * against the limits; the renderers print what is decided here. */
#include "check.h"

#include "blocks_report.h"
#include "forensics_report.h"
#include "whatif_report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_errors.h"
#include "size_parse.h"
#include "units.h"

#define UNLIMITED UINT64_MAX

void cmt_check_options_init(struct cmt_check_options *o)
{
    memset(o, 0, sizeof *o);
    o->violation_status = 1;
    o->max_frames = 8;
    o->format = "text";
}

static const struct {
    const char *id;
    const char *description;
} rules[CMT_RULE_COUNT] = {
    [CMT_RULE_LEAK] = {"leak", "Memory still allocated at exit, over --max-leak-bytes or --max-leak-count"},
    [CMT_RULE_NEW_LEAK] = {"new-leak", "A call site leaks memory and did not leak in the baseline"},
    [CMT_RULE_LEAK_GROWTH] = {"leak-growth", "A call site leaks more bytes than it did in the baseline"},
    [CMT_RULE_PEAK] = {"peak", "The peak of device-resident memory on a device is over --max-peak"},
    [CMT_RULE_PEAK_GROWTH] = {"peak-growth",
                              "The peak of device-resident memory on a device grew more than --max-peak-growth "
                              "percent over the baseline"},
    [CMT_RULE_FAILED_ALLOCATION] = {"failed-allocation", "An allocation call failed and the program did not survive it (--failed-allocations)"},
    [CMT_RULE_MAPPING_LEAK] = {"mapping-leak",
                               "A mapping of another process's memory (CUDA IPC, an imported VMM handle) was never "
                               "closed"},
};

const char *cmt_rule_id(enum cmt_rule rule)
{
    return rule < CMT_RULE_COUNT ? rules[rule].id : "unknown";
}

const char *cmt_rule_description(enum cmt_rule rule)
{
    return rule < CMT_RULE_COUNT ? rules[rule].description : "";
}

static void add_note(struct cmt_check_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(struct cmt_check_trace *t, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **more = realloc(t->notes, (t->n_notes + 1) * sizeof *more);
    if (!more)
        return;
    t->notes = more;
    if ((more[t->n_notes] = strdup(buf)))
        t->n_notes++;
}

/* ---- set-up ------------------------------------------------------------- */

int cmt_check_init(struct cmt_check *c, const struct cmt_check_options *opt, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->opt = opt;
    cmt_suppressions_init(&c->suppressions);
    const char *root = opt->source_root;
    char cwd[PATH_MAX];
    if (!root) {
        if (!getcwd(cwd, sizeof cwd))
            cwd[0] = '\0';
        root = cwd;
    }
    if (*root && !realpath(root, c->source_root)) {
        if (opt->source_root) {
            snprintf(err, errlen, "--source-root %s: %s; give an existing directory", opt->source_root,
                     strerror(errno));
            return -1;
        }
        snprintf(c->source_root, sizeof c->source_root, "%s", root);
    }
    struct cmt_report_options *ro = &c->report_opt;
    ro->top = 5;
    ro->max_frames = opt->max_frames;
    ro->frames.symbolizer.demangle = true;
    cmt_frames_args_apply(&opt->symbols, &ro->frames);
    ro->include_cached = opt->include_cached;
    /* the result line says the process did not exit or still runs */
    ro->state_in_verdict = !opt->check_incomplete;
    if (cmt_suppressions_load_all(&c->suppressions, opt->suppression_files, opt->n_suppression_files,
                                  opt->no_default_suppressions, err, errlen) != 0)
        return -1;
    if (cmt_suppressions_attach(&c->suppressions, ro) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (opt->n_baselines) {
        c->baseline = cmt_baseline_load(c, err, errlen);
        if (!c->baseline)
            return -1;
    }
    return 0;
}

/* ---- judging ------------------------------------------------------------ */

/* One finding per call site of tensors never released (block layer): with
 * --tensors-alive-at-exit, or when the tensors could not be followed. */
static void judge_tensors_never_released(struct cmt_check_trace *t, const struct cmt_blocks_report *bl, bool over)
{
    const struct cmt_report *r = &t->report;
    for (size_t d = 0; bl && d < bl->n_devices; d++) {
        const struct cmt_blocks_device *dv = &bl->devices[d];
        for (size_t i = 0; i < dv->n_leaks; i++) {
            /* the model set aside what a suppression matched, tensor by tensor */
            const struct cmt_blocks_site *s = &dv->leaks[i];
            if (s->blocks == 0)
                continue;
            struct cmt_finding *f =
                cmt_check_add_finding(t, CMT_RULE_LEAK, over ? CMT_LEVEL_ERROR : CMT_LEVEL_WARNING);
            if (!f)
                return;
            char size[32];
            cmt_format_size(s->bytes, size, sizeof size);
            snprintf(f->message, sizeof f->message, "leaked %s in %" PRIu64 " %s never released (PyTorch's "
                     "block layer, device %d)%s",
                     size, s->blocks, s->blocks == 1 ? "tensor" : "tensors", dv->ordinal,
                     over ? "" : ", within the leak limits");
            f->site = true;
            f->stack = s->stack;
            f->bytes = s->bytes;
            f->count = s->blocks;
            f->device = dv->ordinal;
            f->api = CMT_API_TORCH_ALLOC;
            f->kind = CMT_KIND_TORCH_BLOCK;
            char *key = cmt_check_site_key(cmt_frames_get(r->frames, s->stack), CMT_KIND_TORCH_BLOCK, false);
            f->fingerprint = cmt_check_hash(key ? key : "", CMT_RULE_LEAK);
            free(key);
        }
    }
}

/* One finding per call site of tensors kept step after step (the leak rule
 * for tensors, tensors_report.h). */
static void judge_tensors_kept(struct cmt_check_trace *t, const struct cmt_tensors_report *tr, bool over)
{
    const struct cmt_report *r = &t->report;
    for (size_t i = 0; i < tr->n_alive; i++) {
        const struct cmt_tensor_site_row *s = &tr->alive[i];
        if (!s->leak || s->suppression)
            continue;
        struct cmt_finding *f = cmt_check_add_finding(t, CMT_RULE_LEAK, over ? CMT_LEVEL_ERROR : CMT_LEVEL_WARNING);
        if (!f)
            return;
        char size[32], rate[64];
        cmt_format_size(s->kept_bytes, size, sizeof size);
        uint64_t per = s->verdict.rate > 0 ? (uint64_t)(s->verdict.rate + 0.5) : 0;
        if (s->per_step)
            snprintf(rate, sizeof rate, "+%s per step over %zu steps", cmt_size_exact_str(per, (char[64]){""}, 64),
                     s->verdict.n);
        else
            snprintf(rate, sizeof rate, "+%s/s", cmt_size_str(per, (char[32]){""}, 32));
        snprintf(f->message, sizeof f->message,
                 "leaked %s in %" PRIu64 " %s kept step after step: %s, held when the work ended (PyTorch's "
                 "block layer)%s",
                 size, s->kept_count, s->kept_count == 1 ? "tensor" : "tensors", rate,
                 over ? "" : ", within the leak limits");
        f->site = true;
        f->stack = s->stack;
        f->bytes = s->kept_bytes;
        f->count = s->kept_count;
        f->api = CMT_API_TORCH_ALLOC;
        f->kind = CMT_KIND_TORCH_BLOCK;
        char *key = cmt_check_site_key(cmt_frames_get(r->frames, s->stack), CMT_KIND_TORCH_BLOCK, false);
        f->fingerprint = cmt_check_hash(key ? key : "", CMT_RULE_LEAK);
        free(key);
    }
}

static void judge_leaks(struct cmt_check *c, struct cmt_check_trace *t)
{
    const struct cmt_check_options *o = c->opt;
    const struct cmt_report *r = &t->report;
    uint64_t max_bytes, max_count;
    if (c->baseline) {
        /* The baseline decides which leaks are known; only limits given
         * explicitly still cap the total. */
        max_bytes = o->has_max_leak_bytes ? o->max_leak_bytes : UNLIMITED;
        max_count = o->has_max_leak_count ? o->max_leak_count : UNLIMITED;
    } else {
        /* Nothing may leak by default; one limit given lifts the other's
         * default, so --max-leak-bytes 1MiB alone allows any number of
         * allocations within 1 MiB. */
        max_bytes = o->has_max_leak_bytes ? o->max_leak_bytes : o->has_max_leak_count ? UNLIMITED : 0;
        max_count = o->has_max_leak_count ? o->max_leak_count : o->has_max_leak_bytes ? UNLIMITED : 0;
    }
    /* PyTorch's tensors, with the cache on (docs/check.md, "Tensors"): those
     * kept step after step are leaks, or with --tensors-alive-at-exit every
     * one never released (also when they could not be followed). */
    const struct cmt_blocks_report *bl = r->blocks && r->blocks->on ? r->blocks : NULL;
    const struct cmt_tensors_report *tr = bl && r->tensors && r->tensors->on ? r->tensors : NULL;
    bool every_tensor = bl && (o->tensors_alive_at_exit || !tr);
    uint64_t tensor_bytes = 0, tensor_count = 0;
    if (every_tensor) {
        tensor_bytes = bl->leak_bytes;
        tensor_count = bl->leak_blocks;
        t->tensor_suppressed_bytes = bl->suppressed_bytes;
        t->tensor_suppressed_count = bl->suppressed_blocks;
        cmt_check_credit(c, r, true);
    } else if (tr) {
        tensor_bytes = tr->leak_bytes;
        tensor_count = tr->leak_count;
        t->tensor_suppressed_bytes = tr->suppressed_bytes;
        t->tensor_suppressed_count = tr->suppressed_count;
        for (size_t i = 0; i < tr->n_alive; i++) {
            const struct cmt_tensor_site_row *s = &tr->alive[i];
            if (s->suppression && s->growing && s->suppression <= c->suppressions.n) {
                c->suppressions.items[s->suppression - 1].allocations += s->kept_count;
                c->suppressions.items[s->suppression - 1].bytes += s->kept_bytes;
            }
        }
    }
    t->tensor_leak_bytes = tensor_bytes;
    t->tensor_leak_count = tensor_count;
    t->tensor_alive_bytes = tr ? tr->alive_bytes : bl ? bl->leak_bytes + bl->suppressed_bytes : 0;
    t->tensor_alive_count = tr ? tr->alive_count : bl ? bl->leak_blocks + bl->suppressed_blocks : 0;
    uint64_t n = 0, bytes = 0;
    for (size_t i = 0; tr && !every_tensor && i < tr->n_alive; i++) {
        const struct cmt_tensor_site_row *s = &tr->alive[i];
        if (!s->leak && !(s->suppression && s->growing)) {
            n += s->live_count;
            bytes += s->live_bytes;
        }
    }
    if (n) {
        char size[32];
        cmt_format_size(bytes, size, sizeof size);
        add_note(t, "%s in %" PRIu64 " %s alive at exit were not kept step after step (a model, its optimizer "
                    "state, workspaces: what the program still held at exit): not leaks "
                    "(--tensors-alive-at-exit checks them)",
                 size, n, n == 1 ? "tensor" : "tensors");
    }
    bool over = r->leak_bytes + tensor_bytes > max_bytes || r->leak_count + tensor_count > max_count;
    uint64_t virtual_rows = 0;
    for (size_t i = 0; i < r->n_leaks; i++)
        if (!cmt_kind_holds_memory(r->leaks[i].kind))
            virtual_rows += r->leaks[i].count;
    for (unsigned h = 1; h < CMT_HOLDER_COUNT; h++) {
        if (!r->held_count[h])
            continue;
        if (bl && h == CMT_HOLDER_PYTORCH) {
            char held[32];
            cmt_format_size(r->held_bytes[h], held, sizeof held);
            add_note(t, "%s held %s in %" PRIu64 " %s at exit: its cache, not checked as leaks; the tensors inside "
                        "it are (the block layer)",
                     cmt_holder_name(h), held, r->held_count[h], r->held_count[h] == 1 ? "segment" : "segments");
            continue;
        }
        char size[32];
        cmt_format_size(r->held_bytes[h], size, sizeof size);
        add_note(t, "%s held %s in %" PRIu64 " %s at exit: its cache, not checked as leaks (--include-cached "
                    "checks them; a tensor kept alive by mistake inside a cached segment cannot be told from "
                    "free cache: to see each one, %s)",
                 cmt_holder_name(h), size, r->held_count[h], r->held_count[h] == 1 ? "segment" : "segments",
                 cmt_holder_cache_advice(h));
    }
    if (virtual_rows)
        add_note(t, "%" PRIu64 " VMM address reservations or mappings were still in place at exit; they hold no "
                    "memory and are not checked",
                 virtual_rows);
    if (c->baseline) {
        const struct cmt_trace_model *m = &t->analysis.model;
        const char *exe = m->has_process ? cmt_model_string(m, m->exe_id) : "";
        /* Each baseline on its own: any of them may be another program's. */
        size_t n_base = cmt_baseline_count(c->baseline);
        for (size_t i = 0; i < n_base; i++) {
            const char *base_exe = cmt_baseline_exe(c->baseline, i);
            if (!base_exe[0] || !exe[0] || strcmp(base_exe, exe) == 0)
                continue;
            if (n_base == 1)
                add_note(t, "the baseline is a run of %s, this trace one of %s: call sites are matched by their "
                            "frames and may not correspond",
                         base_exe, exe);
            else
                add_note(t, "the baseline %s is a run of %s, this trace one of %s: call sites are matched by their "
                            "frames and may not correspond",
                         o->baselines[i], base_exe, exe);
        }
        if (cmt_baseline_compare_leaks(c, t) != 0)
            return;
        if (over) {
            struct cmt_finding *f = cmt_check_add_finding(t, CMT_RULE_LEAK, CMT_LEVEL_ERROR);
            if (!f)
                return;
            char size[32], lim[64];
            cmt_format_size(r->leak_bytes, size, sizeof size);
            if (r->leak_bytes > max_bytes) {
                cmt_format_size(max_bytes, lim, sizeof lim);
                snprintf(f->message, sizeof f->message, "leaked %s in %" PRIu64 " %s in all, over --max-leak-bytes %s",
                         size, r->leak_count, r->leak_count == 1 ? "allocation" : "allocations", lim);
            } else {
                snprintf(f->message, sizeof f->message,
                         "leaked %s in %" PRIu64 " %s in all, over --max-leak-count %" PRIu64, size, r->leak_count,
                         r->leak_count == 1 ? "allocation" : "allocations", max_count);
            }
            f->bytes = r->leak_bytes;
            f->count = r->leak_count;
            f->has_limit = true;
            f->limit = r->leak_bytes > max_bytes ? max_bytes : max_count;
            f->fingerprint = cmt_check_hash("leak-total", 0);
        }
        return;
    }
    for (size_t i = 0; i < r->n_leaks; i++) {
        const struct cmt_site_row *row = &r->leaks[i];
        if (!cmt_kind_holds_memory(row->kind))
            continue;
        struct cmt_finding *f =
            cmt_check_add_finding(t, CMT_RULE_LEAK, over ? CMT_LEVEL_ERROR : CMT_LEVEL_WARNING);
        if (!f)
            return;
        cmt_check_describe_leak(f->message, sizeof f->message, row->bytes, row->count, row->api);
        if (!over) {
            size_t used = strlen(f->message);
            snprintf(f->message + used, sizeof f->message - used, ", within the leak limits");
        }
        f->site = true;
        f->stack = row->stack;
        f->bytes = row->bytes;
        f->count = row->count;
        f->api = row->api;
        f->kind = row->kind;
        char *key = cmt_check_site_key(cmt_frames_get(r->frames, row->stack), row->kind, false);
        f->fingerprint = cmt_check_hash(key ? key : "", CMT_RULE_LEAK);
        free(key);
    }
    if (every_tensor)
        judge_tensors_never_released(t, bl, over);
    else if (tr)
        judge_tensors_kept(t, tr, over);
}

/* Mappings of another process's memory never closed: a leak of a mapping,
 * one finding per call site that opened them, unless a suppression matches
 * that site (docs/check.md). Not this process's memory: the leak limits do
 * not apply. */
static void judge_mapping_leaks(struct cmt_check *c, struct cmt_check_trace *t)
{
    const struct cmt_report *r = &t->report;
    for (size_t i = 0; i < r->ipc.n_sites; i++) {
        const struct cmt_ipc_site *s = &r->ipc.sites[i];
        if (!s->open_count)
            continue;
        if (c->suppressions.n && s->stack) {
            const struct cmt_stack_frames *sf = cmt_frames_get_unfolded(r->frames, s->stack);
            long idx = cmt_suppressions_match(&c->suppressions, sf->frames, sf->n);
            if (idx >= 0) {
                c->suppressions.items[idx].allocations += s->open_count;
                c->suppressions.items[idx].bytes += s->open_bytes;
                t->mapping_suppressed_bytes += s->open_bytes;
                t->mapping_suppressed_count += s->open_count;
                continue;
            }
        }
        struct cmt_finding *f = cmt_check_add_finding(t, CMT_RULE_MAPPING_LEAK, CMT_LEVEL_ERROR);
        if (!f)
            return;
        char size[32];
        cmt_format_size(s->open_bytes, size, sizeof size);
        snprintf(f->message, sizeof f->message,
                 "never closed %s in %" PRIu64 " %s of another process's memory (%s): a leak of a mapping", size,
                 s->open_count, s->open_count == 1 ? "mapping" : "mappings",
                 s->api == CMT_API_CU_MEM_MAP ? "cuMemMap of an imported handle" : cmt_api_name(s->api));
        f->site = true;
        f->stack = s->stack;
        f->bytes = s->open_bytes;
        f->count = s->open_count;
        f->api = s->api;
        f->kind = CMT_KIND_IPC_MAPPING;
        char *key = cmt_check_site_key(cmt_frames_get(r->frames, s->stack), CMT_KIND_IPC_MAPPING, false);
        f->fingerprint = cmt_check_hash(key ? key : "", CMT_RULE_MAPPING_LEAK);
        free(key);
    }
    if (t->mapping_suppressed_count) {
        char size[32];
        cmt_format_size(t->mapping_suppressed_bytes, size, sizeof size);
        add_note(t, "%s in %" PRIu64 " %s of another process's memory never closed, suppressed", size,
                 t->mapping_suppressed_count, t->mapping_suppressed_count == 1 ? "mapping" : "mappings");
    }
}

static uint64_t peak_limit(const struct cmt_check_options *o, int32_t device, bool *has)
{
    uint64_t all = 0;
    *has = false;
    bool has_all = false;
    for (size_t i = 0; i < o->n_peak_limits; i++) {
        if (o->peak_limits[i].device == device) {
            *has = true;
            return o->peak_limits[i].bytes;
        }
        if (o->peak_limits[i].device == -1) {
            has_all = true;
            all = o->peak_limits[i].bytes;
        }
    }
    *has = has_all;
    return all;
}

/* Whether peak grew more than percent_centi / 100 percent over base. */
static bool grew_too_much(uint64_t peak, uint64_t base, uint64_t percent_centi)
{
    return (unsigned __int128)peak * 10000u > (unsigned __int128)base * (10000u + percent_centi);
}

static void judge_peaks(struct cmt_check *c, struct cmt_check_trace *t)
{
    const struct cmt_check_options *o = c->opt;
    const struct cmt_report *r = &t->report;
    char b1[64], b2[64], b3[32];
    for (size_t i = 0; i < r->n_accounts; i++) {
        const struct cmt_account_view *v = &r->accounts[i];
        const struct cmt_account *acc = v->account;
        if (acc->cls != CMT_CLASS_DEVICE || acc->peak == 0)
            continue;
        bool has;
        uint64_t limit = peak_limit(o, acc->device, &has);
        char site[160] = "";
        if (v->n_top) {
            cmt_format_size(v->top[0].bytes, b3, sizeof b3);
            snprintf(site, sizeof site, "; the largest call site live then: %s in %" PRIu64 " %s (%s)", b3,
                     v->top[0].count, v->top[0].count == 1 ? "allocation" : "allocations",
                     cmt_api_name(v->top[0].api));
        }
        if (has && acc->peak > limit) {
            struct cmt_finding *f = cmt_check_add_finding(t, CMT_RULE_PEAK, CMT_LEVEL_ERROR);
            if (!f)
                return;
            cmt_size_exact_str(limit, b2, sizeof b2);
            snprintf(f->message, sizeof f->message, "device %d peaked at %s, over --max-peak %s%s", acc->device,
                     cmt_size_exact_str(acc->peak, b1, sizeof b1), b2, site);
            f->site = v->n_top > 0;
            f->stack = v->n_top ? v->top[0].stack : 0;
            f->bytes = acc->peak;
            f->count = acc->peak_count;
            f->device = acc->device;
            f->has_limit = true;
            f->limit = limit;
            f->peak_view = v;
            f->fingerprint = cmt_check_hash("peak", (uint64_t)acc->device);
        }
        if (c->baseline && o->has_max_peak_growth) {
            uint64_t base = 0;
            bool known = cmt_baseline_device_peak(c->baseline, acc->device, &base);
            uint64_t centi = (uint64_t)(o->max_peak_growth * 100.0 + 0.5);
            if (!grew_too_much(acc->peak, base, centi))
                continue;
            struct cmt_finding *f = cmt_check_add_finding(t, CMT_RULE_PEAK_GROWTH, CMT_LEVEL_ERROR);
            if (!f)
                return;
            if (known && base) {
                cmt_format_size(base, b2, sizeof b2);
                double pct = ((double)acc->peak - (double)base) * 100.0 / (double)base;
                snprintf(f->message, sizeof f->message,
                         "device %d peaked at %s, %.1f%% above the baseline's %s (--max-peak-growth %g%%)%s",
                         acc->device, cmt_size_exact_str(acc->peak, b1, sizeof b1), pct, b2, o->max_peak_growth, site);
            } else {
                snprintf(f->message, sizeof f->message,
                         "device %d peaked at %s; the baseline used no memory on device %d (--max-peak-growth)%s",
                         acc->device, cmt_size_exact_str(acc->peak, b1, sizeof b1), acc->device, site);
            }
            f->site = v->n_top > 0;
            f->stack = v->n_top ? v->top[0].stack : 0;
            f->bytes = acc->peak;
            f->count = acc->peak_count;
            f->device = acc->device;
            f->has_baseline = true;
            f->baseline_bytes = base;
            f->peak_view = v;
            f->fingerprint = cmt_check_hash("peak-growth", (uint64_t)acc->device);
        }
    }
    /* A budget for a device the trace never allocated on applies to nothing:
     * say so rather than pass in silence (a device number off by one). */
    for (size_t k = 0; k < o->n_peak_limits; k++) {
        const struct cmt_peak_limit *l = &o->peak_limits[k];
        if (l->device < 0)
            continue;
        bool seen = false;
        for (size_t i = 0; i < r->n_accounts && !seen; i++)
            seen = r->accounts[i].account->cls == CMT_CLASS_DEVICE && r->accounts[i].account->device == l->device;
        if (!seen)
            add_note(t, "--max-peak %d=%s checked nothing: the trace allocated no device memory on device %d",
                     l->device, cmt_size_exact_str(l->bytes, b2, sizeof b2), l->device);
    }
}

/* Failed allocation calls that are failures of their own (a caching
 * allocator's probes and retries left out). */
static uint64_t failures_of(const struct cmt_check_trace *t)
{
    const struct cmt_report *r = &t->report;
    uint64_t failed = t->analysis.replay.failed_allocs, other = r->failed_calls_probing + r->failed_calls_retrying;
    return failed > other ? failed - other : 0;
}

/* The report's verdict of a failure group's first failure (its forensics'
 * case; a retry's is the failure it repeats), or NULL. */
static const struct cmt_oom_view *verdict_of(const struct cmt_report *r, const struct cmt_failure_group *g)
{
    const struct cmt_oom_view *v = r->forensics ? cmt_forensics_report_failure(r->forensics, g->first_index) : NULL;
    if (v && v->retry_of != SIZE_MAX)
        v = &r->forensics->oom[v->retry_of];
    return v;
}

/* "the failure at 7.0 ms (cudaMalloc of 1.0 GiB on device 0): fragmentation
 * (rule R11), as `cumemtrace report` says; replayed ...; what to try: ..." */
static void note_verdict(struct cmt_check_trace *t, const struct cmt_failure_group *g, const struct cmt_oom_view *v)
{
    char size[32], when[32], where[32] = "", found[2048] = "", fix[2048] = "";
    if (g->device >= 0)
        snprintf(where, sizeof where, " on device %d", g->device);
    cmt_format_size(g->min_size, size, sizeof size);
    cmt_format_duration(cmt_report_rel_ns(&t->report, v->c->ts), when, sizeof when);
    bool capacity = v->verdict.rule == CMT_VRULE_CACHE_FULL;
    bool replayed =
        v->replay.on && (v->verdict.rule == CMT_VRULE_CACHE_FRAGMENTED || capacity || v->replay.uncached);
    if (replayed) {
        cmt_oom_replay_found(&v->replay, found, sizeof found);
        if (!cmt_oom_replay_remedy(&v->replay, capacity, fix, sizeof fix))
            fix[0] = '\0';
    }
    char tail[4200];
    snprintf(tail, sizeof tail, "%s%s%s%s", found[0] ? "; " : "", found,
             fix[0] ? "; what to try: " : found[0] ? "; the report says what to try" : " (which says what to try)",
             fix);
    add_note(t, "the failure at %s (%s of %s%s): %s (rule %s), the verdict of the report's out-of-memory forensics%s",
             when, cmt_api_name(g->api), size, where, v->verdict_name, v->rule_id, tail);
}

static void judge_failures(struct cmt_check *c, struct cmt_check_trace *t)
{
    const struct cmt_report *r = &t->report;
    uint64_t probing = r->failed_calls_probing, retrying = r->failed_calls_retrying;
    uint64_t failed = t->analysis.replay.failed_allocs - probing - retrying;
    if (probing)
        add_note(t, "%" PRIu64 " allocation %s of a caching allocator failed by design and %s asked again at once "
                    "and served (allocator probes): not failures",
                 probing, probing == 1 ? "call" : "calls", probing == 1 ? "was" : "were");
    if (failed == 0)
        return;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        const struct cmt_oom_view *v = g->probes == g->count ? NULL : verdict_of(r, g);
        if (v && !v->probe)
            note_verdict(t, g, v);
    }
    enum cmt_failed_allocations which = c->opt->failed_allocations;
    /* The failures checked: every one, or those the program did not
     * survive (report.h, CMT_FAILURE_FATAL); a group counts by its own. */
    uint64_t checked = 0;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        if (g->probes == g->count)
            continue;
        if (which == CMT_FAILED_ALL || (which == CMT_FAILED_FATAL && g->fatal))
            checked += g->count - g->probes - g->retries;
    }
    if (which == CMT_FAILED_NONE) {
        add_note(t, "%" PRIu64 " allocation %s failed; not checked (--failed-allocations none)", failed,
                 failed == 1 ? "call" : "calls");
        return;
    }
    if (checked < failed) {
        uint64_t rest = failed - checked;
        bool went_on = false;
        for (size_t i = 0; i < r->n_failures && !went_on; i++)
            went_on = !r->failures[i].fatal && r->failures[i].first_ts < r->went_on_until;
        const char *calls = rest == 1 ? "call" : "calls";
        if (went_on)
            add_note(t, "%" PRIu64 " allocation %s failed and the program went on (it allocated again after them): "
                        "not checked (--failed-allocations all fails on them)",
                     rest, calls);
        else if (r->exit_status == 0)
            add_note(t, "%" PRIu64 " allocation %s failed and the program went on (it exited with status 0): not "
                        "checked (--failed-allocations all fails on them)",
                     rest, calls);
        else
            add_note(t, "%" PRIu64 " allocation %s failed, the last thing the program allocated; the trace does not "
                        "say how the process exited (recorded by an older shim): not checked "
                        "(--failed-allocations all fails on them)",
                     rest, calls);
    }
    for (size_t i = 0; i < r->n_failures && checked; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        if (g->probes == g->count || (which == CMT_FAILED_FATAL && !g->fatal))
            continue;
        struct cmt_finding *f = cmt_check_add_finding(t, CMT_RULE_FAILED_ALLOCATION, CMT_LEVEL_ERROR);
        if (!f)
            return;
        char s1[32], s2[32], sizes[80], where[32] = "";
        cmt_format_size(g->min_size, s1, sizeof s1);
        cmt_format_size(g->max_size, s2, sizeof s2);
        if (g->min_size == g->max_size)
            snprintf(sizes, sizeof sizes, "%s", s1);
        else
            snprintf(sizes, sizeof sizes, "%s to %s", s1, s2);
        if (g->device >= 0)
            snprintf(where, sizeof where, " on device %d", g->device);
        char times[40] = "", fate[96] = "";
        uint64_t own = g->count - g->retries;
        if (own > 1)
            snprintf(times, sizeof times, ", %" PRIu64 " times", own);
        const struct cmt_oom_view *v = verdict_of(r, g);
        char verdict[64] = "";
        if (v && !v->probe)
            snprintf(verdict, sizeof verdict, ": %s (rule %s)", v->verdict_name, v->rule_id);
        if (g->fatal && r->exit_status > 0)
            snprintf(fate, sizeof fate, "; the program allocated nothing after it and exited with status %d",
                     r->exit_status);
        else if (g->fatal)
            snprintf(fate, sizeof fate, "; the program allocated nothing after it and did not exit normally");
        snprintf(f->message, sizeof f->message, "%s of %s failed with %s (%d)%s%s%s%s", cmt_api_name(g->api), sizes,
                 cmt_cuda_error_name(g->result, cmt_api_is_driver(g->api)), g->result, where, times, verdict, fate);
        f->site = true;
        f->stack = g->stack;
        f->bytes = g->max_size;
        f->count = own;
        f->device = g->device;
        f->api = g->api;
        char *key = cmt_check_site_key(cmt_frames_get(r->frames, g->stack), 0, false);
        f->fingerprint = cmt_check_hash(key ? key : "", CMT_RULE_FAILED_ALLOCATION);
        free(key);
    }
    if (failed > CMT_MAX_FAILURES_KEPT)
        add_note(t, "%" PRIu64 " allocation calls failed; the first %d are listed", failed, CMT_MAX_FAILURES_KEPT);
}

/* Errors first, each group in the order found (largest first). */
static void order_findings(struct cmt_check_trace *t)
{
    if (t->n_findings < 2)
        return;
    struct cmt_finding *sorted = malloc(t->n_findings * sizeof *sorted);
    if (!sorted)
        return;
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n_findings; i++)
            if ((t->findings[i].level == CMT_LEVEL_ERROR) == (pass == 0))
                sorted[k++] = t->findings[i];
    memcpy(t->findings, sorted, k * sizeof *sorted);
    free(sorted);
}

/* The program and its arguments, argv[0] by its base name. */
static void trace_name(struct cmt_check *c, struct cmt_check_trace *t)
{
    const struct cmt_trace_model *m = &t->analysis.model;
    char *p = t->name;
    size_t left = sizeof t->name - 16; /* room for " (NN)" */
    p[0] = '\0';
    if (t->opened && m->has_process && m->argc > 0) {
        for (uint32_t i = 0; i < m->argc && left > 1; i++) {
            const char *arg = cmt_model_string(m, m->arg_ids[i]);
            int n = snprintf(p, left, "%s%s", i ? " " : "", i == 0 ? cmt_basename(arg) : arg);
            if (n < 0 || (size_t)n >= left)
                break;
            p += n;
            left -= (size_t)n;
        }
    } else if (t->opened && m->has_process) {
        snprintf(p, left, "%s", cmt_basename(cmt_model_string(m, m->exe_id)));
    }
    if (!t->name[0])
        snprintf(t->name, sizeof t->name, "%s", cmt_basename(t->path));
    /* Unique among the traces, so each JUnit test case has its own name. */
    size_t base_len = strlen(t->name);
    for (unsigned k = 2;; k++) {
        bool taken = false;
        for (size_t i = 0; i + 1 < c->n_traces && !taken; i++)
            taken = strcmp(c->traces[i]->name, t->name) == 0;
        if (!taken)
            break;
        snprintf(t->name + base_len, sizeof t->name - base_len, " (%u)", k);
    }
}

static void judge(struct cmt_check *c, struct cmt_check_trace *t)
{
    const struct cmt_analysis *a = &t->analysis;
    uint32_t flags = a->info.flags;
    bool truncated = cmt_reader_truncated(a->reader);
    bool damaged = a->damaged || truncated;
    bool clean_exit = flags & CMT_FILE_FLAG_CLEAN_EXIT;
    bool stopped = flags & (CMT_FILE_FLAG_SIZE_LIMIT | CMT_FILE_FLAG_WRITE_ERROR);
    /* A call the profiler could not record (a signal handler's) may be a
     * leak the trace does not show, or the release of one it does: leaks
     * cannot be judged either way, exactly as when recording stopped. */
    uint64_t unrecorded = a->info.unrecorded_nested;
    t->complete = !damaged && clean_exit && !stopped && !unrecorded;
    t->leaks_checked = !damaged && (t->complete || c->opt->check_incomplete);
    if (damaged && a->damaged)
        snprintf(t->error, sizeof t->error,
                 "the trace is damaged (%s): it could not be checked; leaks were not checked, peaks and failed "
                 "allocations only up to the damage",
                 a->message);
    else if (damaged)
        snprintf(t->error, sizeof t->error,
                 "the trace is truncated (the file ends at offset %llu): it could not be checked; leaks were not "
                 "checked, peaks and failed allocations only up to the cut",
                 (unsigned long long)a->info.file_size);
    else if (!t->leaks_checked && stopped)
        snprintf(t->error, sizeof t->error,
                 "recording stopped early (%s): leaks were not checked (--check-incomplete checks what was live "
                 "when recording stopped)",
                 flags & CMT_FILE_FLAG_SIZE_LIMIT ? "the trace reached CUMEMTRACE_MAX_SIZE"
                                                  : "the trace file could not grow");
    else if (!t->leaks_checked && unrecorded)
        snprintf(t->error, sizeof t->error,
                 "%llu allocation or release calls were not recorded (made inside another CUDA call of the same "
                 "thread, such as in a signal handler): leaks were not checked (--check-incomplete checks what "
                 "was recorded)",
                 (unsigned long long)unrecorded);
    else if (!t->leaks_checked && cmt_analysis_in_progress(a))
        snprintf(t->error, sizeof t->error,
                 "the process is still running: its trace is still being written, so it is incomplete; read up to "
                 "what it had committed, leaks were not checked (--check-incomplete checks what was live then)");
    else if (!t->leaks_checked)
        snprintf(t->error, sizeof t->error,
                 "the process did not exit normally (killed, crashed, or ended with _exit): leaks were not checked "
                 "(--check-incomplete checks what was live when recording ended)");
    if (t->leaks_checked) {
        judge_leaks(c, t);
        judge_mapping_leaks(c, t);
    }
    judge_peaks(c, t);
    judge_failures(c, t);
    order_findings(t);
    if (damaged)
        t->status = CMT_TRACE_ERROR; /* could not check: whatever was found before the damage is listed */
    else if (t->n_errors)
        t->status = CMT_TRACE_FAIL;
    else if (!t->leaks_checked)
        t->status = CMT_TRACE_ERROR;
    else
        t->status = CMT_TRACE_PASS;
}

/* A what-if engine that followed nothing, for a trace without tensor
 * requests (cmt_check_add_trace); NULL when out of memory. */
static struct cmt_whatif *attach_unfed_whatif(const struct cmt_ta_settings *cand, size_t n)
{
    struct cmt_whatif *w = malloc(sizeof *w);
    if (w && cmt_whatif_init(w, cand, n, 0) != 0) {
        free(w);
        w = NULL;
    }
    return w;
}

/* The report t is judged on: with the forensics' sections and what-if
 * (failures), or without, as for a trace without failures (the forensics
 * judge failures only). */
static int build_judged(struct cmt_check *c, struct cmt_check_trace *t, bool failures)
{
    if (failures)
        return cmt_report_build(&t->report, &t->analysis, &c->report_opt);
    struct cmt_forensics *forensics = t->analysis.forensics;
    t->analysis.forensics = NULL;
    int rc = cmt_check_build_report(c, &t->analysis, &t->report, false);
    t->analysis.forensics = forensics;
    return rc;
}

int cmt_check_add_trace(struct cmt_check *c, const char *path)
{
    if (c->n_traces == c->cap_traces) {
        size_t cap = c->cap_traces ? c->cap_traces * 2 : 4;
        struct cmt_check_trace **more = realloc(c->traces, cap * sizeof *more);
        if (!more)
            return -1;
        c->traces = more;
        c->cap_traces = cap;
    }
    struct cmt_check_trace *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    c->traces[c->n_traces++] = t;
    t->path = strdup(path);
    if (!t->path)
        return -1;
    /* One reading for what every trace needs and what a failure needs:
     * the phases (the steps the program marked decide which tensors were
     * kept step after step) and the forensics (each failure's verdict and
     * advice, as `report` gives them). Only PyTorch's tensor requests, when
     * a trace with a failure has them, make a second reading: the replay of
     * the usual allocator settings (what-if) is too dear to follow for
     * every trace of a test suite on the chance that one fails. */
    struct cmt_analysis_options aopt = {.phases = true, .forensics = true};
    if (cmt_analysis_run_with(&t->analysis, t->path, 0, &aopt) != 0) {
        snprintf(t->error, sizeof t->error, "%s", t->analysis.message);
        cmt_analysis_free(&t->analysis);
        t->status = CMT_TRACE_ERROR;
        c->n_error++;
        if (t->analysis.open_error == -EBADMSG || t->analysis.over_budget)
            c->n_damaged++; /* a trace whose header is damaged or cut, or refused: status 2 whatever */
        trace_name(c, t);
        return 0;
    }
    t->opened = true; /* from here on the analysis and the report are freed with the check */
    struct cmt_analysis *an = &t->analysis;
    struct cmt_ta_settings cand[8];
    size_t n = cmt_whatif_candidates(cand, sizeof cand / sizeof cand[0]);
    /* A trace with a failed allocation and no tensor request (no BLOCK
     * record): the what-if engine would have followed the replay and
     * replayed nothing (its source stays none, whatif_observer.c), and
     * what-if of PyTorch without its cache reads what it needs itself
     * (whatif_uncached.c): an engine unfed serves the report as one that
     * followed would, and the report is built once, for its failures. */
    bool unfed = an->replay.failed_allocs && an->blocks && an->blocks->events == 0;
    if (unfed && !(an->whatif = attach_unfed_whatif(cand, n)))
        return -1;
    if (build_judged(c, t, unfed) != 0)
        return -1;
    if (failures_of(t) && !cmt_analysis_check_budget(an)) {
        if (!unfed) {
            /* Read again with the replay of the usual allocator settings,
             * so each failure has what the replay found. */
            aopt = (struct cmt_analysis_options){
                .phases = true, .forensics = true, .whatif = true, .whatif_settings = cand, .n_whatif_settings = n};
            cmt_report_free(&t->report);
            memset(&t->report, 0, sizeof t->report);
            cmt_analysis_free(an);
            if (cmt_analysis_run_with(an, t->path, 0, &aopt) != 0 ||
                cmt_report_build(&t->report, an, &c->report_opt) != 0)
                return -1;
        }
    } else if (unfed) {
        /* its failures were an allocator's probes and retries: judged as
         * a trace without failures */
        cmt_report_free(&t->report);
        memset(&t->report, 0, sizeof t->report);
        cmt_whatif_free(an->whatif);
        free(an->whatif);
        an->whatif = NULL;
        if (build_judged(c, t, false) != 0)
            return -1;
    }
    cmt_check_credit(c, &t->report, false);
    if (cmt_analysis_check_budget(&t->analysis)) {
        /* Refused as a trace that could not be read, whatever it holds. */
        snprintf(t->error, sizeof t->error, "%s", t->analysis.message);
        t->status = CMT_TRACE_ERROR;
        c->n_error++;
        c->n_damaged++;
        trace_name(c, t);
        return 0;
    }
    trace_name(c, t);
    judge(c, t);
    if (t->analysis.damaged || cmt_reader_truncated(t->analysis.reader))
        c->n_damaged++;
    if (t->status == CMT_TRACE_FAIL)
        c->n_fail++;
    else if (t->status == CMT_TRACE_ERROR)
        c->n_error++;
    else
        c->n_pass++;
    return 0;
}

int cmt_check_add_unwritten(struct cmt_check *c, const char *path, long pid, const char *reason)
{
    if (c->n_traces == c->cap_traces) {
        size_t cap = c->cap_traces ? c->cap_traces * 2 : 4;
        struct cmt_check_trace **more = realloc(c->traces, cap * sizeof *more);
        if (!more)
            return -1;
        c->traces = more;
        c->cap_traces = cap;
    }
    struct cmt_check_trace *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    c->traces[c->n_traces++] = t;
    t->path = strdup(path);
    if (!t->path)
        return -1;
    snprintf(t->error, sizeof t->error,
             "the profiler could not create this trace for process %ld (%s): that process was not checked; give -o "
             "a writable directory with free space and a name not taken",
             pid, reason);
    t->status = CMT_TRACE_ERROR;
    c->n_error++;
    c->n_unwritten++;
    trace_name(c, t);
    return 0;
}

int cmt_check_note_stop(struct cmt_check *c, const char *path, const char *reason)
{
    for (size_t i = 0; i < c->n_traces; i++) {
        struct cmt_check_trace *t = c->traces[i];
        if (strcmp(t->path, path) != 0)
            continue;
        add_note(t, "the profiler said why the trace file could not grow: %s", reason);
        return 0;
    }
    return 0;
}

int cmt_check_status(const struct cmt_check *c)
{
    /* A damaged or truncated trace could not be checked, whatever the
     * others say: a violation found in it may be an artefact of the damage.
     * Nor could a process whose trace was never written. */
    if (c->n_damaged || c->n_unwritten)
        return 2;
    if (c->n_fail)
        return c->opt->violation_status;
    if (c->n_error)
        return 2;
    return 0;
}

void cmt_check_free(struct cmt_check *c)
{
    for (size_t i = 0; i < c->n_traces; i++) {
        struct cmt_check_trace *t = c->traces[i];
        if (t->opened) {
            cmt_report_free(&t->report);
            cmt_analysis_free(&t->analysis);
        }
        free(t->findings);
        for (size_t k = 0; k < t->n_notes; k++)
            free(t->notes[k]);
        free(t->notes);
        free(t->path);
        free(t);
    }
    free(c->traces);
    cmt_baseline_free(c->baseline);
    cmt_suppressions_free(&c->suppressions);
    memset(c, 0, sizeof *c);
}
