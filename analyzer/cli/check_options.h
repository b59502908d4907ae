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

/* The getopt entries of every check option, the symbol options' included
 * (symbol_options.h), into out (room for CMT_CHECK_LONGOPTS_MAX); returns
 * how many, without a terminator. */
#define CMT_CHECK_LONGOPTS_MAX 48
size_t cmt_check_all_longopts(struct option *out);
/* Whether a getopt value is one of ours (the symbol options' too). */
bool cmt_check_is_option(int value);
/* Applies one option. Returns 0, or -1 after saying on stderr what is wrong
 * ("cumemtrace CMD: ..."). */
int cmt_check_parse_option(struct cmt_check_options *o, int value, const char *arg, const char *cmd);
/* Checks options that depend on each other. run_mode: `run --check`. */
int cmt_check_validate_options(const struct cmt_check_options *o, const char *cmd, bool run_mode);
/* The options' help, for both commands' usage texts. */
void cmt_check_options_help(FILE *out, bool run_mode);

/* Writes the report to --report-file, else to default_out; when it goes to
 * a file or is not text, the one-line results (and the suppressions table)
 * go to terminal as well. Returns 0, or -1 when the report file cannot be
 * written (said on stderr). cmd names the command in messages
 * (cmd_check.c). */
int cmt_check_write_report(struct cmt_check *c, const char *cmd, FILE *default_out, FILE *terminal);

#endif
