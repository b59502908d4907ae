/* SPDX-License-Identifier: MIT */
#include "frames.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INLINE_DEPTH 16

struct cmt_frames {
    const struct cmt_trace_model *model;
    struct cmt_symbolizer *sym;
    struct cmt_fold_rules *fold;
    bool full;
    bool no_symbols;
    struct cmt_stack_frames *cache; /* by stack id; frames == NULL: not yet resolved */
    struct cmt_stack_frames *unfolded_cache; /* the same, nothing folded; allocated on first use */
    uint64_t *canonical;            /* by stack id; 0: not computed yet */
    size_t cache_cap;
    /* display-frame hash -> first stack id with it (open addressing) */
    uint64_t *canon_keys;
    uint64_t *canon_ids;
    size_t canon_cap, canon_count;
};

const char *cmt_basename(const char *path)
{
    if (!path)
        return "";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

struct cmt_frames *cmt_frames_new(const struct cmt_trace_model *model, const struct cmt_frames_options *opt)
{
    struct cmt_frames *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->model = model;
    f->full = opt->full_stacks;
    f->no_symbols = opt->no_symbols;
    f->sym = cmt_symbolizer_new(&opt->symbolizer);
    f->fold = cmt_fold_rules_new();
    if (!f->sym || !f->fold) {
        cmt_frames_free(f);
        return NULL;
    }
    for (size_t i = 0; i < opt->n_fold_patterns; i++)
        cmt_fold_rules_add(f->fold, opt->fold_patterns[i]);
    for (uint32_t id = 1; id < model->n_modules; id++) {
        const struct cmt_module_def *m = &model->modules[id];
        struct cmt_module_info info = {
            .id = id,
            .path = cmt_model_string(model, m->path_id),
            .bias = m->bias,
            .lo = m->lo,
            .hi = m->hi,
            .build_id = m->build_id,
            .build_id_len = m->build_id_len,
        };
        cmt_symbolizer_add_module(f->sym, &info);
    }
    f->cache_cap = model->n_stacks ? model->n_stacks : 1;
    f->cache = calloc(f->cache_cap, sizeof *f->cache);
    f->canonical = calloc(f->cache_cap, sizeof *f->canonical);
    f->canon_cap = 64;
    while (f->canon_cap < f->cache_cap * 2)
        f->canon_cap *= 2;
    f->canon_keys = calloc(f->canon_cap, sizeof *f->canon_keys);
    f->canon_ids = calloc(f->canon_cap, sizeof *f->canon_ids);
    if (!f->cache || !f->canonical || !f->canon_keys || !f->canon_ids) {
        cmt_frames_free(f);
        return NULL;
    }
    return f;
}

/* Without symbols: the module and offset of each address, from the model. */
static void describe_raw(const struct cmt_frames *f, uint64_t ip, uint32_t known, struct cmt_frame *out)
{
    memset(out, 0, sizeof *out);
    out->ip = ip;
    uint32_t limit = known && known < f->model->n_modules ? known + 1 : f->model->n_modules;
    for (uint32_t id = limit; id-- > 1;) {
        const struct cmt_module_def *m = &f->model->modules[id];
        if (ip >= m->lo && ip < m->hi) {
            out->module = cmt_model_string(f->model, m->path_id);
            out->module_offset = ip - m->bias;
            return;
        }
    }
}

/* A frame the trace itself names (FRAME record): no symbolizer involved. */
static void describe_synthetic(const struct cmt_frames *f, const struct cmt_synthetic_frame *sf, uint64_t value,
                               struct cmt_frame *out)
{
    memset(out, 0, sizeof *out);
    out->ip = value;
    const char *fn = cmt_model_string(f->model, sf->function_id);
    const char *file = cmt_model_string(f->model, sf->file_id);
    out->function = *fn ? fn : NULL;
    out->file = *file ? file : NULL;
    out->line = sf->line <= INT32_MAX ? (int)sf->line : 0;
}

static int resolve_stack(struct cmt_frames *f, uint64_t id, bool fold, struct cmt_stack_frames *dst)
{
    const struct cmt_stack_def *st = cmt_model_stack(f->model, id);
    size_t cap = st ? (size_t)st->n * 2 + 4 : 1;
    struct cmt_frame *frames = malloc(cap * sizeof *frames);
    if (!frames)
        return -1;
    size_t n = 0;
    for (uint32_t i = 0; st && i < st->n; i++) {
        struct cmt_frame tmp[MAX_INLINE_DEPTH];
        size_t got;
        const struct cmt_synthetic_frame *sf = cmt_model_synthetic_frame(f->model, st->frames[i]);
        if (sf) {
            describe_synthetic(f, sf, st->frames[i], &tmp[0]);
            got = 1;
        } else if (f->no_symbols) {
            describe_raw(f, st->frames[i], st->modules_known, &tmp[0]);
            got = 1;
        } else {
            got = cmt_symbolizer_resolve(f->sym, st->frames[i], st->modules_known, tmp, MAX_INLINE_DEPTH);
        }
        for (size_t k = 0; k < got; k++) {
            if (fold && cmt_fold_rules_match(f->fold, &tmp[k]))
                continue;
            if (n == cap) {
                cap *= 2;
                struct cmt_frame *more = realloc(frames, cap * sizeof *frames);
                if (!more) {
                    free(frames);
                    return -1;
                }
                frames = more;
            }
            frames[n++] = tmp[k];
        }
    }
    dst->frames = frames;
    dst->n = n;
    return 0;
}

const struct cmt_stack_frames *cmt_frames_get(struct cmt_frames *f, uint64_t stack_id)
{
    static const struct cmt_stack_frames empty = {0, NULL};
    if (stack_id == 0 || stack_id >= f->cache_cap)
        return &empty;
    struct cmt_stack_frames *c = &f->cache[stack_id];
    if (!c->frames && resolve_stack(f, stack_id, !f->full, c) != 0)
        return &empty;
    return c;
}

const struct cmt_stack_frames *cmt_frames_get_unfolded(struct cmt_frames *f, uint64_t stack_id)
{
    static const struct cmt_stack_frames empty = {0, NULL};
    if (f->full)
        return cmt_frames_get(f, stack_id);
    if (stack_id == 0 || stack_id >= f->cache_cap)
        return &empty;
    if (!f->unfolded_cache) {
        f->unfolded_cache = calloc(f->cache_cap, sizeof *f->unfolded_cache);
        if (!f->unfolded_cache)
            return &empty;
    }
    struct cmt_stack_frames *c = &f->unfolded_cache[stack_id];
    if (!c->frames && resolve_stack(f, stack_id, false, c) != 0)
        return &empty;
    return c;
}

static uint64_t frames_hash(const struct cmt_stack_frames *s)
{
    uint64_t h = 0x243f6a8885a308d3ull ^ s->n;
    for (size_t i = 0; i < s->n; i++) {
        /* An inlined frame shares the ip of its physical frame: mix in its
         * position and whether it is inlined as well. */
        h = (h ^ s->frames[i].ip ^ ((uint64_t)s->frames[i].inlined << 63)) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1;
}

static bool frames_equal(const struct cmt_stack_frames *a, const struct cmt_stack_frames *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->frames[i].ip != b->frames[i].ip || a->frames[i].inlined != b->frames[i].inlined)
            return false;
    return true;
}

uint64_t cmt_frames_canonical(struct cmt_frames *f, uint64_t stack_id)
{
    if (stack_id == 0 || stack_id >= f->cache_cap)
        return stack_id;
    if (f->canonical[stack_id])
        return f->canonical[stack_id];
    const struct cmt_stack_frames *mine = cmt_frames_get(f, stack_id);
    uint64_t h = frames_hash(mine);
    size_t mask = f->canon_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        if (f->canon_keys[i] == 0) {
            f->canon_keys[i] = h;
            f->canon_ids[i] = stack_id;
            f->canonical[stack_id] = stack_id;
            return stack_id;
        }
        if (f->canon_keys[i] == h && frames_equal(cmt_frames_get(f, f->canon_ids[i]), mine)) {
            f->canonical[stack_id] = f->canon_ids[i];
            return f->canon_ids[i];
        }
    }
}

