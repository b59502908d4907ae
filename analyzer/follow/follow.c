/* SPDX-License-Identifier: MIT */
/* A trace followed while it is written, and the windows of follow.h. */
#include "follow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_layer.h"
#include "frames.h"
#include "hash_seed.h"
#include "json_writer.h"
#include "memory_holder.h"
#include "replay.h"
#include "suppressions.h"
#include "trace_model.h"
#include "trace_reader.h"

/* Tensors (block records) have addresses of their own namespace here: a
 * tensor lies inside a segment the driver's allocation covers. */
#define NS_TENSOR CMT_NS_COUNT
#define MAX_FRAMES_OUT 16

/* One allocation charged to a window and still live. */
struct tag {
    uint64_t addr;
    uint64_t size;
    uint32_t stack;
    uint32_t window; /* index + 1; 0: empty slot */
    int32_t device;
    uint8_t ns;
    uint8_t kind;
    uint8_t api;
};

struct device_figures {
    uint64_t resident_live; /* device-resident bytes and tensors charged, live */
    uint64_t resident_peak;
};

struct window {
    char *name;
    uint32_t tid;
    uint64_t open_ts, close_ts;
    bool open;
    uint64_t cached_bytes, cached_count; /* caching allocators' segments made while it was innermost */
    struct device_figures *dev; /* [CMT_MAX_DEVICES]; freed once reported */
    struct tag *left;           /* live when it closed */
    size_t n_left;
};

/* A thread's open phases: for each, the window it opened (index + 1) or 0. */
struct thread_phases {
    uint32_t tid;
    uint32_t *stack;
    size_t n, cap;
};

struct cmt_follow {
    /* First: the reader's callbacks get the follower as their context, and
     * the model's take it for the model (a pointer to a struct is one to
     * its first member). */
    struct cmt_trace_model model;
    char *path;
    char *prefix;
    size_t prefix_len;
    bool no_windows;
    void (*on_mark)(void *ctx, const struct cmt_event_in *e);
    void *mark_ctx;
    struct cmt_reader *reader;
    struct cmt_replay replay;
    struct cmt_replay_observer observer;
    struct cmt_reader_callbacks cb;
    struct cmt_frames *frames; /* made at the first stack looked at */
    struct cmt_suppressions sup;
    uint8_t *stack_cache_verdict; /* by stack id: 0 unknown, 1 not a cache, 2 a caching allocator's */
    size_t verdict_cap;
    struct window *windows;
    size_t n_windows, cap_windows;
    uint32_t *open; /* open windows (index + 1), innermost last */
    size_t n_open, cap_open;
    uint32_t *closed; /* windows (index + 1) in the order they closed, not yet in a take */
    size_t n_closed, cap_closed;
    struct thread_phases *threads;
    size_t n_threads, cap_threads;
    struct tag *tags; /* open addressing by (ns, addr), backward-shift deletion */
    size_t tags_cap, n_tags;
    uint64_t tag_mult;
    unsigned tag_shift;
    bool failed; /* out of memory */
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (q)
        *cap = c;
    return q;
}

/* ---- the tags ------------------------------------------------------------- */

static size_t tag_home(const struct cmt_follow *f, uint8_t ns, uint64_t addr)
{
    uint64_t x = (addr ^ ((uint64_t)ns << 59)) * f->tag_mult;
    x ^= x >> 29;
    return (size_t)((x * 0xbf58476d1ce4e5b9ull) >> f->tag_shift);
}

static int tags_resize(struct cmt_follow *f, size_t cap)
{
    struct tag *old = f->tags;
    size_t old_cap = f->tags_cap;
    f->tags = calloc(cap, sizeof *f->tags);
    if (!f->tags) {
        f->tags = old;
        return -1;
    }
    f->tags_cap = cap;
    f->tag_shift = 64 - cmt_log2_pow2(cap);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].window)
            continue;
        size_t j = tag_home(f, old[i].ns, old[i].addr);
        while (f->tags[j].window)
            j = (j + 1) & (cap - 1);
        f->tags[j] = old[i];
    }
    free(old);
    return 0;
}

