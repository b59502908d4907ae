/* SPDX-License-Identifier: MIT */
/* The tensors of the report model (tensors_report.h). */
#include "tensors_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks_report.h"
#include "size_parse.h"
#include "units.h"

/* A raw stack, under its call site: its canonical stack and the origin of
 * its tensors (one site made by two origins, such as a Python line whose
 * operation also took cuBLAS's workspace, is two rows). */
struct ref {
    uint64_t canon;
    uint32_t raw;
    uint8_t origin;
    long suppression; /* -1: none */
};

static int ref_cmp(const void *pa, const void *pb)
{
    const struct ref *a = pa, *b = pb;
    if (a->canon != b->canon)
        return a->canon < b->canon ? -1 : 1;
    if (a->origin != b->origin)
        return a->origin < b->origin ? -1 : 1;
    return a->raw < b->raw ? -1 : a->raw > b->raw;
}

static int growth_cmp(const void *pa, const void *pb)
{
    const struct cmt_tensor_site_row *a = pa, *b = pb;
    if (a->verdict.rate != b->verdict.rate)
        return a->verdict.rate < b->verdict.rate ? 1 : -1;
    if (a->live_bytes != b->live_bytes)
        return a->live_bytes < b->live_bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* Leaks first, then the rest, each largest first. */
static int alive_cmp(const void *pa, const void *pb)
{
    const struct cmt_tensor_site_row *a = pa, *b = pb;
    if (a->leak != b->leak)
        return a->leak ? -1 : 1;
    if (a->leak && a->kept_bytes != b->kept_bytes)
        return a->kept_bytes < b->kept_bytes ? 1 : -1;
    if (a->live_bytes != b->live_bytes)
        return a->live_bytes < b->live_bytes ? 1 : -1;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return a->suppression < b->suppression ? -1 : a->suppression > b->suppression;
}

/* The growth test over a call site's raw stacks refs[0, n): over the step
 * ends when there were enough of them, else over the time intervals. */
static void judge(const struct cmt_tensor_pass *p, const struct ref *refs, size_t n, uint64_t allocs,
                  struct cmt_tensor_site_row *row)
{
    uint64_t v[CMT_TENSOR_INTERVALS + 1], t[CMT_TENSOR_INTERVALS + 1];
    size_t k = 0;
    if (p->n_samples >= CMT_GROWTH_MIN_SAMPLES) {
        for (size_t i = 0; i < p->n_samples; i++) {
            uint64_t sum = 0;
            for (size_t m = 0; m < n; m++) {
                const uint64_t *s = p->sites[refs[m].raw].step_samples;
                sum += s ? s[i] : 0;
            }
            v[k] = sum;
            t[k++] = p->sample_step[i] * 1000000000ull; /* growth.c's rate per second is then per step */
        }
        row->per_step = true;
    } else if (p->n_intervals) {
        uint32_t first = UINT32_MAX;
        for (size_t m = 0; m < n; m++)
            if (p->sites[refs[m].raw].floors && p->sites[refs[m].raw].first_interval < first)
                first = p->sites[refs[m].raw].first_interval;
        for (uint32_t i = first + 1; first != UINT32_MAX && i < p->n_intervals; i++) {
            uint64_t sum = 0;
            for (size_t m = 0; m < n; m++) {
                const struct cmt_tensor_site *s = &p->sites[refs[m].raw];
                if (s->floors && i > s->first_interval)
                    sum += s->floors[i];
            }
            v[k] = sum;
            t[k++] = p->interval_origin + (uint64_t)i * p->interval_ns;
        }
        uint64_t live = 0;
        for (size_t m = 0; m < n; m++)
            live += p->sites[refs[m].raw].live_bytes;
        v[k] = live;
        t[k++] = p->interval_origin + (uint64_t)p->n_intervals * p->interval_ns;
    }
    cmt_growth_evaluate(v, t, k, allocs, &row->verdict);
    row->growing = row->verdict.candidate;
}

/* Call sites and their origins, by canonical stack, for the peak's sites. */
struct origin_map {
    struct ref *refs;
    size_t n;
};

static int build_sites(struct cmt_tensors_report *t, const struct cmt_tensors_report_input *in,
                       struct origin_map *map)
{
    const struct cmt_tensor_pass *p = in->pass;
    size_t n = 0;
    for (size_t s = 0; s < p->n_sites; s++)
        n += p->sites[s].allocs > 0;
    struct ref *refs = calloc(n ? n : 1, sizeof *refs);
    t->growth = calloc(n ? n : 1, sizeof *t->growth);
    t->alive = calloc(2 * (n ? n : 1), sizeof *t->alive);
    if (!refs || !t->growth || !t->alive) {
        free(refs);
        return -1;
    }
    size_t k = 0;
    for (size_t s = 0; s < p->n_sites; s++)
        if (p->sites[s].allocs)
            refs[k++] = (struct ref){cmt_frames_canonical(in->frames, s), (uint32_t)s, p->sites[s].origin,
                                     in->suppression && (p->sites[s].live_count || p->sites[s].work_count)
                                         ? in->suppression(in->ctx, s)
                                         : -1};
    qsort(refs, n, sizeof *refs, ref_cmp);
    for (size_t i = 0, end; i < n; i = end) {
        struct cmt_tensor_site_row row = {.stack = refs[i].canon, .origin = p->sites[refs[i].raw].origin};
        struct cmt_tensor_site_row set_aside = row;
        for (end = i; end < n && refs[end].canon == refs[i].canon && refs[end].origin == refs[i].origin; end++) {
            const struct cmt_tensor_site *s = &p->sites[refs[end].raw];
            row.allocs += s->allocs;
            row.frees += s->frees;
            struct cmt_tensor_site_row *to = refs[end].suppression >= 0 ? &set_aside : &row;
            if (refs[end].suppression >= 0 && !set_aside.suppression)
                set_aside.suppression = (uint32_t)refs[end].suppression + 1;
            to->live_bytes += s->live_bytes;
            to->live_count += s->live_count;
            to->live_requested += s->live_requested;
            to->kept_bytes += s->work_bytes;
            to->kept_count += s->work_count;
        }
        judge(p, refs + i, end - i, row.allocs, &row);
        set_aside.allocs = row.allocs;
        set_aside.frees = row.frees;
        set_aside.verdict = row.verdict;
        set_aside.per_step = row.per_step;
        set_aside.growing = row.growing;
        if (row.growing)
            t->growth[t->n_growth++] = row;
        row.leak = row.growing && row.kept_count;
        if (row.live_count || row.leak) {
            t->alive[t->n_alive++] = row;
            t->alive_bytes += row.live_bytes;
            t->alive_count += row.live_count;
            if (row.leak) {
                t->leak_bytes += row.kept_bytes;
                t->leak_count += row.kept_count;
            }
        }
        if (set_aside.live_count || (set_aside.growing && set_aside.kept_count)) {
            t->alive[t->n_alive++] = set_aside;
            t->alive_bytes += set_aside.live_bytes;
            t->alive_count += set_aside.live_count;
            if (set_aside.growing) {
                t->suppressed_bytes += set_aside.kept_bytes;
                t->suppressed_count += set_aside.kept_count;
            }
        }
    }
    map->refs = refs;
    map->n = n;
    qsort(t->growth, t->n_growth, sizeof *t->growth, growth_cmp);
    qsort(t->alive, t->n_alive, sizeof *t->alive, alive_cmp);
    return 0;
}

/* ---- devices and advice ------------------------------------------------------------------------ */

static enum cmt_tensor_category category_of_origin(enum cmt_tensor_origin o)
{
    switch (o) {
    case CMT_ORIGIN_PARAMETER:
        return CMT_CAT_PARAMETERS;
    case CMT_ORIGIN_BACKWARD:
        return CMT_CAT_GRADIENTS;
    case CMT_ORIGIN_OPTIMIZER:
        return CMT_CAT_OPTIMIZER_STATE;
    case CMT_ORIGIN_CUBLAS:
        return CMT_CAT_CUBLAS;
    case CMT_ORIGIN_CUDNN:
        return CMT_CAT_CUDNN;
    case CMT_ORIGIN_NCCL:
        return CMT_CAT_NCCL;
    default:
        return CMT_CAT_ACTIVATIONS;
    }
}

static int canon_cmp(const void *key, const void *elem)
{
    uint64_t k = *(const uint64_t *)key, c = ((const struct ref *)elem)->canon;
    return k < c ? -1 : k > c;
}

/* The origin of a call site (canonical): the first of its raw stacks' (in origin order). */
static enum cmt_tensor_origin origin_of_site(const struct cmt_tensors_report_input *in, const struct origin_map *map,
                                             uint64_t canon)
{
    const struct ref *r = map->n ? bsearch(&canon, map->refs, map->n, sizeof *map->refs, canon_cmp) : NULL;
    if (!r)
        return CMT_ORIGIN_PROGRAM;
    while (r > map->refs && r[-1].canon == canon)
        r--;
    return (enum cmt_tensor_origin)in->pass->sites[r->raw].origin;
}

static void top_sites(struct cmt_tensors_device_view *v, const struct cmt_tensors_report_input *in,
                      const struct origin_map *map)
{
    const struct cmt_blocks_report *b = in->blocks;
    for (size_t i = 0; b && i < b->n_devices; i++) {
        const struct cmt_blocks_device *d = &b->devices[i];
        if (d->ordinal != v->ordinal)
            continue;
        /* sites come largest first: the first of each category wins */
        for (size_t k = 0; k < d->peak.n_sites; k++) {
            const struct cmt_blocks_site *s = &d->peak.sites[k];
            enum cmt_tensor_category c = category_of_origin(origin_of_site(in, map, s->stack));
            if (!v->top_stack[c]) {
                v->top_stack[c] = s->stack;
                v->top_bytes[c] = s->bytes;
            }
        }
    }
}

static const char *site_words(struct cmt_frames *frames, uint64_t stack, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!stack)
        return buf;
    const struct cmt_stack_frames *sf = cmt_frames_get(frames, stack);
    const struct cmt_frame *fr = cmt_stack_site(sf);
    if (!fr)
        return buf;
    char d[400];
    cmt_frame_describe(fr, d, sizeof d);
    snprintf(buf, len, ", most made in %s", d);
    return buf;
}

