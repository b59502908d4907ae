/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_XLA_NAMES_H
#define CUMEMTRACE_ANALYZER_XLA_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* XLA's compiler rule (docs/report.md, "Phases and steps"): the NVTX range
 * name is one XLA's GPU compiler opens while it optimises, emits and
 * compiles a module ("XlaCompile...", "XlaOptimize...", "XlaEmit...",
 * "XlaAutotun..."). The phases observer makes such a range one phase and
 * counts the ranges inside it as it; the renderers say "during XLA's
 * compilation of MODULE" where the peak or a failure fell inside one. */
bool cmt_xla_compile_range_name(const char *name, size_t len);

#endif