static int tag_put(struct cmt_follow *f, const struct tag *t)
{
    if ((f->n_tags + 1) * 2 > f->tags_cap && tags_resize(f, f->tags_cap ? f->tags_cap * 2 : 1024) != 0)
        return -1;
    size_t mask = f->tags_cap - 1;
    for (size_t i = tag_home(f, t->ns, t->addr);; i = (i + 1) & mask) {
        struct tag *s = &f->tags[i];
        if (!s->window) {
            *s = *t;
            f->n_tags++;
            return 0;
        }
        if (s->ns == t->ns && s->addr == t->addr) {
            *s = *t; /* a release was missed: the replay says so in its own counts */
            return 0;
        }
    }
}

static bool tag_take(struct cmt_follow *f, uint8_t ns, uint64_t addr, struct tag *out)
{
    if (!f->n_tags)
        return false;
    size_t mask = f->tags_cap - 1;
    size_t i = tag_home(f, ns, addr);
    for (;; i = (i + 1) & mask) {
        if (!f->tags[i].window)
            return false;
        if (f->tags[i].ns == ns && f->tags[i].addr == addr)
            break;
    }
    *out = f->tags[i];
    /* backward-shift deletion: no tombstones */
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        if (!f->tags[j].window)
            break;
        size_t home = tag_home(f, f->tags[j].ns, f->tags[j].addr);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            f->tags[i] = f->tags[j];
            i = j;
        }
    }
    f->tags[i].window = 0;
    f->n_tags--;
    return true;
}

/* ---- what counts -------------------------------------------------------------- */

static struct cmt_frames *frames_now(struct cmt_follow *f)
{
    if (!f->frames) {
        struct cmt_frames_options o = {.symbolizer = CMT_SYMBOLIZER_OPTIONS_INIT};
        f->frames = cmt_frames_new(&f->model, &o);
        if (!f->frames)
            return NULL;
    }
    if (cmt_frames_update(f->frames) != 0)
        return NULL;
    return f->frames;
}

/* Whether an allocation of this stack is a caching allocator's segment
 * (memory_holder.h: the same rule `check` and `report` apply). */
static bool stack_is_cache(struct cmt_follow *f, uint32_t stack)
{
    if (!stack)
        return false;
    if ((size_t)stack >= f->verdict_cap) {
        size_t cap = f->verdict_cap, need = (size_t)stack + 1;
        uint8_t *v = grow(f->stack_cache_verdict, &cap, need, 1);
        if (!v) {
            f->failed = true;
            return false;
        }
        memset(v + f->verdict_cap, 0, cap - f->verdict_cap);
        f->stack_cache_verdict = v;
        f->verdict_cap = cap;
    }
    uint8_t *v = f->stack_cache_verdict;
    if (!v[stack]) {
        struct cmt_frames *fr = frames_now(f);
        v[stack] = fr && cmt_cache_of(fr, stack) != CMT_HOLDER_OTHER ? 2 : 1;
    }
    return v[stack] == 2;
}

static struct window *innermost(struct cmt_follow *f)
{
    return f->n_open ? &f->windows[f->open[f->n_open - 1] - 1] : NULL;
}

static void charge(struct cmt_follow *f, const struct tag *t, bool add)
{
    struct window *w = &f->windows[t->window - 1];
    bool resident = t->device >= 0 && t->device < CMT_MAX_DEVICES &&
                    (t->ns == NS_TENSOR || cmt_class_of_allocation(t->kind, t->device) == CMT_CLASS_DEVICE);
    if (!resident || !w->dev)
        return;
    struct device_figures *d = &w->dev[t->device];
    if (add) {
        d->resident_live += t->size;
        if (d->resident_live > d->resident_peak)
            d->resident_peak = d->resident_live;
    } else {
        d->resident_live = d->resident_live >= t->size ? d->resident_live - t->size : 0;
    }
}

static void begin(struct cmt_follow *f, struct tag *t)
{
    struct window *w = innermost(f);
    if (!w)
        return;
    t->window = (uint32_t)(w - f->windows) + 1;
    if (tag_put(f, t) != 0) {
        f->failed = true;
        return;
    }
    charge(f, t, true);
}

static void end(struct cmt_follow *f, uint8_t ns, uint64_t addr)
{
    struct tag t;
    if (tag_take(f, ns, addr, &t))
        charge(f, &t, false);
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    (void)r;
    struct cmt_follow *f = ctx;
    if (!cmt_kind_holds_memory(l->kind))
        return 0;
    if (!live) {
        end(f, l->ns, l->addr);
        return 0;
    }
    struct window *w = innermost(f);
    if (!w)
        return 0;
    if (stack_is_cache(f, l->stack)) {
        w->cached_bytes += l->size;
        w->cached_count++;
        return 0;
    }
    struct tag t = {.addr = l->addr, .size = l->size, .stack = l->stack, .device = l->device, .ns = l->ns,
                    .kind = l->kind, .api = l->api};
    begin(f, &t);
    return 0;
}