static void advise(struct cmt_tensors_report *t, int32_t device, enum cmt_tensor_category c, uint64_t bytes,
                   uint64_t total, uint64_t stack, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void advise(struct cmt_tensors_report *t, int32_t device, enum cmt_tensor_category c, uint64_t bytes,
                   uint64_t total, uint64_t stack, const char *fmt, ...)
{
    if (t->n_advice == CMT_TENSOR_ADVICE_MAX)
        return;
    struct cmt_tensor_advice *a = &t->advice[t->n_advice++];
    a->category = c;
    a->device = device;
    a->bytes = bytes;
    a->share = total ? (double)bytes / (double)total : 0;
    a->stack = stack;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->text, sizeof a->text, fmt, ap);
    va_end(ap);
}

/* A category large enough at the peak to be worth acting on. */
static bool sizable(uint64_t bytes, uint64_t total, unsigned percent)
{
    return bytes && total && bytes * 100 >= total * percent;
}

static void build_advice(struct cmt_tensors_report *t, const struct cmt_tensors_device_view *v,
                         const struct cmt_tensors_report_input *in)
{
    const struct cmt_tensor_instant *pk = &v->pass->peak;
    const uint64_t *b = pk->cats.bytes;
    uint64_t total = v->peak_total;
    char s1[32], s2[32], s3[32], where[480];
    double pct;
#define SHARE(x) (pct = total ? 100.0 * (double)(x) / (double)total : 0, pct)
    if (sizable(b[CMT_CAT_ACTIVATIONS], total, 20)) {
        uint64_t a = b[CMT_CAT_ACTIVATIONS];
        cmt_format_size(a, s1, sizeof s1);
        cmt_format_size(a / 2, s2, sizeof s2);
        advise(t, v->ordinal, CMT_CAT_ACTIVATIONS, a, total, v->top_stack[CMT_CAT_ACTIVATIONS],
               "activations saved for backward: %s, %.0f%% of the memory at the peak%s: activation checkpointing "
               "(torch.utils.checkpoint) of the modules that make them keeps only their inputs and recomputes the "
               "rest in the backward pass, cutting up to %s; mixed precision (torch.autocast with bfloat16) or half "
               "the batch size halves them (about %s less)",
               s1, SHARE(a), site_words(in->frames, v->top_stack[CMT_CAT_ACTIVATIONS], where, sizeof where), s1, s2);
    }
    if (sizable(b[CMT_CAT_OPTIMIZER_STATE], total, 20)) {
        uint64_t o = b[CMT_CAT_OPTIMIZER_STATE];
        cmt_format_size(o, s1, sizeof s1);
        cmt_format_size(o - o / 4, s2, sizeof s2);
        advise(t, v->ordinal, CMT_CAT_OPTIMIZER_STATE, o, total, v->top_stack[CMT_CAT_OPTIMIZER_STATE],
               "optimizer state: %s, %.0f%% of the memory at the peak%s: an 8-bit optimizer (bitsandbytes' AdamW8bit) "
               "keeps it in about a quarter (about %s less); ZeroRedundancyOptimizer or FSDP shard it across ranks",
               s1, SHARE(o), site_words(in->frames, v->top_stack[CMT_CAT_OPTIMIZER_STATE], where, sizeof where), s2);
    }
    if (pk->phase == CMT_TPHASE_FORWARD && sizable(b[CMT_CAT_GRADIENTS], total, 10)) {
        uint64_t g = b[CMT_CAT_GRADIENTS];
        cmt_format_size(g, s1, sizeof s1);
        advise(t, v->ordinal, CMT_CAT_GRADIENTS, g, total, v->top_stack[CMT_CAT_GRADIENTS],
               "gradients: %s, %.0f%% of the memory at the peak, still held during the forward pass where the peak "
               "is: optimizer.zero_grad(set_to_none=True) before the forward pass frees them until backward makes "
               "them again (%s less at this peak)",
               s1, SHARE(g), s1);
    }
    if (pk->phase == CMT_TPHASE_OPTIMIZER && sizable(b[CMT_CAT_TEMPORARIES], total, 15)) {
        uint64_t m = b[CMT_CAT_TEMPORARIES];
        cmt_format_size(m, s1, sizeof s1);
        advise(t, v->ordinal, CMT_CAT_TEMPORARIES, m, total, 0,
               "temporaries of the optimizer's step: %s, %.0f%% of the memory at the peak, which is in the "
               "optimizer's step: its multi-tensor (foreach) kernels make them for every parameter at once; "
               "fused=True, or foreach=False (one parameter at a time, slower), in the optimizer's constructor "
               "cuts them to about one parameter's worth (up to %s less)",
               s1, SHARE(m), s1);
    }
    if (sizable(b[CMT_CAT_RESERVE], total, 15) && !in->expandable) {
        uint64_t r = b[CMT_CAT_RESERVE];
        cmt_format_size(r, s1, sizeof s1);
        advise(t, v->ordinal, CMT_CAT_RESERVE, r, total, 0,
               "the cache's reserve: %s, %.0f%% of the memory at the peak, reserved by PyTorch's cache but in no "
               "tensor: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True grows segments in place instead of one "
               "per new size, which leaves most of it unreserved (up to %s less)",
               s1, SHARE(r), s1);
    }
    uint64_t kept = 0, rate = 0, kept_stack = 0;
    for (size_t i = 0; i < t->n_alive; i++)
        if (t->alive[i].leak && t->alive[i].per_step) {
            kept += t->alive[i].kept_bytes;
            if (!kept_stack) {
                kept_stack = t->alive[i].stack;
                rate = t->alive[i].verdict.rate > 0 ? (uint64_t)(t->alive[i].verdict.rate + 0.5) : 0;
            }
        }
    if (kept && b[CMT_CAT_OTHER] && t->n_advice < CMT_TENSOR_ADVICE_MAX) {
        uint64_t o = b[CMT_CAT_OTHER];
        cmt_format_size(o, s1, sizeof s1);
        cmt_format_size(rate, s2, sizeof s2);
        cmt_format_size(kept, s3, sizeof s3);
        advise(t, v->ordinal, CMT_CAT_OTHER, o, total, kept_stack,
               "the rest: %s, %.0f%% of the memory at the peak, holds tensors kept step after step (+%s a step%s; "
               "%s held when the work ended): keep Python numbers (loss.item()) or CPU copies instead of the tensors, or "
               "release them after use",
               s1, SHARE(o), s2, site_words(in->frames, kept_stack, where, sizeof where), s3);
    }
    if (sizable(b[CMT_CAT_PARAMETERS], total, 40)) {
        uint64_t w = b[CMT_CAT_PARAMETERS];
        cmt_format_size(w, s1, sizeof s1);
        cmt_format_size(w / 2, s2, sizeof s2);
        advise(t, v->ordinal, CMT_CAT_PARAMETERS, w, total, v->top_stack[CMT_CAT_PARAMETERS],
               "parameters: %s, %.0f%% of the memory at the peak%s: keeping the weights in bfloat16 "
               "(model.to(torch.bfloat16), with an optimizer that keeps float32 master weights where training "
               "needs them) halves them (about %s less); FSDP shards them across ranks",
               s1, SHARE(w), site_words(in->frames, v->top_stack[CMT_CAT_PARAMETERS], where, sizeof where), s2);
    }
#undef SHARE
}

