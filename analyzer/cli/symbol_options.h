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
#define CMT_SYMBOL_LONGOPTS_MAX 6

/* Appends their getopt entries to opts at *n (room for
 * CMT_SYMBOL_LONGOPTS_MAX more). Every command takes --no-symbols: a trace
 * is untrusted input, and --no-symbols opens none of the files it names. */
void cmt_symbol_longopts(struct option *opts, size_t *n);
/* Whether a getopt value is one of theirs. */
bool cmt_symbol_is_option(int value);
/* Applies one. Returns 0, or -1 after saying what is wrong ("cmd: ..."). */
int cmt_symbol_parse(const char *cmd, int value, const char *arg, struct cmt_frames_args *a);

#endif
