/* SPDX-License-Identifier: MIT */
/* The per-thread stack cache, and why a hit is exact.
 *
 * An unwinder is a function of the registers it starts from and of the
 * memory words it reads; the unwind information of the code it walks is the
 * third input. For frames whose rules are "standard" (unwind_rules.h), the
 * unwind of frame k, given its ip_k, its stack pointer sp_k and its rbp_k,
 * computes
 *     CFA_k     = (rsp-based ? sp_k : rbp_k) + cfa_offset(ip_k)
 *     ip_k+1    = mem[CFA_k + ra_offset(ip_k)]
 *     rbp_k+1   = rbp saved ? mem[CFA_k + rbp_offset(ip_k)] : rbp_k
 *     sp_k+1    = CFA_k
 * and reads nothing else. So when a later capture starts from the same
 * (ip_0, sp_0), with the same rbp_0 where a frame's CFA depends on it, and
 * every word the first unwind read (return addresses, and the saved rbp
 * values that a CFA was computed from) holds the same value at the same
 * address, the unwind necessarily produces the same frames: by induction on
 * k, every input of step k is equal. A hit checks exactly that, in chain
 * order, stopping at the first difference; identical frames then have the
 * same interned id. Nothing is guessed: different call paths that share leaf
 * frames differ in some return address; recursion, alloca and longjmp change
 * a stack pointer or a return address; a frame whose CFA is not a register
 * plus a constant (a CFA expression, a signal frame, code without unwind
 * information) makes the origin uncacheable.
 *
 * The unwind information is the same as long as the code at those addresses
 * is: the cache is invalidated when a library is unloaded (dlclose_hook.c)
 * and when a new trace starts (its stack ids restart).
 *
 * Every read is of live stack memory: frame 0's region is live (its function
 * called us), and once ip_0..ip_k and their stack pointers are verified, the
 * frames 0..k are the live frames of the thread, so the next slot (inside
 * frame k, below its CFA) is live too. A difference stops the walk before
 * any address derived from it is read.
 *
 * The origin comes from the shim's own frames, which are built with frame
 * pointers (preload/meson.build): from the capture function, follow the rbp
 * chain while the return address is inside the shim; the first return
 * address outside is ip_0, the frame record's end is sp_0 and the saved rbp
 * is rbp_0. A fill checks this against libunwind's own unwind of those
 * frames.
 *
 * With Python frames (python_frames.h) the stack also depends on the Python
 * code the evaluation loop runs, which no native word shows: an entry keeps
 * the Python frames it was merged with, and a hit needs them all equal (the
 * merge is a function of the native frames and those).
 *
 * Only x86-64 caches; elsewhere every capture unwinds. */
#include "stack_cache.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "config.h"
#include "python_frames.h"
#include "recorder.h"
#include "unwind_rules.h"

#if defined(__x86_64__)

/* Sets, chosen by (ip_0, sp_0) and the Python frames. The unit test
 * (tests/unit/preload/stacks/test_stack_cache.c) builds the cache with one,
 * so that every entry collides with every other. */
#ifndef CMT_STACK_CACHE_SETS
#define CMT_STACK_CACHE_SETS 512u
#endif
#define CACHE_SETS CMT_STACK_CACHE_SETS
_Static_assert((CACHE_SETS & (CACHE_SETS - 1)) == 0, "a power of two: a set is chosen by masking");
#define CACHE_WAYS 4u                    /* entries per set, most recently used first: call paths
                                          * that reach one instruction at one stack pointer */
#define CACHE_REGION_BYTES (256u << 10) /* entries, bump-allocated; emptied when full */
#define ENTRY_UNCACHEABLE 1u
#define ENTRY_NEEDS_RBP0 2u

struct cache_step {
    uint32_t offset; /* address - sp_0 */
};

struct cache_entry {
    uint64_t ip0, sp0, rbp0;
    uint64_t id;
    uint32_t epoch;
    uint16_t nsteps;
    uint16_t flags;
    uint16_t npy, nseg;
    /* then nsteps expected values (uint64_t), nsteps steps, npy Python FRAME
     * ids (uint32_t), nseg segment ends (uint16_t) */
};

struct thread_cache {
    struct cache_entry *sets[CACHE_SETS][CACHE_WAYS];
    uint8_t *bump;
    uint8_t *end;
    struct thread_cache *next_free;
    _Alignas(16) uint8_t region[CACHE_REGION_BYTES];
};

/* Bumped by cmt_stack_cache_invalidate; an entry of another epoch is stale. */
static uint32_t cache_epoch = 1;
/* The epoch the rule table was read in (under the metadata lock). */
static uint32_t rules_epoch = 1;