static int build_devices(struct cmt_tensors_report *t, const struct cmt_tensors_report_input *in,
                         const struct origin_map *map)
{
    const struct cmt_tensor_pass *p = in->pass;
    t->devices = calloc(p->n_devices ? p->n_devices : 1, sizeof *t->devices);
    if (!t->devices)
        return -1;
    t->n_devices = p->n_devices;
    for (size_t i = 0; i < p->n_devices; i++) {
        struct cmt_tensors_device_view *v = &t->devices[i];
        v->ordinal = p->devices[i].ordinal;
        v->pass = &p->devices[i];
        for (unsigned c = 0; c < CMT_CAT_COUNT; c++)
            v->peak_total += v->pass->peak.cats.bytes[c];
        top_sites(v, in, map);
    }
    for (size_t i = 0; i < t->n_devices; i++)
        build_advice(t, &t->devices[i], in);
    return 0;
}

int cmt_tensors_report_build(struct cmt_tensors_report *t, const struct cmt_tensors_report_input *in)
{
    memset(t, 0, sizeof *t);
    const struct cmt_tensor_pass *p = in->pass;
    if (!p || !p->ran)
        return 0;
    t->on = true;
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        t->category_name[c] = cmt_tensor_category_name((enum cmt_tensor_category)c);
        t->category_key[c] = cmt_tensor_category_key((enum cmt_tensor_category)c);
    }
    for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++)
        t->phase_name[k] = cmt_tensor_phase_name((enum cmt_tensor_phase)k);
    for (unsigned o = 0; o < CMT_ORIGIN_COUNT; o++) {
        t->origin_name[o] = cmt_tensor_origin_name((enum cmt_tensor_origin)o);
        t->origin_words[o] = cmt_tensor_origin_words((enum cmt_tensor_origin)o);
    }
    t->step_source = p->step_source;
    t->steps = p->steps;
    t->work_end_ts = p->work_end_ts;
    t->n_samples = p->n_samples;
    t->sample_step = p->sample_step;
    t->sample_total = p->sample_total;
    t->step_rule = p->step_source == CMT_STEPS_MARKED
                       ? "steps marked by the program (NVTX ranges named like \"step N\", or cumemtrace_step)"
                   : p->step_source == CMT_STEPS_RECOGNISED
                       ? "steps recognised from the tensors' stacks: a step ends where the program's code allocates "
                         "again after a backward pass or an optimizer step"
                       : "no steps: none marked, and no backward pass or optimizer step to recognise them by";
    uint64_t times[CMT_TENSOR_STEP_SAMPLES];
    for (size_t i = 0; i < p->n_samples; i++)
        times[i] = p->sample_step[i] * 1000000000ull;
    cmt_growth_evaluate(p->sample_total, times, p->n_samples, UINT64_MAX, &t->total_growth);
    struct origin_map map = {0};
    int rc = build_sites(t, in, &map) == 0 && build_devices(t, in, &map) == 0 ? 0 : -1;
    free(map.refs);
    return rc;
}

