/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_MEMORY_BUDGET_H
#define CUMEMTRACE_ANALYZER_MEMORY_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* The analyzer's memory budget (--max-memory, docs/cli.md): a trace whose
 * analysis needs more is refused with a clear message rather than left to
 * the kernel's OOM killer. The analyzer's memory grows with a trace's
 * distinct call stacks, live allocations and strings, a few hundred bytes
 * each (docs/performance.md, "Memory on hostile traces"); a crafted trace
 * can hold millions of them in a file of tens of megabytes. */

/* What the process uses now: the sanitizer's count of allocated bytes
 * under AddressSanitizer (its shadow and quarantine are not the analyzer's),
 * else its anonymous resident memory (/proc/self/statm: resident less
 * shared, so the mapped trace file does not count). 0 when unknown. */
uint64_t cmt_memory_in_use(void);

/* The machine's memory: physical, or the cgroup's limit when lower. */
uint64_t cmt_memory_of_machine(void);

/* The default budget: half of cmt_memory_of_machine(). */
uint64_t cmt_memory_default_budget(void);

/* The process-wide budget; 0: none. cmt_memory_budget() is the default
 * until set. */
void cmt_memory_budget_set(uint64_t bytes);
uint64_t cmt_memory_budget(void);

/* True when the memory in use is over the budget; *in_use gets it. */
bool cmt_memory_over_budget(uint64_t *in_use);

#endif