/* PyTorch's tensors: allocated at TORCH_ALLOC, let go at TORCH_FREE_REQUESTED
 * (where its "allocated" drops). */
static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    (void)r;
    struct cmt_follow *f = ctx;
    if (rec->type != CMT_REC_BLOCK || rec->device < 0)
        return 0;
    if (rec->api == CMT_API_TORCH_ALLOC && rec->result == 0) {
        struct tag t = {.addr = rec->addr, .size = cmt_bl_round(rec->size), .stack = rec->stack,
                        .device = rec->device, .ns = NS_TENSOR, .kind = CMT_KIND_TORCH_BLOCK, .api = rec->api};
        begin(f, &t);
    } else if (rec->api == CMT_API_TORCH_FREE_REQUESTED) {
        end(f, NS_TENSOR, rec->addr);
    }
    return 0;
}

/* ---- windows from phases ---------------------------------------------------------- */

static struct thread_phases *thread_of(struct cmt_follow *f, uint32_t tid)
{
    for (size_t i = 0; i < f->n_threads; i++)
        if (f->threads[i].tid == tid)
            return &f->threads[i];
    struct thread_phases *t = grow(f->threads, &f->cap_threads, f->n_threads + 1, sizeof *t);
    if (!t)
        return NULL;
    f->threads = t;
    t[f->n_threads] = (struct thread_phases){.tid = tid};
    return &t[f->n_threads++];
}

static void close_window(struct cmt_follow *f, uint32_t index1, uint64_t ts)
{
    struct window *w = &f->windows[index1 - 1];
    w->open = false;
    w->close_ts = ts;
    uint32_t *c = grow(f->closed, &f->cap_closed, f->n_closed + 1, sizeof *c);
    if (!c) {
        f->failed = true;
        return;
    }
    f->closed = c;
    c[f->n_closed++] = index1;
    for (size_t i = f->n_open; i-- > 0;) {
        if (f->open[i] == index1) {
            memmove(&f->open[i], &f->open[i + 1], (f->n_open - i - 1) * sizeof *f->open);
            f->n_open--;
            break;
        }
    }
    /* What it leaves: its tags live now. */
    size_t n = 0;
    for (size_t i = 0; i < f->tags_cap; i++)
        n += f->tags[i].window == index1;
    w->left = n ? malloc(n * sizeof *w->left) : NULL;
    if (n && !w->left) {
        f->failed = true;
        return;
    }
    for (size_t i = 0; i < f->tags_cap; i++)
        if (f->tags[i].window == index1)
            w->left[w->n_left++] = f->tags[i];
}

static void on_mark(struct cmt_follow *f, const struct cmt_event_in *e)
{
    if (e->api != CMT_API_MARK_PUSH && e->api != CMT_API_MARK_POP)
        return;
    struct thread_phases *t = thread_of(f, e->tid);
    if (!t) {
        f->failed = true;
        return;
    }
    if (e->api == CMT_API_MARK_POP) {
        if (t->n && t->stack[--t->n])
            close_window(f, t->stack[t->n], e->ts);
        return;
    }
    uint32_t *s = grow(t->stack, &t->cap, t->n + 1, sizeof *s);
    if (!s) {
        f->failed = true;
        return;
    }
    t->stack = s;
    const char *name = e->aux[CMT_MARK_AUX_NAME] <= UINT32_MAX
                           ? cmt_model_string(&f->model, (uint32_t)e->aux[CMT_MARK_AUX_NAME])
                           : NULL;
    if (!name || strncmp(name, f->prefix, f->prefix_len) != 0) {
        s[t->n++] = 0;
        return;
    }
    struct window *w = grow(f->windows, &f->cap_windows, f->n_windows + 1, sizeof *w);
    uint32_t *o = w ? grow(f->open, &f->cap_open, f->n_open + 1, sizeof *o) : NULL;
    if (w)
        f->windows = w;
    if (o)
        f->open = o;
    if (!w || !o) {
        f->failed = true;
        return;
    }
    w = &f->windows[f->n_windows];
    *w = (struct window){.name = strdup(name), .tid = e->tid, .open_ts = e->ts, .open = true,
                         .dev = calloc(CMT_MAX_DEVICES, sizeof *w->dev)};
    if (!w->name || !w->dev) {
        free(w->name);
        free(w->dev);
        f->failed = true;
        return;
    }
    uint32_t index1 = (uint32_t)++f->n_windows;
    f->open[f->n_open++] = index1;
    s[t->n++] = index1;
}

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct cmt_follow *f = ctx;
    if (e->type == CMT_REC_MARK) {
        if (!f->no_windows)
            on_mark(f, e);
        if (f->on_mark)
            f->on_mark(f->mark_ctx, e);
        return 0;
    }
    if (cmt_replay_event(&f->replay, e) != 0)
        f->failed = true;
    return 0;
}

