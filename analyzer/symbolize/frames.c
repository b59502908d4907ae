/* SPDX-License-Identifier: MIT */
#include "frames.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"
#include "module_index.h"

#define MAX_INLINE_DEPTH 16

/* Space a stack is resolved into: every frame classified, then the frames
 * shown. Grown as needed, never shrunk. */
struct classified;
struct resolve_buf {
    struct classified *all;
    size_t all_cap;
    struct cmt_frame *frames;
    size_t frames_cap;
    struct cmt_stack_frames view;
};

struct cmt_frames {
    const struct cmt_trace_model *model;
    struct cmt_symbolizer *sym;
    struct cmt_module_index *modules; /* without symbols only */
    struct cmt_fold_rules *fold;
    bool full;
    bool no_symbols;
    size_t n_ids; /* stack ids below this may be defined (the model's n_stacks) */
    /* The display frames of the stacks asked for with cmt_frames_get, kept
     * while f lives (callers hold them): an open-addressing map stack id ->
     * entry, so memory grows with the stacks shown, not with every stack a
     * trace defines (a per-id cache of resolved frames cost about 900 bytes
     * per distinct stack, most of the analyzer's memory on a trace of a
     * million of them: issue 32). */
    uint32_t *kept_ids;
    struct cmt_stack_frames **kept;
    size_t kept_cap, kept_count;
    /* Stacks resolved and not kept (cmt_frames_get_unfolded, the
     * canonicalization): scratch space reused from call to call. */
    struct resolve_buf scratch[3];
    uint32_t *canonical;            /* by stack id; 0: not computed yet */
    /* display-frame hash -> first stack id with it (open addressing, at
     * most half full, grown with the distinct call sites found) */
    uint64_t *canon_keys;
    uint32_t *canon_ids;
    size_t canon_cap, canon_count;
    uint64_t canon_mult; /* random odd: hash_seed.h (stacks can be crafted to collide in low bits) */
    unsigned canon_shift;
    char **op_names; /* operation names shown, interned */
    size_t n_op_names, cap_op_names;
    struct category_slot *categories; /* what the rules said of a frame, by its strings */
    size_t categories_cap, categories_count;
    uint32_t modules_added; /* the model's modules the symbolizer knows: 1 .. modules_added - 1 */
    uint64_t serial;        /* cmt_frames_serial */
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
    static uint64_t made;
    f->serial = __atomic_add_fetch(&made, 1, __ATOMIC_RELAXED); /* holders make theirs on the reading thread */
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
    f->n_ids = model->n_stacks;
    f->canonical = calloc(f->n_ids ? f->n_ids : 1, sizeof *f->canonical);
    f->canon_cap = 64;
    f->canon_mult = cmt_hash_multiplier();
    f->canon_shift = 64 - cmt_log2_pow2(f->canon_cap);
    f->canon_keys = calloc(f->canon_cap, sizeof *f->canon_keys);
    f->canon_ids = calloc(f->canon_cap, sizeof *f->canon_ids);
    if (!f->canonical || !f->canon_keys || !f->canon_ids) {
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

/* Every frame of a stack, inline chains expanded, classified, into b->all.
 * Returns the count, or -1 when out of memory. */
static ptrdiff_t classify_stack(struct cmt_frames *f, const struct cmt_stack_def *st, struct resolve_buf *b)
{
    size_t n = 0;
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
            if (n == b->all_cap) {
                size_t cap = b->all_cap ? b->all_cap * 2 : 64;
                struct classified *more = realloc(b->all, cap * sizeof *more);
                if (!more)
                    return -1;
                b->all = more;
                b->all_cap = cap;
            }
            struct classified *c = &b->all[n++];
            c->frame = tmp[k];
            c->python = python;
            int8_t rank;
            classify_frame(f, &tmp[k], &c->category, &rank);
            c->op_rank = rank;
        }
    }
    return (ptrdiff_t)n;
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

/* Resolves stack id into b: b->view holds its frames (folded or not) until
 * b is used again. Returns 0, or -1 when out of memory. */
static int resolve_stack(struct cmt_frames *f, uint64_t id, bool fold, struct resolve_buf *b)
{
    ptrdiff_t got = classify_stack(f, cmt_model_stack(f->model, id), b);
    if (got < 0)
        return -1;
    size_t n_all = (size_t)got;
    if (b->frames_cap < n_all || !b->frames) {
        size_t cap = n_all > 64 ? n_all : 64;
        struct cmt_frame *more = realloc(b->frames, cap * sizeof *more);
        if (!more)
            return -1;
        b->frames = more;
        b->frames_cap = cap;
    }
    const struct classified *all = b->all;
    struct cmt_frame *frames = b->frames;
    struct cmt_stack_frames *dst = &b->view;
    ptrdiff_t op;
    ptrdiff_t site = find_site(all, n_all, &op);
    bool any_user = false;
    for (size_t i = 0; i < n_all; i++)
        any_user = any_user || all[i].category == CMT_FRAME_USER;
    /* Nothing of the user's and no operation: the framework's frames are
     * the best there is. */
    bool show_framework = !any_user && op < 0;
    /* The frames the user reads of this stack (folded or not now: a stack
     * resolved unfolded for a suppression is shown folded later) that lack
     * a line: their modules' symbol problems matter (frame_fold.h). */
    if (f->sym) {
        const struct cmt_stack_def *st = NULL;
        for (size_t i = 0; i < n_all; i++) {
            const struct classified *c = &all[i];
            bool read = f->full || c->category == CMT_FRAME_USER ||
                        (show_framework && c->category == CMT_FRAME_FRAMEWORK);
            if (!read || c->frame.file || c->python || (ptrdiff_t)i == op)
                continue;
            if (!st)
                st = cmt_model_stack(f->model, id);
            cmt_symbolizer_frame_shown(f->sym, &c->frame, st ? st->modules_known : 0);
        }
    }
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
    dst->frames = frames;
    dst->n = n;
    return 0;
}

static const struct cmt_stack_frames empty_frames = {0, NULL, 0};

/* The kept entry of stack id, or NULL. */
static struct cmt_stack_frames *kept_find(const struct cmt_frames *f, uint32_t id)
{
    if (!f->kept_cap)
        return NULL;
    size_t mask = f->kept_cap - 1;
    for (size_t i = (size_t)((id * f->canon_mult) >> 32) & mask;; i = (i + 1) & mask) {
        if (!f->kept[i])
            return NULL;
        if (f->kept_ids[i] == id)
            return f->kept[i];
    }
}

static int kept_insert(struct cmt_frames *f, uint32_t id, struct cmt_stack_frames *e)
{
    if ((f->kept_count + 1) * 2 > f->kept_cap) {
        size_t cap = f->kept_cap ? f->kept_cap * 2 : 64;
        uint32_t *ids = calloc(cap, sizeof *ids);
        struct cmt_stack_frames **kept = calloc(cap, sizeof *kept);
        if (!ids || !kept) {
            free(ids);
            free(kept);
            return -1;
        }
        for (size_t i = 0; i < f->kept_cap; i++) {
            if (!f->kept[i])
                continue;
            size_t j = (size_t)((f->kept_ids[i] * f->canon_mult) >> 32) & (cap - 1);
            while (kept[j])
                j = (j + 1) & (cap - 1);
            ids[j] = f->kept_ids[i];
            kept[j] = f->kept[i];
        }
        free(f->kept_ids);
        free(f->kept);
        f->kept_ids = ids;
        f->kept = kept;
        f->kept_cap = cap;
    }
    size_t mask = f->kept_cap - 1;
    size_t i = (size_t)((id * f->canon_mult) >> 32) & mask;
    while (f->kept[i])
        i = (i + 1) & mask;
    f->kept_ids[i] = id;
    f->kept[i] = e;
    f->kept_count++;
    return 0;
}

const struct cmt_stack_frames *cmt_frames_get(struct cmt_frames *f, uint64_t stack_id)
{
    if (stack_id == 0 || stack_id >= f->n_ids)
        return &empty_frames;
    struct cmt_stack_frames *e = kept_find(f, (uint32_t)stack_id);
    if (e)
        return e;
    struct resolve_buf *b = &f->scratch[0];
    if (resolve_stack(f, stack_id, !f->full, b) != 0)
        return &empty_frames;
    /* One block: the entry, then its frames, exactly as many as shown. */
    e = malloc(sizeof *e + b->view.n * sizeof *e->frames);
    if (!e)
        return &empty_frames;
    e->n = b->view.n;
    e->site = b->view.site;
    e->frames = (struct cmt_frame *)(e + 1);
    memcpy(e->frames, b->view.frames, b->view.n * sizeof *e->frames);
    if (kept_insert(f, (uint32_t)stack_id, e) != 0) {
        free(e);
        return &empty_frames;
    }
    return e;
}

uint64_t cmt_frames_serial(const struct cmt_frames *f)
{
    return f->serial;
}

const struct cmt_stack_frames *cmt_frames_get_unfolded(struct cmt_frames *f, uint64_t stack_id)
{
    if (f->full)
        return cmt_frames_get(f, stack_id);
    if (stack_id == 0 || stack_id >= f->n_ids)
        return &empty_frames;
    struct resolve_buf *b = &f->scratch[1];
    if (resolve_stack(f, stack_id, false, b) != 0)
        return &empty_frames;
    return &b->view;
}

/* The display frames of stack id for a comparison, kept or resolved into b. */
static const struct cmt_stack_frames *display_frames(struct cmt_frames *f, uint64_t id, struct resolve_buf *b)
{
    const struct cmt_stack_frames *e = kept_find(f, (uint32_t)id);
    if (e)
        return e;
    if (resolve_stack(f, id, !f->full, b) != 0)
        return NULL;
    return &b->view;
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

/* Doubles the canonical table (kept at most half full). */
static int canon_grow(struct cmt_frames *f)
{
    size_t cap = f->canon_cap * 2;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint32_t *ids = calloc(cap, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return -1;
    }
    unsigned shift = 64 - cmt_log2_pow2(cap);
    for (size_t i = 0; i < f->canon_cap; i++) {
        if (!f->canon_keys[i])
            continue;
        size_t j = (size_t)((f->canon_keys[i] * f->canon_mult) >> shift);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = f->canon_keys[i];
        ids[j] = f->canon_ids[i];
    }
    free(f->canon_keys);
    free(f->canon_ids);
    f->canon_keys = keys;
    f->canon_ids = ids;
    f->canon_cap = cap;
    f->canon_shift = shift;
    return 0;
}

uint64_t cmt_frames_canonical(struct cmt_frames *f, uint64_t stack_id)
{
    if (stack_id == 0 || stack_id >= f->n_ids)
        return stack_id;
    if (f->canonical[stack_id])
        return f->canonical[stack_id];
    if ((f->canon_count + 1) * 2 > f->canon_cap && canon_grow(f) != 0)
        return stack_id; /* out of memory: its own site */
    /* Resolved for the comparison only, not kept (display_frames). */
    const struct cmt_stack_frames *mine = display_frames(f, stack_id, &f->scratch[2]);
    if (!mine)
        return stack_id;
    uint64_t h = frames_hash(mine);
    size_t mask = f->canon_cap - 1;
    for (size_t i = (size_t)((h * f->canon_mult) >> f->canon_shift);; i = (i + 1) & mask) {
        if (f->canon_keys[i] == 0) {
            f->canon_keys[i] = h;
            f->canon_ids[i] = (uint32_t)stack_id;
            f->canon_count++;
            f->canonical[stack_id] = (uint32_t)stack_id;
            return stack_id;
        }
        if (f->canon_keys[i] == h) {
            const struct cmt_stack_frames *other = display_frames(f, f->canon_ids[i], &f->scratch[0]);
            if (other && frames_equal(other, mine)) {
                f->canonical[stack_id] = f->canon_ids[i];
                return f->canon_ids[i];
            }
        }
    }
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
    /* The stack ids defined since: their canonical ids (4 bytes each); the
     * canonical table grows with the call sites found, the kept frames
     * with the stacks asked for. */
    size_t need = f->model->n_stacks;
    if (need <= f->n_ids)
        return 0;
    uint32_t *more = realloc(f->canonical, need * sizeof *more);
    if (!more)
        return -1;
    memset(more + f->n_ids, 0, (need - f->n_ids) * sizeof *more);
    f->canonical = more;
    f->n_ids = need;
    return 0;
}

int cmt_frames_take_over(struct cmt_frames *f)
{
    if (cmt_frames_update(f) != 0)
        return -1;
    cmt_symbolizer_forget_shown(f->sym);
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
    for (size_t i = 0; i < f->kept_cap; i++)
        free(f->kept[i]);
    free(f->kept);
    free(f->kept_ids);
    for (size_t i = 0; i < sizeof f->scratch / sizeof f->scratch[0]; i++) {
        free(f->scratch[i].all);
        free(f->scratch[i].frames);
    }
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

struct key_buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put(struct key_buf *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct key_buf *k, const char *fmt, ...)
{
    if (k->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(k->p + k->len, k->cap - k->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            k->failed = true;
            return;
        }
        if ((size_t)n < k->cap - k->len) {
            k->len += (size_t)n;
            return;
        }
        size_t cap = (k->cap + (size_t)n) * 2;
        char *more = realloc(k->p, cap);
        if (!more) {
            k->failed = true;
            return;
        }
        k->p = more;
        k->cap = cap;
    }
}

/* One rule for "the same call site" in two runs (check --baseline, diff):
 * what identifies a frame in both, not where it was built or loaded: the
 * function, the source file's base name (two checkouts of one source differ
 * in the directories only), the line, the module's base name; a frame
 * without a name by its module and offset (addresses change from run to
 * run, the offset in a module does not). */
char *cmt_frames_site_identity(const struct cmt_stack_frames *sf, bool with_lines)
{
    struct key_buf k = {malloc(256), 0, 256, false};
    if (!k.p)
        return NULL;
    k.p[0] = '\0';
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *f = &sf->frames[i];
        const char *module = cmt_basename(f->module);
        if (f->function) {
            put(&k, "%s%s|%s|", i ? "\n" : "", f->function, cmt_basename(f->file));
            if (with_lines)
                put(&k, "%d", f->line);
            put(&k, "|%s", module);
        } else {
            put(&k, "%s?|%s+0x%" PRIx64, i ? "\n" : "", module, f->module_offset);
        }
        if (f->inlined)
            put(&k, "|inlined");
    }
    if (k.failed) {
        free(k.p);
        return NULL;
    }
    return k.p;
}
