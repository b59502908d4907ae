/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CHECK_OPTIONS_H
#define CUMEMTRACE_ANALYZER_CHECK_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "check.h"

/* The options of `cumemtrace check`, shared with `cumemtrace run --check`.
 * Their getopt values start at CMT_CHECK_OPT_FIRST, so a command can put them
 * beside its own in one table. */

#define CMT_CHECK_OPT_FIRST 300

/* The long options, terminated by a zero entry. */
extern const struct option cmt_check_longopts[];
extern const size_t cmt_check_longopts_count; /* without the terminator */

/* Whether a getopt value is one of ours. */
bool cmt_check_is_option(int value);
/* Applies one option. Returns 0, or -1 after saying on stderr what is wrong
 * ("cumemtrace CMD: ..."). */
int cmt_check_parse_option(struct cmt_check_options *o, int value, const char *arg, const char *cmd);
/* Says what getopt_long (with opterr = 0 and a ':' first in the short
 * options) rejected: '?' an unknown option, ':' a missing value. */
void cmt_check_option_error(const char *cmd, int value, char *const *argv);
/* Checks options that depend on each other. run_mode: `run --check`. */
int cmt_check_validate_options(const struct cmt_check_options *o, const char *cmd, bool run_mode);
/* The options' help, for both commands' usage texts. */
void cmt_check_options_help(FILE *out, bool run_mode);

#endif
