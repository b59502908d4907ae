/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TOP_CLI_H
#define CUMEMTRACE_ANALYZER_TOP_CLI_H

#include <stdbool.h>

#include "top.h"

/* What `top` and `run --live` share of their options (cmd_top.c). */

/* --interval SECONDS: 0.1 to 60. Returns 0, or -1 when s is not one. */
int cmt_top_parse_interval(const char *s, unsigned *ms);
/* --sort KEY. Returns 0, or -1 when s is none of them. */
int cmt_top_parse_sort(const char *s, enum cmt_top_sort *out);
/* Colours unless --no-color was given or NO_COLOR is set (no-color.org:
 * set and not empty). */
bool cmt_top_color_wanted(bool no_color_option);

#endif
