/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ONE_TRACE_H
#define CUMEMTRACE_ANALYZER_ONE_TRACE_H

/* One trace analysed and its report built, with what `report` keeps of it
 * for the comparison and the job view: what `report` does per trace and
 * what `summarize` does, by the same code, so that a summary holds the
 * figures `report` gives from the trace (docs/design.md, "A job at scale:
 * summaries"). A leaf of the command line: it calls nothing of the
 * commands. */

#include <stdbool.h>
#include <stddef.h>

#include "analysis.h"
#include "compare.h"
#include "job.h"
#include "report.h"
#include "ta_settings.h"

/* How a trace is analysed and reported. */
struct cmt_trace_build {
    const struct cmt_report_options *opt;
    bool no_forensics, no_whatif;
    const struct cmt_ta_settings *whatif; /* the candidates replayed (whatif_report.h) */
    size_t n_whatif;
};

struct cmt_built_report {
    struct cmt_analysis a;
    struct cmt_report r;
    bool built;
};

/* Analyses path and builds its report; with summary and member, also fills
 * them (a trace that could not be analysed fills them as failed). Returns
 * the exit status so far (0, or 2 when nothing was built, said on stderr). */
int cmt_report_build_one(const char *path, const struct cmt_trace_build *how, struct cmt_built_report *b,
                         struct cmt_process_summary *summary, struct cmt_job_member *member);
void cmt_report_free_one(struct cmt_built_report *b);

#endif