void cmt_tensors_report_free(struct cmt_tensors_report *t)
{
    free(t->growth);
    free(t->alive);
    free(t->devices);
    memset(t, 0, sizeof *t);
}

const struct cmt_tensor_instant *cmt_tensors_peak(const struct cmt_tensors_report *t, int32_t device)
{
    for (size_t i = 0; t && i < t->n_devices; i++)
        if (t->devices[i].ordinal == device)
            return &t->devices[i].pass->peak;
    return NULL;
}

uint64_t cmt_tensors_peak_bytes(const struct cmt_tensors_report *t, int32_t device, enum cmt_tensor_category c)
{
    const struct cmt_tensor_instant *pk = cmt_tensors_peak(t, device);
    return pk && c < CMT_CAT_COUNT ? pk->cats.bytes[c] : 0;
}

const struct cmt_tensor_instant *cmt_tensors_phase_peak(const struct cmt_tensors_report *t, int32_t device,
                                                        enum cmt_tensor_phase phase)
{
    for (size_t i = 0; t && phase < CMT_TPHASE_COUNT && i < t->n_devices; i++)
        if (t->devices[i].ordinal == device)
            return t->devices[i].pass->phase_peak[phase].seen ? &t->devices[i].pass->phase_peak[phase] : NULL;
    return NULL;
}