/* ---- opening, polling ----------------------------------------------------------------- */

int cmt_follow_open(const char *path, const struct cmt_follow_options *opt, struct cmt_follow **out, char *err,
                    size_t errlen)
{
    struct cmt_follow *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cmt_model_init(&f->model);
    cmt_suppressions_init(&f->sup);
    f->tag_mult = cmt_hash_multiplier();
    f->path = strdup(path);
    f->prefix = strdup(opt && opt->window_prefix ? opt->window_prefix : "");
    if (!f->path || !f->prefix || cmt_replay_init(&f->replay) != 0) {
        snprintf(err, errlen, "out of memory");
        cmt_follow_close(f);
        return -1;
    }
    f->prefix_len = strlen(f->prefix);
    if (opt) {
        f->no_windows = opt->no_windows;
        f->on_mark = opt->on_mark;
        f->mark_ctx = opt->mark_ctx;
    }
    if (cmt_suppressions_load_all(&f->sup, opt ? opt->suppression_files : NULL, opt ? opt->n_suppression_files : 0,
                                  opt && opt->no_default_suppressions, err, errlen) != 0) {
        cmt_follow_close(f);
        return -1;
    }
    char rerr[CMT_READER_MESSAGE_MAX];
    if (cmt_reader_open_follow(path, &f->reader, rerr, sizeof rerr) != 0) {
        snprintf(err, errlen, "%s: %s", path, rerr);
        cmt_follow_close(f);
        return -1;
    }
    const struct cmt_trace_info *info = cmt_reader_info(f->reader);
    if (opt && opt->live_only)
        cmt_replay_live_only(&f->replay);
    cmt_replay_set_origin(&f->replay, info->start_monotonic_ns);
    f->observer = (struct cmt_replay_observer){.ctx = f, .on_change = on_change, .on_record = on_record};
    if (!f->no_windows)
        cmt_replay_add_observer(&f->replay, &f->observer);
    cmt_model_callbacks(&f->cb);
    f->cb.on_event = on_event;
    *out = f;
    return 0;
}

int cmt_follow_poll(struct cmt_follow *f, char *err, size_t errlen)
{
    if (cmt_reader_poll(f->reader, &f->cb, f) != 0) {
        snprintf(err, errlen, "%s: %s", f->path, cmt_reader_error(f->reader));
        return -1;
    }
    if (f->failed || f->replay.out_of_memory) {
        snprintf(err, errlen, "%s: out of memory while following the trace", f->path);
        return -1;
    }
    return 0;
}

/* ---- results ----------------------------------------------------------------------- */

static const char *memory_name(const struct tag *t)
{
    if (t->ns == NS_TENSOR)
        return "tensor";
    switch (cmt_class_of_allocation(t->kind, t->device)) {
    case CMT_CLASS_MANAGED:
        return "managed";
    case CMT_CLASS_HOST:
        return "pinned host";
    default:
        return "device";
    }
}

static void json_frame(struct cmt_json *j, const struct cmt_frame *fr)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "function");
    cmt_json_string(j, fr->function);
    cmt_json_key(j, "file");
    cmt_json_string(j, fr->file);
    cmt_json_key(j, "line");
    if (fr->line > 0)
        cmt_json_uint(j, (uint64_t)fr->line);
    else
        cmt_json_null(j);
    cmt_json_key(j, "module");
    cmt_json_string(j, fr->module && *fr->module ? cmt_basename(fr->module) : NULL);
    cmt_json_end_object(j);
}

/* A group of live allocations: one call site, one kind of memory, one device. */
struct group {
    uint64_t canonical;
    uint32_t stack; /* the first one's, for its frames */
    const char *memory;
    int32_t device;
    uint8_t api;
    uint64_t bytes, count;
};