static __thread struct thread_cache *my_cache __attribute__((tls_model("initial-exec")));
/* Thread exit hands the thread's cache to the next thread that needs one. */
static pthread_key_t cache_key;
static bool cache_key_ok;
static struct thread_cache *free_caches; /* under cmt_recorder.meta.lock */

static struct cmt_stack_cache_stats stats; /* relaxed atomics */

static void count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static void thread_exit(void *p)
{
    struct thread_cache *c = p;
    /* Counts as being inside a hook: a signal handler's hook passes through
     * rather than wait for the lock this thread holds. */
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    c->next_free = free_caches;
    free_caches = c;
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    my_cache = NULL;
    cmt_internal_leave();
}

void cmt_stack_cache_init(void)
{
    /* Created at load, before the program's own keys: glibc keeps the first
     * 32 keys' values in the thread descriptor, so setting ours never
     * allocates. */
    cache_key_ok = pthread_key_create(&cache_key, thread_exit) == 0;
}

static void reset_cache(struct thread_cache *c)
{
    for (unsigned i = 0; i < CACHE_SETS; i++)
        for (unsigned w = 0; w < CACHE_WAYS; w++)
            c->sets[i][w] = NULL;
    c->bump = c->region;
    c->end = c->region + CACHE_REGION_BYTES;
}

/* Caller holds the metadata lock. */
static struct thread_cache *thread_cache_locked(void)
{
    if (my_cache || !cache_key_ok)
        return my_cache;
    struct thread_cache *c = free_caches;
    if (c) {
        free_caches = c->next_free;
    } else {
        void *p = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        c = p;
    }
    reset_cache(c);
    if (pthread_setspecific(cache_key, c) != 0) {
        c->next_free = free_caches;
        free_caches = c;
        return NULL;
    }
    my_cache = c;
    return c;
}

/* Python frames spread over the sets: one native origin (the evaluation
 * loop's call into C) serves many Python call paths. */
static inline uint64_t py_hash(const struct cmt_py_stack *py)
{
    if (!py)
        return 0;
    uint64_t h = py->n;
    for (unsigned i = 0; i < py->n; i++)
        h = (h ^ py->ids[i]) * 0x100000001b3ull;
    return h ^ (uint64_t)py->nseg << 48;
}

static inline uint32_t set_of(uint64_t ip, uint64_t sp, uint64_t pyh)
{
    uint64_t h = (ip ^ (sp * 0x9e3779b97f4a7c15ull) ^ (pyh * 0xc2b2ae3d27d4eb4full)) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 40) & (CACHE_SETS - 1);
}

static inline const uint64_t *entry_values(const struct cache_entry *e)
{
    return (const uint64_t *)(const void *)(e + 1);
}

static inline const struct cache_step *entry_steps(const struct cache_entry *e)
{
    return (const struct cache_step *)(const void *)(entry_values(e) + e->nsteps);
}

static inline const uint32_t *entry_py_ids(const struct cache_entry *e)
{
    return (const uint32_t *)(const void *)(entry_steps(e) + e->nsteps);
}

static inline const uint16_t *entry_py_segments(const struct cache_entry *e)
{
    return (const uint16_t *)(const void *)(entry_py_ids(e) + e->npy);
}

static bool same_python(const struct cache_entry *e, const struct cmt_py_stack *py)
{
    unsigned n = py ? py->n : 0, nseg = py ? py->nseg : 0;
    if (e->npy != n || e->nseg != nseg)
        return false;
    return n == 0 || (memcmp(entry_py_ids(e), py->ids, n * sizeof *py->ids) == 0 &&
                      memcmp(entry_py_segments(e), py->seg_end, nseg * sizeof *py->seg_end) == 0);
}

/* Whether the live stack is the one e recorded (the proof at the top). Reads
 * other frames' return-address and saved-rbp slots: never poisoned, but the
 * address sanitizer cannot know that they belong to no local. */
__attribute__((no_sanitize("address"))) static bool matches(const struct cache_entry *e,
                                                           const struct cmt_stack_origin *o)
{
    if (e->ip0 != o->ip || e->sp0 != o->sp)
        return false;
    if ((e->flags & ENTRY_NEEDS_RBP0) && e->rbp0 != o->rbp)
        return false;
    const uint64_t *values = entry_values(e);
    const struct cache_step *steps = entry_steps(e);
    const uint8_t *base = (const uint8_t *)(uintptr_t)o->sp;
    for (unsigned i = 0; i < e->nsteps; i++) {
        uint64_t v;
        __builtin_memcpy(&v, base + steps[i].offset, sizeof v);
        if (v != values[i])
            return false;
    }
    return true;
}

