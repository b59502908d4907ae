/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SYMBOL_OPTIONS_H
#define CUMEMTRACE_ANALYZER_SYMBOL_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "frames.h"

/* The symbol options every command that shows stacks takes (report, frag,
 * check, run --check): --fold, --unfold, --full-stacks, --debuginfo-path,
 * --sysroot and, but for check, --no-symbols. Parsed here once, into a
 * struct cmt_frames_args (frames.h). Their getopt values start at
 * CMT_SYMBOL_OPT_FIRST, apart from every command's own. */
#define CMT_SYMBOL_OPT_FIRST 400
#define CMT_SYMBOL_LONGOPTS_MAX 6

/* Appends their getopt entries to opts at *n (room for
 * CMT_SYMBOL_LONGOPTS_MAX more); with_no_symbols: --no-symbols too (check
 * has none: its findings are located by symbols). */
void cmt_symbol_longopts(struct option *opts, size_t *n, bool with_no_symbols);
/* Whether a getopt value is one of theirs. */
bool cmt_symbol_is_option(int value);
/* Applies one. Returns 0, or -1 after saying what is wrong ("cmd: ..."). */
int cmt_symbol_parse(const char *cmd, int value, const char *arg, struct cmt_frames_args *a);

#endif
