/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_PROGRESS_H
#define CUMEMTRACE_ANALYZER_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

/* Progress of a long analysis on stderr, only when stderr is a terminal and
 * not in CI (CI set): one line rewritten in place, erased when done, so
 * nothing of it stays in a terminal's scrollback or reaches a pipe or a log
 * (docs/cli.md, "Terminal"). */
struct cmt_progress {
    bool on;
    size_t n;
};

void cmt_progress_init(struct cmt_progress *p, size_t traces);
/* Trace i (of n) is being read. */
void cmt_progress_trace(struct cmt_progress *p, size_t i, const char *path);
/* Erases the line. */
void cmt_progress_done(struct cmt_progress *p);

/* Colour for text on stdout: a terminal, NO_COLOR unset or empty
 * (no-color.org), TERM not "dumb". */
bool cmt_colour_wanted(void);

#endif
