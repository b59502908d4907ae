/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_DIFF_RENDER_H
#define CUMEMTRACE_ANALYZER_DIFF_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "diff.h"

struct cmt_json;

/* cumemtrace diff as text: the two runs, their totals, then the call sites
 * that changed, largest change first (top: how many; 0 = all). */
void cmt_diff_render_text(const struct cmt_diff *d, size_t top, FILE *out);
/* The same as one JSON object (every site that changed). */
void cmt_diff_render_json(const struct cmt_diff *d, struct cmt_json *j);

#endif