static int by_bytes(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->canonical < b->canonical ? -1 : a->canonical > b->canonical;
}

/* "left": the live allocations, grouped by call site, largest first, each
 * with the suppression that matches its stack (or null). */
static void json_left(struct cmt_follow *f, struct cmt_json *j, const struct tag *tags, size_t n)
{
    struct cmt_frames *fr = frames_now(f);
    struct group *g = n ? calloc(n, sizeof *g) : NULL;
    size_t ng = 0;
    for (size_t i = 0; i < n && g; i++) {
        const struct tag *t = &tags[i];
        uint64_t canon = fr ? cmt_frames_canonical(fr, t->stack) : t->stack;
        const char *mem = memory_name(t);
        size_t k = 0;
        while (k < ng && !(g[k].canonical == canon && g[k].memory == mem && g[k].device == t->device))
            k++;
        if (k == ng)
            g[ng++] = (struct group){canon, t->stack, mem, t->device, t->api, 0, 0};
        g[k].bytes += t->size;
        g[k].count++;
    }
    if (ng > 1) /* g is NULL when nothing is live: no qsort of it (UBSan's nonnull) */
        qsort(g, ng, sizeof *g, by_bytes);
    cmt_json_begin_array(j);
    for (size_t k = 0; k < ng; k++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, g[k].bytes);
        cmt_json_key(j, "count");
        cmt_json_uint(j, g[k].count);
        cmt_json_key(j, "device");
        cmt_json_int(j, g[k].device);
        cmt_json_key(j, "memory");
        cmt_json_string(j, g[k].memory);
        cmt_json_key(j, "api");
        cmt_json_string(j, cmt_api_name(g[k].api));
        long s = -1;
        if (fr) {
            const struct cmt_stack_frames *all = cmt_frames_get_unfolded(fr, g[k].stack);
            s = cmt_suppressions_match(&f->sup, all->frames, all->n);
        }
        cmt_json_key(j, "suppressed_by");
        if (s >= 0) {
            const struct cmt_suppression *sp = &f->sup.items[s];
            char label[600];
            snprintf(label, sizeof label, "leak:%s (%s:%u)", sp->pattern, sp->is_default ? "default.supp" : sp->source,
                     sp->line);
            cmt_json_string(j, label);
        } else {
            cmt_json_null(j);
        }
        const struct cmt_stack_frames *sf = fr ? cmt_frames_get(fr, g[k].stack) : NULL;
        cmt_json_key(j, "site");
        if (sf && cmt_stack_site(sf))
            json_frame(j, cmt_stack_site(sf));
        else
            cmt_json_null(j);
        cmt_json_key(j, "frames");
        cmt_json_begin_array(j);
        for (size_t i = 0; sf && i < sf->n && i < MAX_FRAMES_OUT; i++)
            json_frame(j, &sf->frames[i]);
        cmt_json_end_array(j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    free(g);
}

static void json_window(struct cmt_follow *f, struct cmt_json *j, struct window *w)
{
    uint64_t start = cmt_reader_info(f->reader)->start_monotonic_ns;
    cmt_json_begin_object(j);
    cmt_json_key(j, "id");
    cmt_json_uint(j, (uint64_t)(w - f->windows) + 1);
    cmt_json_key(j, "name");
    cmt_json_string(j, w->name);
    cmt_json_key(j, "tid");
    cmt_json_uint(j, w->tid);
    cmt_json_key(j, "start_ns");
    cmt_json_uint(j, w->open_ts >= start ? w->open_ts - start : 0);
    cmt_json_key(j, "end_ns");
    cmt_json_uint(j, w->close_ts >= start ? w->close_ts - start : 0);
    cmt_json_key(j, "cached_bytes");
    cmt_json_uint(j, w->cached_bytes);
    cmt_json_key(j, "cached_count");
    cmt_json_uint(j, w->cached_count);
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        uint64_t left = 0, count = 0;
        for (size_t i = 0; i < w->n_left; i++)
            if (w->left[i].device == d) {
                left += w->left[i].size;
                count++;
            }
        if (!w->dev[d].resident_peak && !count)
            continue;
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, d);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, w->dev[d].resident_peak);
        cmt_json_key(j, "left_bytes");
        cmt_json_uint(j, left);
        cmt_json_key(j, "left_count");
        cmt_json_uint(j, count);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "left");
    json_left(f, j, w->left, w->n_left);
    cmt_json_end_object(j);
}

