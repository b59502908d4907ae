/* SPDX-License-Identifier: MIT */
#define UNW_LOCAL_ONLY
#include "stacks.h"

#include <libunwind.h>
#include <string.h>

#include "arena.h"
#include "config.h"
#include "meta_records.h"
#include "modules.h"
#include "python_frames.h"
#include "python_locations.h"
#include "python_runtime.h"
#include "recorder.h"
#include "stack_cache.h"
#include "unwind_gate.h"

/* Open-addressing table of interned stacks. Readers never lock: an entry is
 * published by storing its hash last (release); a table that grows is copied
 * and the pointer swapped, the old copy stays valid for readers still in it. */
struct stack_entry {
    uint64_t hash; /* 0 = empty */
    uint32_t id;
    uint32_t nframes;
    const uint64_t *frames;
};

struct stack_table {
    uint32_t cap; /* power of two */
    uint32_t count;
    struct stack_entry entries[];
};

static struct stack_table *stack_table;
static uint64_t self_lo, self_hi;

void cmt_stacks_init(void)
{
    cmt_modules_self_range(&self_lo, &self_hi);
    cmt_stack_cache_init();
}

void cmt_stacks_reset(void)
{
    __atomic_store_n(&stack_table, NULL, __ATOMIC_RELEASE);
    cmt_python_locations_reset();
    cmt_stack_cache_invalidate();
}

void cmt_stacks_forget_code(void)
{
    /* Under the metadata lock so that no intern in flight adds to the table
     * being dropped; counted as inside a hook so that a signal handler's
     * hook passes through instead of waiting for it. */
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    __atomic_store_n(&stack_table, NULL, __ATOMIC_RELEASE);
    cmt_stack_cache_invalidate();
    cmt_python_forget_if_unloaded_locked();
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    cmt_internal_leave();
}

static uint64_t hash_frames(const uint64_t *f, unsigned n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (unsigned i = 0; i < n; i++) {
        h ^= f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h | 1;
}

static uint32_t table_find(const struct stack_table *t, uint64_t h, const uint64_t *f, unsigned n)
{
    uint32_t mask = t->cap - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        const struct stack_entry *e = &t->entries[i];
        uint64_t eh = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (eh == 0)
            return 0;
        if (eh == h && e->nframes == n && memcmp(e->frames, f, n * sizeof *f) == 0)
            return e->id;
    }
}

static void table_put(struct stack_table *t, const struct stack_entry *src)
{
    uint32_t mask = t->cap - 1;
    uint32_t i = (uint32_t)src->hash & mask;
    while (t->entries[i].hash)
        i = (i + 1) & mask;
    struct stack_entry *e = &t->entries[i];
    e->id = src->id;
    e->nframes = src->nframes;
    e->frames = src->frames;
    __atomic_store_n(&e->hash, src->hash, __ATOMIC_RELEASE);
    t->count++;
}

static struct stack_table *table_grow_locked(struct stack_table *old)
{
    uint32_t cap = old ? old->cap * 2 : 4096;
    struct stack_table *t = cmt_arena_alloc_pages(sizeof *t + (size_t)cap * sizeof(struct stack_entry));
    if (!t)
        return NULL;
    t->cap = cap;
    t->count = 0;
    for (uint32_t i = 0; old && i < old->cap; i++)
        if (old->entries[i].hash)
            table_put(t, &old->entries[i]);
    __atomic_store_n(&stack_table, t, __ATOMIC_RELEASE);
    return t;
}

static uint64_t intern_locked(uint64_t h, const uint64_t *frames, unsigned n)
{
    struct stack_table *t = stack_table;
    if (t) {
        uint32_t id = table_find(t, h, frames, n);
        if (id)
            return id;
    }
    if ((!t || (t->count + 1) * 10 > t->cap * 6) && !(t = table_grow_locked(t)))
        return 0;
    uint64_t *copy = cmt_arena_alloc(n * sizeof *frames + 1);
    if (!copy)
        return 0;
    memcpy(copy, frames, n * sizeof *frames);

    uint32_t modules_known = cmt_modules_sync_locked();
    if (!cmt_meta_write_stack_locked(&cmt_recorder.tf, &cmt_recorder.meta, cmt_recorder.next_stack_id + 1,
                                     modules_known, frames, n))
        return 0;
    uint32_t id = ++cmt_recorder.next_stack_id;
    struct stack_entry e = {h, id, n, copy};
    table_put(t, &e);
    return id;
}

uint64_t cmt_stack_intern(const uint64_t *frames, unsigned n)
{
    uint64_t h = hash_frames(frames, n);
    struct stack_table *t = __atomic_load_n(&stack_table, __ATOMIC_ACQUIRE);
    if (t) {
        uint32_t id = table_find(t, h, frames, n);
        if (id)
            return id;
    }
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint64_t id = intern_locked(h, frames, n);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    return id;
}

/* Frames the shim itself adds between the user's call and the unwinder. */
#define CMT_SHIM_FRAMES_MAX 8

static bool is_own_frame(uint64_t ip)
{
    return ip >= self_lo && ip < self_hi;
}

/* Interns native frames, merged with the thread's Python frames when it has
 * any. cut: the native walk stopped at the depth limit. The limit is the
 * native walk's: the Python frames come on top, up to CMT_MAX_STACK_DEPTH
 * in all. A model's Python stack alone (module calls, wrappers) can be as
 * deep as the default limit, and its outermost frames are the script's
 * lines (a GPT-2 model on the H200: the site named by train_hf.py only with
 * room past 64 frames). */
