/* SPDX-License-Identifier: MIT */
#include "frames.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"
#include "module_index.h"

#define MAX_INLINE_DEPTH 16

struct cmt_frames {
    const struct cmt_trace_model *model;
    struct cmt_symbolizer *sym;
    struct cmt_module_index *modules; /* without symbols only */
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
    uint64_t canon_mult; /* random odd: hash_seed.h (stacks can be crafted to collide in low bits) */
    unsigned canon_shift;
    char **op_names; /* operation names shown, interned */
    size_t n_op_names, cap_op_names;
    struct category_slot *categories; /* what the rules said of a frame, by its strings */
    size_t categories_cap, categories_count;
    uint32_t modules_added; /* the model's modules the symbolizer knows: 1 .. modules_added - 1 */
};

/* The rules' verdict on a frame depends on its function, file and module
 * only, and the symbolizer and the model hand out one string per name: a
 * frame met in many stacks is matched against the table once (4,000 stacks
 * of a benchmark trace cost 0.2 s of fnmatch without this). */
struct category_slot {
    const char *function, *file, *module;
    bool used;
    uint8_t category;
    int8_t op_rank;
};

const char *cmt_basename(const char *path)
{
    if (!path)
        return "";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void cmt_frames_args_apply(const struct cmt_frames_args *a, struct cmt_frames_options *o)
{
    o->fold_patterns = a->folds;
    o->n_fold_patterns = a->n_folds;
    o->keep_patterns = a->unfolds;
    o->n_keep_patterns = a->n_unfolds;
    o->symbolizer.debuginfo_paths = a->debuginfo_paths;
    o->symbolizer.n_debuginfo_paths = a->n_debuginfo_paths;
    o->symbolizer.sysroot = a->sysroot;
    o->full_stacks = a->full_stacks;
    o->no_symbols = a->no_symbols;
}

/* The model's modules recorded since the last call, to the symbolizer. */
static void add_new_modules(struct cmt_frames *f)
{
    const struct cmt_trace_model *model = f->model;
    for (uint32_t id = f->modules_added ? f->modules_added : 1; id < model->n_modules; id++) {
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
    if (model->n_modules > f->modules_added)
        f->modules_added = model->n_modules;
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
    if (f->no_symbols)
        f->modules = cmt_module_index_new(model);
    if (!f->sym || !f->fold || (f->no_symbols && !f->modules)) {
        cmt_frames_free(f);
        return NULL;
    }
    for (size_t i = 0; i < opt->n_fold_patterns; i++)
        cmt_fold_rules_add(f->fold, opt->fold_patterns[i]);
    for (size_t i = 0; i < opt->n_keep_patterns; i++)
        cmt_fold_rules_keep(f->fold, opt->keep_patterns[i]);
    add_new_modules(f);
    f->cache_cap = model->n_stacks ? model->n_stacks : 1;
    f->cache = calloc(f->cache_cap, sizeof *f->cache);
    f->canonical = calloc(f->cache_cap, sizeof *f->canonical);
    f->canon_cap = 64;
    while (f->canon_cap < f->cache_cap * 2)
        f->canon_cap *= 2;
    f->canon_mult = cmt_hash_multiplier();
    f->canon_shift = 64 - cmt_log2_pow2(f->canon_cap);
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
    uint32_t n = f->model->n_modules;
    uint32_t id = cmt_module_index_find(f->modules, ip, known && known < n ? known : n ? n - 1 : 0);
    if (id) {
        const struct cmt_module_def *m = &f->model->modules[id];
        out->module = cmt_model_string(f->model, m->path_id);
        out->module_offset = ip - m->bias;
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

/* One frame of a stack with what the rules say of it. */
struct classified {
    struct cmt_frame frame;
    uint8_t category; /* enum cmt_frame_category */
    bool python;
    int op_rank;      /* cmt_frame_operation; 0: not an operation */
};

static const char *intern_op(struct cmt_frames *f, const char *name)
{
    for (size_t i = 0; i < f->n_op_names; i++)
        if (strcmp(f->op_names[i], name) == 0)
            return f->op_names[i];
    if (f->n_op_names == f->cap_op_names) {
        size_t cap = f->cap_op_names ? f->cap_op_names * 2 : 16;
        char **more = realloc(f->op_names, cap * sizeof *more);
        if (!more)
            return NULL;
        f->op_names = more;
        f->cap_op_names = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return NULL;
    f->op_names[f->n_op_names++] = copy;
    return copy;
}

static uint64_t category_hash(const struct cmt_frame *fr)
{
    uint64_t h = (uint64_t)(uintptr_t)fr->function * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uintptr_t)fr->file * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)(uintptr_t)fr->module * 0x165667b19e3779f9ull;
    return h ^ (h >> 31);
}

static void classify_uncached(struct cmt_frames *f, const struct cmt_frame *fr, uint8_t *category, int8_t *op_rank)
{
    *category = (uint8_t)cmt_fold_rules_classify(f->fold, fr);
    *op_rank = 0;
    if (*category == CMT_FRAME_OPERATION) {
        char name[8];
        *op_rank = (int8_t)cmt_frame_operation(fr->function, name, sizeof name);
        if (*op_rank == 0)
            *category = CMT_FRAME_FRAMEWORK; /* at::cuda::getCurrentCUDABlasHandle */
    }
}

static void classify_frame(struct cmt_frames *f, const struct cmt_frame *fr, uint8_t *category, int8_t *op_rank)
{
    if (f->categories_count * 2 >= f->categories_cap) {
        size_t cap = f->categories_cap ? f->categories_cap * 2 : 1024;
        struct category_slot *t = calloc(cap, sizeof *t);
        if (!t) {
            classify_uncached(f, fr, category, op_rank);
            return;
        }
        for (size_t i = 0; i < f->categories_cap; i++) {
            const struct category_slot *o = &f->categories[i];
            if (!o->used)
                continue;
            struct cmt_frame k = {.function = o->function, .file = o->file, .module = o->module};
            size_t j = (size_t)category_hash(&k) & (cap - 1);
            while (t[j].used)
                j = (j + 1) & (cap - 1);
            t[j] = *o;
        }
        free(f->categories);
        f->categories = t;
        f->categories_cap = cap;
    }
    size_t mask = f->categories_cap - 1;
    for (size_t j = (size_t)category_hash(fr) & mask;; j = (j + 1) & mask) {
        struct category_slot *c = &f->categories[j];
        if (!c->used) {
            classify_uncached(f, fr, category, op_rank);
            *c = (struct category_slot){fr->function, fr->file, fr->module, true, *category, *op_rank};
            f->categories_count++;
            return;
        }
        if (c->function == fr->function && c->file == fr->file && c->module == fr->module) {
            *category = c->category;
            *op_rank = c->op_rank;
            return;
        }
    }
}

/* Every frame of a stack, inline chains expanded, classified. */
static struct classified *classify_stack(struct cmt_frames *f, const struct cmt_stack_def *st, size_t *count)
{
    size_t cap = st ? (size_t)st->n * 2 + 4 : 4, n = 0;
    struct classified *all = malloc(cap * sizeof *all);
    if (!all)
        return NULL;
    for (uint32_t i = 0; st && i < st->n; i++) {
        struct cmt_frame tmp[MAX_INLINE_DEPTH];
        size_t got;
        bool python = false;
        const struct cmt_synthetic_frame *sf = cmt_model_synthetic_frame(f->model, st->frames[i]);
        if (sf) {
            describe_synthetic(f, sf, st->frames[i], &tmp[0]);
            python = sf->language == 1;
            got = 1;
        } else if (f->no_symbols) {
            describe_raw(f, st->frames[i], st->modules_known, &tmp[0]);
            got = 1;
        } else {
            got = cmt_symbolizer_resolve(f->sym, st->frames[i], st->modules_known, tmp, MAX_INLINE_DEPTH);
        }
        for (size_t k = 0; k < got; k++) {
            if (n == cap) {
                cap *= 2;
                struct classified *more = realloc(all, cap * sizeof *all);
                if (!more) {
                    free(all);
                    return NULL;
                }
                all = more;
            }
            struct classified *c = &all[n++];
            c->frame = tmp[k];
            c->python = python;
            int8_t rank;
            classify_frame(f, &tmp[k], &c->category, &rank);
            c->op_rank = rank;
        }
    }
    *count = n;
    return all;
}

/* Where the call site is named (frames.h), over every frame: the frame's
 * index, or -1. *op gets the operation frame kept (-1 when none): of those
 * inside the site (or anywhere without one), the one that best names what
 * the program asked for (cmt_frame_operation's rank), the innermost of
 * equals. */
static ptrdiff_t find_site(const struct classified *all, size_t n, ptrdiff_t *op)
{
    ptrdiff_t user_py = -1, user_native = -1;
    for (size_t i = 0; i < n; i++) {
        if (all[i].category != CMT_FRAME_USER)
            continue;
        if (all[i].python && user_py < 0)
            user_py = (ptrdiff_t)i;
        if (!all[i].python && user_native < 0)
            user_native = (ptrdiff_t)i;
    }
    ptrdiff_t site = user_py >= 0 ? user_py : user_native;
    size_t limit = site >= 0 ? (size_t)site : n;
    int best = 0;
    *op = -1;
    for (size_t i = 0; i < limit; i++)
        if (all[i].category == CMT_FRAME_OPERATION && all[i].op_rank > best) {
            best = all[i].op_rank;
            *op = (ptrdiff_t)i;
        }
    return site;
}

static int resolve_stack(struct cmt_frames *f, uint64_t id, bool fold, struct cmt_stack_frames *dst)
{
    size_t n_all = 0;
    struct classified *all = classify_stack(f, cmt_model_stack(f->model, id), &n_all);
    if (!all)
        return -1;
    struct cmt_frame *frames = malloc((n_all ? n_all : 1) * sizeof *frames);
    if (!frames) {
        free(all);
        return -1;
    }
    ptrdiff_t op;
    ptrdiff_t site = find_site(all, n_all, &op);
    bool any_user = false;
    for (size_t i = 0; i < n_all; i++)
        any_user = any_user || all[i].category == CMT_FRAME_USER;
    /* Nothing of the user's and no operation: the framework's frames are
     * the best there is. */
    bool show_framework = !any_user && op < 0;
    size_t n = 0;
    dst->site = SIZE_MAX;
    for (size_t i = 0; i < n_all; i++) {
        const struct classified *c = &all[i];
        bool shown = !fold || c->category == CMT_FRAME_USER || (ptrdiff_t)i == op ||
                     (show_framework && c->category == CMT_FRAME_FRAMEWORK);
        if (!shown)
            continue;
        frames[n] = c->frame;
        if (fold && (ptrdiff_t)i == op) {
            char name[256];
            cmt_frame_operation(c->frame.function, name, sizeof name);
            const char *interned = intern_op(f, name);
            if (interned) {
                frames[n].function = interned;
                frames[n].file = NULL; /* the operation, not where libtorch implements it */
                frames[n].line = 0;
                frames[n].column = 0;
            }
        }
        if ((ptrdiff_t)i == site || (site < 0 && (ptrdiff_t)i == op))
            dst->site = n;
        n++;
    }
    if (dst->site == SIZE_MAX) {
        /* the first frame shown that is not folded plumbing */
        dst->site = n;
        for (size_t i = 0, k = 0; i < n_all && dst->site == n; i++) {
            bool shown = !fold || all[i].category == CMT_FRAME_USER || (ptrdiff_t)i == op ||
                         (show_framework && all[i].category == CMT_FRAME_FRAMEWORK);
            if (!shown)
                continue;
            if (all[i].category != CMT_FRAME_FOLD)
                dst->site = k;
            k++;
        }
    }
    free(all);
    dst->frames = frames;
    dst->n = n;
    return 0;
}

const struct cmt_stack_frames *cmt_frames_get(struct cmt_frames *f, uint64_t stack_id)
{
    static const struct cmt_stack_frames empty = {0, NULL, 0};
    if (stack_id == 0 || stack_id >= f->cache_cap)
        return &empty;
    struct cmt_stack_frames *c = &f->cache[stack_id];
    if (!c->frames && resolve_stack(f, stack_id, !f->full, c) != 0)
        return &empty;
    return c;
}

const struct cmt_stack_frames *cmt_frames_get_unfolded(struct cmt_frames *f, uint64_t stack_id)
{
    static const struct cmt_stack_frames empty = {0, NULL, 0};
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
    for (size_t i = (size_t)((h * f->canon_mult) >> f->canon_shift);; i = (i + 1) & mask) {
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

static int grow_zeroed(void *pp, size_t old_n, size_t new_n, size_t size)
{
    void **p = pp;
    if (!*p)
        return 0; /* allocated on first use, at the new size */
    void *q = realloc(*p, new_n * size);
    if (!q)
        return -1;
    memset((char *)q + old_n * size, 0, (new_n - old_n) * size);
    *p = q;
    return 0;
}

int cmt_frames_update(struct cmt_frames *f)
{
    if (!f->no_symbols)
        add_new_modules(f);
    else if (f->model->n_modules > f->modules_added) {
        struct cmt_module_index *mi = cmt_module_index_new(f->model);
        if (!mi)
            return -1;
        cmt_module_index_free(f->modules);
        f->modules = mi;
        f->modules_added = f->model->n_modules;
    }
    size_t need = f->model->n_stacks;
    if (need <= f->cache_cap)
        return 0;
    size_t cap = f->cache_cap;
    while (cap < need)
        cap *= 2;
    if (grow_zeroed(&f->cache, f->cache_cap, cap, sizeof *f->cache) != 0 ||
        grow_zeroed(&f->unfolded_cache, f->cache_cap, cap, sizeof *f->unfolded_cache) != 0 ||
        grow_zeroed(&f->canonical, f->cache_cap, cap, sizeof *f->canonical) != 0)
        return -1;
    f->cache_cap = cap;
    if (f->canon_cap >= cap * 2)
        return 0;
    /* The canonical table, rehashed at twice the stacks it may hold. */
    size_t ccap = f->canon_cap;
    while (ccap < cap * 2)
        ccap *= 2;
    uint64_t *keys = calloc(ccap, sizeof *keys), *ids = calloc(ccap, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return -1;
    }
    unsigned shift = 64 - cmt_log2_pow2(ccap);
    for (size_t i = 0; i < f->canon_cap; i++) {
        if (!f->canon_keys[i])
            continue;
        size_t j = (size_t)((f->canon_keys[i] * f->canon_mult) >> shift);
        while (keys[j])
            j = (j + 1) & (ccap - 1);
        keys[j] = f->canon_keys[i];
        ids[j] = f->canon_ids[i];
    }
    free(f->canon_keys);
    free(f->canon_ids);
    f->canon_keys = keys;
    f->canon_ids = ids;
    f->canon_cap = ccap;
    f->canon_shift = shift;
    return 0;
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
    cmt_module_index_free(f->modules);
    for (size_t i = 0; i < f->n_op_names; i++)
        free(f->op_names[i]);
    free(f->op_names);
    free(f->categories);
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
