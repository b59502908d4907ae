/* SPDX-License-Identifier: MIT */
/* The stack cache (preload/stacks/stack_cache.c) and its key: an entry is
 * found by where the program called in (ip_0, sp_0) and the thread's Python
 * frames, and a hit is taken only when every word the unwind read still
 * holds what it held. stack_cache.c is compiled in alone over a stack built
 * in an array: the unwind rules are a stub (every frame rsp-based, CFA =
 * sp + 16, the return address just below it), so frame k's return address
 * lives at stack[2k + 1] and the test decides what each frame holds. The
 * cache is built with one set (tests/unit/meson.build): every entry
 * collides with every other, and only the key and the words tell them
 * apart.
 *
 *   same stack                       -> the same id
 *   a different return address       -> a miss (the caller unwinds)
 *   another origin or Python frames  -> a miss
 *   one key, several stacks          -> each its own id, up to the set's ways;
 *                                       one more evicts the least recently used
 *   the cache's region full          -> emptied whole, the new entry kept
 *   an invalidation                  -> every entry a miss
 *   a frame without standard rules   -> the origin marked uncacheable */
#include <pthread.h>

#include "config.h"
#include "python_frames.h"
#include "recorder.h"
#include "stack_cache.h"
#include "test_util.h"
#include "unwind_rules.h"

/* What stack_cache.c takes from the recorder: its metadata lock and the
 * thread's hook depth. */
struct cmt_recorder cmt_recorder = {.start_lock = PTHREAD_MUTEX_INITIALIZER, .meta = {.lock = PTHREAD_MUTEX_INITIALIZER}};
__thread struct cmt_thread cmt_thread_state __attribute__((tls_model("initial-exec")));

/* The unwind rules: code at UNSUPPORTED_PC has none we can use; at
 * OUTERMOST_PC is the thread's first frame; everything else is standard. */
#define UNSUPPORTED_PC 0x6000u
#define OUTERMOST_PC 0x7000u

struct cmt_frame_rule cmt_unwind_rule_at(uint64_t pc)
{
    if (pc == UNSUPPORTED_PC - 1)
        return (struct cmt_frame_rule){.kind = CMT_RULE_UNSUPPORTED};
    if (pc == OUTERMOST_PC - 1)
        return (struct cmt_frame_rule){.kind = CMT_RULE_OUTERMOST};
    return (struct cmt_frame_rule){
        .kind = CMT_RULE_STANDARD, .cfa_reg = CMT_DWARF_RSP, .cfa_offset = 16, .ra_offset = -8};
}

static unsigned rules_forgotten;

void cmt_unwind_rules_forget(void)
{
    rules_forgotten++;
}

#if defined(__x86_64__)

#define FRAMES 64 /* big entries: a few hundred fill the region */
static uint64_t stack[2 * FRAMES + 2];
static uint64_t stack_copy[2 * FRAMES + 2]; /* the same words at another stack pointer */

/* Lays out a stack of n frames whose return addresses are ips[1..n) and
 * fills the cache with id for it, from origin (ips[0], &stack[0]); cut: the
 * unwind stopped at the depth limit (else it ended at an outermost frame). */
static struct cmt_stack_origin lay_out(const uint64_t *ips, unsigned n, uint64_t *sps)
{
    for (unsigned k = 0; k < n; k++) {
        sps[k] = (uint64_t)(uintptr_t)&stack[2 * k];
        if (k + 1 < n)
            stack[2 * k + 1] = ips[k + 1];
    }
    return (struct cmt_stack_origin){.ip = ips[0], .sp = sps[0], .rbp = 0};
}

static void fill(const uint64_t *ips, unsigned n, bool cut, const struct cmt_py_stack *py, uint64_t id)
{
    uint64_t sps[FRAMES];
    struct cmt_stack_origin o = lay_out(ips, n, sps);
    cmt_stack_cache_fill(&o, py, ips, sps, n, cut ? n + 1 : n, !cut, id);
}

/* The id found for the stack as the array holds it now, from origin ip. */
static uint64_t lookup_at(uint64_t ip, uint64_t sp, const struct cmt_py_stack *py, bool *uncacheable)
{
    struct cmt_stack_origin o = {.ip = ip, .sp = sp, .rbp = 0};
    return cmt_stack_cache_lookup(&o, py, uncacheable);
}

