/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FOLDED_H
#define CUMEMTRACE_ANALYZER_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "export_model.h"

/* Collapsed stacks for flamegraph.pl, inferno and speedscope (docs/export.md):
 * one line per call stack, frames outermost first joined by ';', a space and
 * the stack's bytes. The first frame names the account ("device 0",
 * "pinned host"), so several devices stay apart and the lines sum exactly
 * to the report's figures. */
/* The renderer (renderer_list.h). */
void cmt_folded_render(const struct cmt_folded_model *m, FILE *out);

/* "name file.c:12" with ';' and line breaks replaced (frame separators). */
void cmt_folded_frame(const struct cmt_frame *f, char *buf, size_t len);

#endif
