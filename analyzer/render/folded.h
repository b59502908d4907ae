/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FOLDED_H
#define CUMEMTRACE_ANALYZER_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* Collapsed stacks for flamegraph.pl, inferno and speedscope (docs/export.md):
 * one line per call stack, frames outermost first joined by ';', a space and
 * the stack's bytes. The first frame names the account ("device 0",
 * "pinned host"), so several devices stay apart and the lines sum exactly
 * to the report's figures. */
enum cmt_folded_metric {
    CMT_FOLDED_PEAK,      /* live at each account's peak: sums to the peaks */
    CMT_FOLDED_LEAKS,     /* live at exit, memory only: sums to leaks.bytes */
    CMT_FOLDED_ALLOCATED, /* every byte allocated over the run (not VMM address space) */
};

/* Writes the lines; *total: the sum of their weights. Returns 0, or -1 when
 * out of memory. */
int cmt_folded_render(const struct cmt_report *r, enum cmt_folded_metric metric, FILE *out, uint64_t *total);

/* "name file.c:12" with ';' and line breaks replaced (frame separators). */
void cmt_folded_frame(const struct cmt_frame *f, char *buf, size_t len);

#endif
