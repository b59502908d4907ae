/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SUMMARIZE_H
#define CUMEMTRACE_ANALYZER_SUMMARIZE_H

/* Traces summed up for the job view where they lie (cmd_summarize.c):
 * `cumemtrace summarize` and `run --summary`. */

#include <stdbool.h>
#include <stddef.h>

#include "frames.h"
#include "report.h"
#include "suppressions.h"
#include "ta_settings.h"

#define CMT_SUMMARIZE_MAX_SUPPRESSION_FILES 64

struct cmt_summarize_options {
    struct cmt_report_options opt; /* report's defaults, and the options given */
    struct cmt_frames_args symbols;
    struct cmt_ta_settings whatif[8];
    size_t n_whatif;
    const char *suppression_files[CMT_SUMMARIZE_MAX_SUPPRESSION_FILES];
    size_t n_suppression_files;
    bool no_default_suppressions;
    char settings[1024]; /* the options that shape figures (cmt_figure_options_describe): recorded in each summary */
    const char *output;  /* -o: a file (one trace) or a directory; NULL beside each trace */
    size_t jobs;         /* -j: traces at once; 0 one per core */
    struct cmt_suppressions suppressions;
};

/* The defaults: those of `report`, so that the figures are its own. */
void cmt_summarize_options_init(struct cmt_summarize_options *o);
/* Loads the suppressions o names (and the built-in list and
 * CUMEMTRACE_SUPPRESSIONS's) and applies the symbol options. Returns 0, or
 * -1 after saying why (cmd: the command, for the message). */
int cmt_summarize_options_ready(struct cmt_summarize_options *o, const char *cmd);
void cmt_summarize_options_free(struct cmt_summarize_options *o);

/* Summarises traces[0..n) into out_paths[i], in parallel (o->jobs worker
 * processes at most, 0: one per core). Returns the exit status: 0, or 2
 * when a trace could not be summarised or was damaged or cut (said on
 * stderr; its summary is written all the same). */
int cmt_summarize_traces(const char *const *traces, const char *const *out_paths, size_t n,
                         const struct cmt_summarize_options *o);

#endif