size_t cmt_frames_warning_count(const struct cmt_frames *f)
{
    return f->sym ? cmt_symbolizer_warning_count(f->sym) : 0;
}

const char *cmt_frames_warning(const struct cmt_frames *f, size_t i)
{
    return cmt_symbolizer_warning(f->sym, i);
}

void cmt_frames_free(struct cmt_frames *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->cache_cap && f->cache; i++)
        free(f->cache[i].frames);
    free(f->cache);
    for (size_t i = 0; i < f->cache_cap && f->unfolded_cache; i++)
        free(f->unfolded_cache[i].frames);
    free(f->unfolded_cache);
    free(f->canonical);
    free(f->canon_keys);
    free(f->canon_ids);
    if (f->sym)
        cmt_symbolizer_free(f->sym);
    if (f->fold)
        cmt_fold_rules_free(f->fold);
    free(f);
}

void cmt_frame_describe(const struct cmt_frame *fr, char *buf, size_t len)
{
    const char *mod = cmt_basename(fr->module);
    if (fr->function && fr->file && fr->line > 0)
        snprintf(buf, len, "%s at %s:%d%s", fr->function, fr->file, fr->line, fr->inlined ? " (inlined)" : "");
    else if (fr->function)
        snprintf(buf, len, "%s in %s", fr->function, *mod ? mod : "?");
    else if (*mod)
        snprintf(buf, len, "0x%" PRIx64 " in %s+0x%" PRIx64, fr->ip, mod, fr->module_offset);
    else
        snprintf(buf, len, "0x%" PRIx64, fr->ip);
}
