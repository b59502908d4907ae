/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_UNWIND_GATE_H
#define CUMEMTRACE_PRELOAD_UNWIND_GATE_H

/* libunwind takes internal locks while it unwinds. A fork() while another
 * thread is inside unw_backtrace leaves such a lock held forever in the child,
 * whose first stack capture then deadlocks (seen in tests/e2e forker threaded).
 * The gate lets fork wait until no thread is unwinding and holds new unwinds
 * back until it is done.
 *
 * Threads mark themselves in one of CMT_UNWIND_SLOTS padded counters (a slot
 * per thread, shared past that many threads), so the hot path writes only a
 * cache line of its own: one locked increment and one decrement per unwind. */

void cmt_unwind_gate_enter(void);
void cmt_unwind_gate_leave(void);

/* fork handlers: close the gate and wait for unwinders (prepare), open it
 * again in the parent, reset it in the child. */
void cmt_unwind_gate_fork_prepare(void);
void cmt_unwind_gate_fork_parent(void);
void cmt_unwind_gate_fork_child(void);

#endif
