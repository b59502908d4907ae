/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_STACK_CACHE_H
#define CUMEMTRACE_PRELOAD_STACK_CACHE_H

#include <stdbool.h>
#include <stdint.h>

struct cmt_py_stack;

/* A per-thread cache of unwound stacks whose hits are proven exact
 * (stack_cache.c explains the proof). A program that allocates again and
 * again from the same call path gets its stack id back for the price of
 * reading one word per frame, instead of an unwind and an intern lookup. */

/* Where the program called into the shim: the return address into the
 * caller, the caller's stack pointer after the call returns (the CFA of the
 * outermost shim frame) and the caller's rbp. */
struct cmt_stack_origin {
    uint64_t ip, sp, rbp;
};

/* Counters, for CUMEMTRACE_STACK_CACHE=check and the tests. */
struct cmt_stack_cache_stats {
    uint64_t hits, fills, uncacheable, checked, wrong;
};

/* Once, at load. */
void cmt_stack_cache_init(void);

/* The stack id cached for this origin, verified against the live stack; 0
 * when there is none (the caller unwinds). *uncacheable tells the caller that
 * this origin's stack cannot be cached, so it should not try to fill. py: the
 * thread's Python frames now (python_frames.h), or NULL when it has none; a
 * cached stack is returned only for the very same Python frames, since the
 * native frames of the evaluation loop are the same whatever Python code it
 * runs. */
uint64_t cmt_stack_cache_lookup(const struct cmt_stack_origin *o, const struct cmt_py_stack *py, bool *uncacheable);

/* After a full unwind from origin o: ips and sps of the user frames (sps[k]
 * is frame k's stack pointer as the unwinder computed it, sps[0] == o->sp),
 * count of them recorded (n) and walked (walked >= n; walked > n means the
 * stack was cut at the depth limit), ended: the unwinder reached the
 * outermost frame. Builds the verification program and caches id; or marks
 * the origin uncacheable. py: the Python frames the stack was merged with
 * (NULL: none). Takes cmt_recorder.meta.lock. */
void cmt_stack_cache_fill(const struct cmt_stack_origin *o, const struct cmt_py_stack *py, const uint64_t *ips,
                          const uint64_t *sps, unsigned n, unsigned walked, bool ended, uint64_t id);

/* Every cached stack is forgotten: a new trace starts (ids restart), or a
 * library was unloaded (an address may now hold other code). Any thread. */
void cmt_stack_cache_invalidate(void);

/* CUMEMTRACE_STACK_CACHE=check: a hit whose id differed from a full
 * unwind's. */
void cmt_stack_cache_count_check(bool wrong);

void cmt_stack_cache_stats(struct cmt_stack_cache_stats *out);

#endif