static uint64_t lookup(uint64_t ip, const struct cmt_py_stack *py)
{
    bool uncacheable;
    uint64_t id = lookup_at(ip, (uint64_t)(uintptr_t)&stack[0], py, &uncacheable);
    CHECK(!uncacheable);
    return id;
}

/* Writes the return addresses of a stack whose frame 0 is at ip. */
static void set_stack(const uint64_t *ips, unsigned n)
{
    uint64_t sps[FRAMES];
    lay_out(ips, n, sps);
}

static struct cmt_stack_cache_stats stats(void)
{
    struct cmt_stack_cache_stats s;
    cmt_stack_cache_stats(&s);
    return s;
}

int main(void)
{
    cmt_config.stack_cache = CMT_STACK_CACHE_CHECK; /* hits are counted */
    cmt_stack_cache_init();

    /* Same stack, same id; the hit read each frame's return address. */
    const uint64_t a[5] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
    fill(a, 5, true, NULL, 7);
    CHECK_EQ_U64(stats().fills, 1);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    CHECK_EQ_U64(stats().hits, 2);

    /* Another stack behind the same origin: one return address differs,
     * deep or near; a miss each time, a hit again once it holds again. */
    stack[7] = 0x5001; /* frame 3's return address */
    CHECK_EQ_U64(lookup(0x1000, NULL), 0);
    stack[7] = 0x5000;
    stack[1] = 0x2001; /* frame 0's */
    CHECK_EQ_U64(lookup(0x1000, NULL), 0);
    stack[1] = 0x2000;
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    /* What lies beyond the depth limit is not part of the stack. */
    stack[9] = 0xdead;
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);

    /* Another origin: another instruction, or the same one at another
     * stack pointer, even over the very same words. */
    CHECK_EQ_U64(lookup(0x1001, NULL), 0);
    bool uncacheable;
    memcpy(stack_copy, stack, sizeof stack);
    CHECK_EQ_U64(lookup_at(0x1000, (uint64_t)(uintptr_t)&stack_copy[0], NULL, &uncacheable), 0);
    CHECK(!uncacheable);

    /* The Python frames are part of the key: one native stack, three
     * Python call paths (none, f, g), three ids. */
    static struct cmt_py_stack py_f = {.n = 1, .nseg = 1, .seg_end = {1}, .ids = {11}};
    static struct cmt_py_stack py_g = {.n = 1, .nseg = 1, .seg_end = {1}, .ids = {12}};
    static struct cmt_py_stack py_f2 = {.n = 2, .nseg = 1, .seg_end = {2}, .ids = {11, 12}};
    fill(a, 5, true, &py_f, 8);
    fill(a, 5, true, &py_g, 9);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    CHECK_EQ_U64(lookup(0x1000, &py_f), 8);
    CHECK_EQ_U64(lookup(0x1000, &py_g), 9);
    CHECK_EQ_U64(lookup(0x1000, &py_f2), 0);

    /* One key, several stacks (call paths that reach one instruction at
     * one stack pointer): each keeps its id, told apart by its words. The
     * set holds four entries, most recently used first: [9 8 7] now. */
    const uint64_t b[5] = {0x1000, 0x2000, 0x3000, 0x4100, 0x5000};
    fill(b, 5, true, NULL, 10);
    CHECK_EQ_U64(lookup(0x1000, NULL), 10);
    set_stack(a, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    /* A set holds four stacks: a fifth evicts the least recently used.
     * [7 10 9 8]; c and d evict 8 and 9: [21 20 7 10]; a used: [7 21 20
     * 10]; e evicts b (10), not a, filled before it but used since. */
    const uint64_t c[5] = {0x1000, 0x2000, 0x3000, 0x4200, 0x5000};
    const uint64_t d[5] = {0x1000, 0x2000, 0x3000, 0x4300, 0x5000};
    const uint64_t e[5] = {0x1000, 0x2000, 0x3000, 0x4400, 0x5000};
    fill(c, 5, true, NULL, 20);
    fill(d, 5, true, NULL, 21);
    set_stack(a, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7); /* a: most recently used */
    fill(e, 5, true, NULL, 22);
    set_stack(b, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 0); /* b: evicted */
    set_stack(a, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    set_stack(c, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 20);
    set_stack(d, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 21);
    set_stack(e, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 22);

    /* A stack that ended at the thread's first frame caches; one whose
     * last frame the rules cannot show to be the first does not. */
    const uint64_t ended[3] = {0x1100, 0x2000, OUTERMOST_PC};
    fill(ended, 3, false, NULL, 30);
    CHECK_EQ_U64(lookup(0x1100, NULL), 30);
    const uint64_t not_ended[3] = {0x1200, 0x2000, 0x3000};
    fill(not_ended, 3, false, NULL, 31);
    CHECK_EQ_U64(lookup_at(0x1200, (uint64_t)(uintptr_t)&stack[0], NULL, &uncacheable), 0);
    CHECK(uncacheable);
    /* A frame without standard rules on the way: the origin is marked, and
     * the caller stops trying to fill it. */
    const uint64_t odd[4] = {0x1300, UNSUPPORTED_PC, 0x3000, 0x4000};
    uint64_t fills = stats().fills, marked = stats().uncacheable;
    fill(odd, 4, true, NULL, 32);
    CHECK_EQ_U64(stats().fills, fills);
    CHECK_EQ_U64(stats().uncacheable, marked + 1);
    CHECK_EQ_U64(lookup_at(0x1300, (uint64_t)(uintptr_t)&stack[0], NULL, &uncacheable), 0);
    CHECK(uncacheable);
    /* So is a stack without an id (interning failed). The mark is the
     * native origin's, whatever the Python frames. */
    const uint64_t no_id[5] = {0x1400, 0x2000, 0x3000, 0x4000, 0x5000};
    fill(no_id, 5, true, &py_f2, 0);
    CHECK_EQ_U64(lookup_at(0x1400, (uint64_t)(uintptr_t)&stack[0], &py_f2, &uncacheable), 0);
    CHECK(uncacheable);

    /* An invalidation (a library unloaded, a new trace): every entry is a
     * miss, and the next fill reads the unwind rules afresh. (The four
     * fills above took the set's ways: a is filled again.) */
    fill(a, 5, true, NULL, 7);
    fill(ended, 3, false, NULL, 30);
    CHECK_EQ_U64(lookup(0x1100, NULL), 30);
    set_stack(a, 5);
    CHECK_EQ_U64(lookup(0x1000, NULL), 7);
    cmt_stack_cache_invalidate();
    CHECK_EQ_U64(lookup(0x1000, NULL), 0);
    set_stack(ended, 3);
    CHECK_EQ_U64(lookup(0x1100, NULL), 0);
    set_stack(a, 5);
    unsigned forgotten = rules_forgotten;
    fill(a, 5, true, NULL, 40);
    CHECK_EQ_U64(rules_forgotten, forgotten + 1);
    CHECK_EQ_U64(lookup(0x1000, NULL), 40);

    /* The region full: entries are not freed one by one, the cache empties
     * whole and keeps the entry that did not fit. Fill distinct origins
     * (frame 0 at 0x10000 + i): each time the entry before it is still
     * found (the set's ways keep the last four), until the one fill after
     * which it is not: then the three before it are gone too. */
    const unsigned max_entries = 100000;
    uint64_t first = 0x10000;
    unsigned i;
    uint64_t f[FRAMES];
    for (unsigned k = 1; k < FRAMES; k++)
        f[k] = 0x100000 + 16 * k;
    for (i = 0; i < max_entries; i++) {
        f[0] = first + i;
        fill(f, FRAMES, true, NULL, 1000 + i);
        if (i > 0 && lookup(first + i - 1, NULL) == 0)
            break;
        /* Oldest first: the set ends most recent first, as filled. */
        for (int back = i < 3 ? (int)i : 3; back >= 0; back--)
            CHECK_EQ_U64(lookup(first + i - (unsigned)back, NULL), 1000 + i - (unsigned)back);
    }
    CHECK(i > 100 && i < max_entries); /* 256 KiB of entries of 63 steps: about 300 fit */
    for (unsigned back = 1; back <= 3; back++)
        CHECK_EQ_U64(lookup(first + i - back, NULL), 0);
    CHECK_EQ_U64(lookup(first + i, NULL), 1000 + i);
    CHECK_EQ_U64(stats().wrong, 0);
    return 0;
}

#else

int main(void)
{
    return 77; /* only x86-64 caches stacks */
}

#endif
