/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SYMBOL_OPTIONS_H
#define CUMEMTRACE_ANALYZER_SYMBOL_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "frames.h"

/* The symbol options every command that shows stacks takes (report, frag,
 * diff, export, check, run --check): --fold, --unfold, --full-stacks,
 * --debuginfo-path, --sysroot and --no-symbols. Parsed here once, into a
 * struct cmt_frames_args (frames.h). Their getopt values start at
 * CMT_SYMBOL_OPT_FIRST, apart from every command's own. */
#define CMT_SYMBOL_OPT_FIRST 400
#define CMT_SYMBOL_LONGOPTS_MAX 7

/* Appends their getopt entries to opts at *n (room for
 * CMT_SYMBOL_LONGOPTS_MAX more). Every command takes --no-symbols: a trace
 * is untrusted input, and --no-symbols opens none of the files it names. */
void cmt_symbol_longopts(struct option *opts, size_t *n);
/* Whether a getopt value is one of theirs. */
bool cmt_symbol_is_option(int value);
/* Applies one. Returns 0, or -1 after saying what is wrong ("cmd: ..."). */
int cmt_symbol_parse(const char *cmd, int value, const char *arg, struct cmt_frames_args *a);

/* --max-memory SIZE, which the same commands take (and timeline, which has
 * no symbol options): the process's memory budget (memory_budget.h); 0 is
 * none. Returns 0, or -1 after saying what is wrong. */
int cmt_memory_option(const char *cmd, const char *arg);
#define CMT_MEMORY_OPTION_HELP                                                                                       \
    "  --max-memory SIZE      refuse a trace whose analysis needs more memory (default:\n"                            \
    "                         half of this machine's; 0: no limit)\n"

#endif