static void json_trace(struct cmt_follow *f, struct cmt_json *j)
{
    cmt_json_key(j, "trace");
    cmt_json_string(j, f->path);
    cmt_json_key(j, "ended");
    cmt_json_bool(j, cmt_reader_follow_ended(f->reader));
    cmt_json_key(j, "late_events");
    cmt_json_uint(j, cmt_reader_late_events(f->reader));
    cmt_json_key(j, "unmatched_frees");
    cmt_json_uint(j, f->replay.unmatched_frees);
    /* Whether tensors are seen: PyTorch's block layer (docs/design.md). */
    cmt_json_key(j, "block_layer");
    if (!f->model.has_allocator)
        cmt_json_null(j);
    else
        cmt_json_string(j, f->model.allocator.state == 0 ? "on" : "off");
    cmt_json_key(j, "open_windows");
    cmt_json_uint(j, f->n_open);
}

char *cmt_follow_take_json(struct cmt_follow *f, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    if (!out)
        return NULL;
    struct cmt_json j;
    cmt_json_init(&j, out, false);
    cmt_json_begin_object(&j);
    json_trace(f, &j);
    cmt_json_key(&j, "windows");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < f->n_closed; i++) {
        struct window *w = &f->windows[f->closed[i] - 1];
        json_window(f, &j, w);
        free(w->left);
        w->left = NULL;
        w->n_left = 0;
        free(w->dev);
        w->dev = NULL;
    }
    f->n_closed = 0;
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
    if (fclose(out) != 0) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = size;
    return buf;
}

char *cmt_follow_held_json(struct cmt_follow *f, uint32_t id, size_t *len)
{
    if (id == 0 || id > f->n_windows)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < f->tags_cap; i++)
        n += f->tags[i].window == id;
    struct tag *held = n ? malloc(n * sizeof *held) : NULL;
    if (n && !held)
        return NULL;
    n = 0;
    for (size_t i = 0; i < f->tags_cap; i++)
        if (f->tags[i].window == id)
            held[n++] = f->tags[i];
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    if (!out) {
        free(held);
        return NULL;
    }
    struct cmt_json j;
    cmt_json_init(&j, out, false);
    cmt_json_begin_object(&j);
    json_trace(f, &j);
    cmt_json_key(&j, "id");
    cmt_json_uint(&j, id);
    cmt_json_key(&j, "name");
    cmt_json_string(&j, f->windows[id - 1].name);
    cmt_json_key(&j, "held");
    json_left(f, &j, held, n);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
    free(held);
    if (fclose(out) != 0) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = size;
    return buf;
}

void cmt_follow_close(struct cmt_follow *f)
{
    if (!f)
        return;
    cmt_reader_close(f->reader);
    cmt_frames_free(f->frames);
    cmt_replay_free(&f->replay);
    cmt_model_free(&f->model);
    cmt_suppressions_free(&f->sup);
    for (size_t i = 0; i < f->n_windows; i++) {
        free(f->windows[i].name);
        free(f->windows[i].dev);
        free(f->windows[i].left);
    }
    free(f->windows);
    free(f->open);
    free(f->closed);
    for (size_t i = 0; i < f->n_threads; i++)
        free(f->threads[i].stack);
    free(f->threads);
    free(f->tags);
    free(f->stack_cache_verdict);
    free(f->path);
    free(f->prefix);
    free(f);
}

/* ---- for a live view --------------------------------------------------------------- */

const struct cmt_replay *cmt_follow_replay(const struct cmt_follow *f)
{
    return &f->replay;
}

const struct cmt_trace_model *cmt_follow_model(const struct cmt_follow *f)
{
    return &f->model;
}

struct cmt_frames *cmt_follow_frames(struct cmt_follow *f)
{
    return frames_now(f);
}

const struct cmt_trace_info *cmt_follow_info(const struct cmt_follow *f)
{
    return cmt_reader_info(f->reader);
}

bool cmt_follow_ended(const struct cmt_follow *f)
{
    return cmt_reader_follow_ended(f->reader);
}

bool cmt_follow_writer_running(const struct cmt_follow *f)
{
    return cmt_reader_writer_running(f->reader);
}

int cmt_follow_add_observer(struct cmt_follow *f, const struct cmt_replay_observer *o)
{
    return cmt_replay_add_observer(&f->replay, o);
}