uint64_t cmt_stack_cache_lookup(const struct cmt_stack_origin *o, const struct cmt_py_stack *py, bool *uncacheable)
{
    *uncacheable = false;
    struct thread_cache *c = my_cache;
    if (!c)
        return 0;
    struct cache_entry **set = c->sets[set_of(o->ip, o->sp, py_hash(py))];
    uint32_t epoch = __atomic_load_n(&cache_epoch, __ATOMIC_ACQUIRE);
    for (unsigned w = 0; w < CACHE_WAYS; w++) {
        struct cache_entry *e = set[w];
        if (!e)
            break;
        if (e->epoch != epoch)
            continue;
        if (e->flags & ENTRY_UNCACHEABLE) {
            if (e->ip0 == o->ip && e->sp0 == o->sp) {
                *uncacheable = true;
                return 0;
            }
            continue;
        }
        if (!matches(e, o) || !same_python(e, py))
            continue;
        /* Most recently used first: a loop over a few call paths finds each
         * at the front in turn. */
        for (; w > 0; w--)
            set[w] = set[w - 1];
        set[0] = e;
        if (cmt_config.stack_cache == CMT_STACK_CACHE_CHECK)
            count(&stats.hits);
        return e->id;
    }
    return 0;
}

/* ---- filling ---------------------------------------------------------------- */

struct program {
    uint64_t values[2 * CMT_MAX_STACK_DEPTH + 2];
    struct cache_step steps[2 * CMT_MAX_STACK_DEPTH + 2];
    unsigned n;
    bool needs_rbp0;
};

static bool add_step(struct program *p, uint64_t sp0, uint64_t addr, uint64_t value)
{
    if (addr < sp0 || addr - sp0 > UINT32_MAX || p->n == sizeof p->steps / sizeof p->steps[0])
        return false;
    p->steps[p->n].offset = (uint32_t)(addr - sp0);
    p->values[p->n] = value;
    p->n++;
    return true;
}

/* Re-runs the unwind of frames 0..n-1 with the rules of unwind_rules.c,
 * recording every word it reads, and checks it reproduces what libunwind
 * found: the same return addresses, and each CFA equal to libunwind's stack
 * pointer of the next frame. Reads only slots that lie between two stack
 * pointers libunwind itself computed, so a rule we got wrong cannot make us
 * read outside the live stack. Caller holds the metadata lock. */
__attribute__((no_sanitize("address"))) static bool build_program(const struct cmt_stack_origin *o,
                                                                  const uint64_t *ips, const uint64_t *sps,
                                                                  unsigned n, bool cut, struct program *p)
{
    uint64_t sp = o->sp, rbp = o->rbp;
    /* Where rbp's current value was read from: 0 = the origin's register. */
    uint64_t rbp_slot = 0;
    bool rbp_slot_added = false;
    p->n = 0;
    p->needs_rbp0 = false;
    for (unsigned k = 0; k < n; k++) {
        /* Cut at the depth limit: what lies beyond is not part of the stack.
         * Otherwise the unwinder stopped at the last frame, and its rule must
         * say why (no caller) for the next unwind to stop there too. */
        if (k == n - 1 && cut)
            return true;
        struct cmt_frame_rule r = cmt_unwind_rule_at(ips[k] - 1);
        if (k == n - 1)
            return r.kind == CMT_RULE_OUTERMOST;
        if (r.kind != CMT_RULE_STANDARD)
            return false;
        uint64_t base = sp;
        if (r.cfa_reg == CMT_DWARF_RBP) {
            base = rbp;
            if (!rbp_slot)
                p->needs_rbp0 = true;
            else if (!rbp_slot_added) {
                if (!add_step(p, o->sp, rbp_slot, rbp))
                    return false;
                rbp_slot_added = true;
            }
        }
        uint64_t cfa = base + (uint64_t)(int64_t)r.cfa_offset;
        if (cfa != sps[k + 1] || cfa <= sp)
            return false;
        uint64_t ra_slot = cfa + (uint64_t)(int64_t)r.ra_offset;
        if (ra_slot < sp || ra_slot + 8 > cfa)
            return false;
        uint64_t ra;
        __builtin_memcpy(&ra, (const void *)(uintptr_t)ra_slot, sizeof ra);
        if (ra != ips[k + 1] || !add_step(p, o->sp, ra_slot, ra))
            return false;
        if (r.rbp_saved) {
            uint64_t slot = cfa + (uint64_t)(int64_t)r.rbp_offset;
            if (slot < sp || slot + 8 > cfa)
                return false;
            __builtin_memcpy(&rbp, (const void *)(uintptr_t)slot, sizeof rbp);
            rbp_slot = slot;
            rbp_slot_added = false;
        }
        sp = cfa;
    }
    return false; /* n == 0 */
}