static uint64_t intern_with_python(const struct cmt_py_stack *py, const uint64_t *ips, unsigned n, bool cut,
                                   unsigned depth)
{
    (void)depth;
    if (!py)
        return cmt_stack_intern(ips, n);
    uint64_t merged[CMT_MAX_STACK_DEPTH];
    unsigned m = cmt_python_merge(py, ips, n, cut, merged, CMT_MAX_STACK_DEPTH);
    return m ? cmt_stack_intern(merged, m) : 0;
}

/* The unwind every capture used to make: libunwind's fast backtrace, the
 * shim's frames dropped, the rest interned. Out of line, like every path
 * with a big frame: a cache hit must not pay for their stack frames (with
 * -fstack-clash-protection a large frame is probed page by page). */
static __attribute__((noinline)) uint64_t capture_by_unwinding(unsigned depth, const struct cmt_py_stack *py)
{
    void *ips[CMT_MAX_STACK_DEPTH + CMT_SHIM_FRAMES_MAX];
    cmt_unwind_gate_enter();
    int got = unw_backtrace(ips, (int)(depth + CMT_SHIM_FRAMES_MAX));
    cmt_unwind_gate_leave();
    if (got <= 0)
        return 0;
    /* Drop the shim's own frames: a stack starts at the caller of the hook. */
    int first = 0;
    while (first < got && is_own_frame((uint64_t)(uintptr_t)ips[first]))
        first++;
    unsigned n = (unsigned)(got - first);
    bool cut = n > depth || got == (int)(depth + CMT_SHIM_FRAMES_MAX);
    if (n > depth)
        n = depth;
    if (n == 0)
        return 0;
    return intern_with_python(py, (const uint64_t *)(ips + first), n, cut, depth);
}

#if defined(__x86_64__)

/* The program's call into the shim, from the shim's frame-pointer chain
 * (the shim is built with frame pointers: preload/meson.build). Reads only
 * the shim's own frame records. */
static bool origin_from_frame_pointers(struct cmt_stack_origin *o)
{
    const uint64_t *fp = __builtin_frame_address(0);
    for (unsigned i = 0; i < 16; i++) {
        uint64_t ra = fp[1];
        const uint64_t *next = (const uint64_t *)(uintptr_t)fp[0];
        if (!is_own_frame(ra)) {
            o->ip = ra;
            o->sp = (uint64_t)(uintptr_t)(fp + 2);
            o->rbp = (uint64_t)(uintptr_t)next;
            return true;
        }
        if (next <= fp || (uintptr_t)next - (uintptr_t)fp > (1u << 20))
            return false;
        fp = next;
    }
    return false;
}

/* A miss: unwind with libunwind's cursor, which also gives each frame's
 * stack pointer (the cache's fill checks its own reading of the unwind rules
 * against them), intern, and offer the result to the cache. */
static __attribute__((noinline)) uint64_t capture_and_fill(const struct cmt_stack_origin *o, unsigned depth,
                                                           const struct cmt_py_stack *py)
{
    enum { LIMIT = CMT_MAX_STACK_DEPTH + CMT_SHIM_FRAMES_MAX + 1 };
    uint64_t ips[LIMIT], sps[LIMIT];
    unw_context_t context;
    unw_cursor_t cursor;
    unsigned limit = depth + CMT_SHIM_FRAMES_MAX + 1, got = 0;
    bool ended = false;
    /* Inside the fork gate only while libunwind runs: interning and the
     * cache fill take the metadata lock, which fork_prepare holds while it
     * waits for the gate to empty. */
    cmt_unwind_gate_enter();
    if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) {
        cmt_unwind_gate_leave();
        return capture_by_unwinding(depth, py);
    }
    while (got < limit) {
        unw_word_t ip, sp;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0)
            break;
        ips[got] = ip;
        sps[got] = sp;
        got++;
        int step = unw_step(&cursor);
        if (step <= 0) {
            ended = step == 0;
            break;
        }
    }
    cmt_unwind_gate_leave();
    unsigned first = 0;
    while (first < got && is_own_frame(ips[first]))
        first++;
    unsigned walked = got - first;
    unsigned n = walked < depth ? walked : depth;
    if (n == 0)
        return 0;
    uint64_t id = intern_with_python(py, ips + first, n, walked > n, depth);
    if (id)
        cmt_stack_cache_fill(o, py, ips + first, sps + first, n, walked, ended, id);
    return id;
}

#endif

uint64_t cmt_stack_caller(void)
{
#if defined(__x86_64__)
    struct cmt_stack_origin o;
    return origin_from_frame_pointers(&o) ? o.ip : 0;
#else
    return 0;
#endif
}

uint64_t cmt_stack_capture(void)
{
    unsigned depth = cmt_config.stack_depth;
    if (depth == 0)
        return 0;
    if (__builtin_expect(__atomic_load_n(&cmt_python_note_due, __ATOMIC_RELAXED), 0))
        cmt_python_write_pending_note();
    /* The Python frames first: the cache's key includes them. */
    struct cmt_py_stack py_frames;
    const struct cmt_py_stack *py = NULL;
    if (cmt_python_layout()) {
        cmt_python_collect(&py_frames, CMT_MAX_STACK_DEPTH); /* on top of depth native frames */
        if (py_frames.n)
            py = &py_frames;
    }
#if defined(__x86_64__)
    struct cmt_stack_origin o;
    if (cmt_config.stack_cache != CMT_STACK_CACHE_OFF && origin_from_frame_pointers(&o)) {
        bool uncacheable;
        uint64_t id = cmt_stack_cache_lookup(&o, py, &uncacheable);
        if (id) {
            if (cmt_config.stack_cache == CMT_STACK_CACHE_CHECK)
                cmt_stack_cache_count_check(capture_by_unwinding(depth, py) != id);
            return id;
        }
        if (!uncacheable)
            return capture_and_fill(&o, depth, py);
    }
#endif
    return capture_by_unwinding(depth, py);
}
