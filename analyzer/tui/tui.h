/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TUI_H
#define CUMEMTRACE_ANALYZER_TUI_H

#include <stdbool.h>
#include <stddef.h>

#include "top.h"

/* The live view of `cumemtrace top` and `run --live` (docs/top.md): an
 * ncurses screen over a struct cmt_top, polled and drawn once per interval
 * and at a key, never in between. Colours only where the terminal has them
 * and NO_COLOR is not set; sizes from the terminal, redrawn when it
 * changes. */

struct cmt_tui_options {
    unsigned interval_ms;
    bool color;            /* false: NO_COLOR (attributes such as bold and reverse stay) */
    enum cmt_top_sort sort;
    enum cmt_top_view view;
    /* Called before each poll (run --live: traces the run's processes
     * listed since, the program's end). May be NULL. */
    void (*on_tick)(void *ctx, struct cmt_top *t);
    void *ctx;
    /* run --live: where the program's output goes, its last line shown. */
    const char *program_output;
    /* Quits by itself once every trace ended and this is true (run --live
     * sets it when the program ended and `--live-exit` was given). */
    bool (*done)(void *ctx);
};

/* Runs the view until q (or ^C, or done). Returns 0, or -1 with the reason
 * in err (no terminal, out of memory). */
int cmt_tui_run(struct cmt_top *t, const struct cmt_tui_options *o, char *err, size_t errlen);

#endif