static struct cache_entry *place_entry(struct thread_cache *c, unsigned nsteps, const struct cmt_py_stack *py)
{
    size_t size = sizeof(struct cache_entry) + nsteps * (sizeof(uint64_t) + sizeof(struct cache_step));
    if (py)
        size += py->n * sizeof(uint32_t) + py->nseg * sizeof(uint16_t);
    size = (size + 15) & ~(size_t)15;
    if (size > CACHE_REGION_BYTES)
        return NULL;
    if ((size_t)(c->end - c->bump) < size)
        reset_cache(c); /* full: start over rather than track what is free */
    struct cache_entry *e = (struct cache_entry *)(void *)c->bump;
    c->bump += size;
    return e;
}

void cmt_stack_cache_fill(const struct cmt_stack_origin *o, const struct cmt_py_stack *py, const uint64_t *ips,
                          const uint64_t *sps, unsigned n, unsigned walked, bool ended, uint64_t id)
{
    static struct program program; /* under the metadata lock: too big for a hook's stack */
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint32_t epoch = __atomic_load_n(&cache_epoch, __ATOMIC_ACQUIRE);
    if (rules_epoch != epoch) {
        cmt_unwind_rules_forget();
        rules_epoch = epoch;
    }
    struct thread_cache *c = thread_cache_locked();
    if (!c)
        goto out;
    bool cut = walked > n;
    bool ok = id != 0 && n > 0 && sps[0] == o->sp && ips[0] == o->ip && (cut || ended) &&
              build_program(o, ips, sps, n, cut, &program);
    struct cache_entry *e = place_entry(c, ok ? program.n : 0, py);
    if (!e)
        goto out;
    e->ip0 = o->ip;
    e->sp0 = o->sp;
    e->rbp0 = o->rbp;
    e->id = id;
    e->epoch = epoch;
    e->nsteps = ok ? (uint16_t)program.n : 0;
    e->flags = ok ? (program.needs_rbp0 ? ENTRY_NEEDS_RBP0 : 0) : ENTRY_UNCACHEABLE;
    e->npy = py ? py->n : 0;
    e->nseg = py ? py->nseg : 0;
    uint64_t *values = (uint64_t *)(void *)(e + 1);
    struct cache_step *steps = (struct cache_step *)(void *)(values + e->nsteps);
    for (unsigned i = 0; ok && i < program.n; i++) {
        values[i] = program.values[i];
        steps[i] = program.steps[i];
    }
    if (py) {
        memcpy((void *)entry_py_ids(e), py->ids, py->n * sizeof *py->ids);
        memcpy((void *)entry_py_segments(e), py->seg_end, py->nseg * sizeof *py->seg_end);
    }
    struct cache_entry **set = c->sets[set_of(o->ip, o->sp, py_hash(py))];
    for (unsigned w = CACHE_WAYS - 1; w > 0; w--)
        set[w] = set[w - 1];
    set[0] = e;
    count(ok ? &stats.fills : &stats.uncacheable);
out:
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
}

void cmt_stack_cache_invalidate(void)
{
    __atomic_fetch_add(&cache_epoch, 1, __ATOMIC_ACQ_REL);
}

void cmt_stack_cache_count_check(bool wrong)
{
    count(&stats.checked);
    if (wrong)
        count(&stats.wrong);
}

void cmt_stack_cache_stats(struct cmt_stack_cache_stats *out)
{
    out->hits = __atomic_load_n(&stats.hits, __ATOMIC_RELAXED);
    out->fills = __atomic_load_n(&stats.fills, __ATOMIC_RELAXED);
    out->uncacheable = __atomic_load_n(&stats.uncacheable, __ATOMIC_RELAXED);
    out->checked = __atomic_load_n(&stats.checked, __ATOMIC_RELAXED);
    out->wrong = __atomic_load_n(&stats.wrong, __ATOMIC_RELAXED);
}

#else /* no cache: every capture unwinds */

void cmt_stack_cache_init(void)
{
}

uint64_t cmt_stack_cache_lookup(const struct cmt_stack_origin *o, const struct cmt_py_stack *py, bool *uncacheable)
{
    (void)o, (void)py;
    *uncacheable = true;
    return 0;
}

void cmt_stack_cache_fill(const struct cmt_stack_origin *o, const struct cmt_py_stack *py, const uint64_t *ips,
                          const uint64_t *sps, unsigned n, unsigned walked, bool ended, uint64_t id)
{
    (void)o, (void)py, (void)ips, (void)sps, (void)n, (void)walked, (void)ended, (void)id;
}

void cmt_stack_cache_invalidate(void)
{
}

void cmt_stack_cache_count_check(bool wrong)
{
    (void)wrong;
}

void cmt_stack_cache_stats(struct cmt_stack_cache_stats *out)
{
    *out = (struct cmt_stack_cache_stats){0};
}

#endif
