/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_STACKS_H
#define CUMEMTRACE_PRELOAD_STACKS_H

#include <stdint.h>

/* Stack capture (libunwind) and interning: each distinct stack is written to
 * the metadata stream once and referred to by id. Lookups of known stacks
 * take no lock; a new stack takes the metadata lock. */

void cmt_stacks_init(void);  /* once, at load: the shim's own range */
void cmt_stacks_reset(void); /* a new trace starts: forget every id */

/* A library was unloaded: stacks seen from now on are interned (and cached)
 * anew, so an id never stands for code that is gone. Any thread. */
void cmt_stacks_forget_code(void);

/* Captures the caller's stack (innermost user frame first, the shim's own
 * frames dropped) and returns its interned id; 0 when stacks are off or the
 * stack could not be recorded. */
uint64_t cmt_stack_capture(void);

/* The return address of the program's call into the shim, read from the
 * shim's own frame records only (stacks.c); 0 when it cannot be told
 * (another architecture, a frame chain that does not lead out). Safe in any
 * hook: a driver hook reached through a tail call or a wrapper alike. */
uint64_t cmt_stack_caller(void);

/* Interns frames[0..n) (innermost first); returns the id, or 0 when the
 * stack could not be written. Exposed for tests and benchmarks. */
uint64_t cmt_stack_intern(const uint64_t *frames, unsigned n);

#endif
