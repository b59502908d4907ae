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
#include "frames.h"
#include "compare.h"
#include "job.h"
#include "report.h"
#include "ta_settings.h"

/* How a trace is analysed and reported. */
struct cmt_trace_build {
    const struct cmt_report_options *opt;
    bool no_forensics, no_whatif;
    /* The phases not followed: what is built shows no phase (summaries). */
    bool no_phases;
    /* The usage views (site_calls.h, thread_use.h) not followed: the
     * renderer shows none (HTML, summaries); about a tenth of a replay. */
    bool no_usage;
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

/* The options that shape a trace's figures (as opposed to how a report
 * shows them): a summary records them, and `report` refuses them with
 * summaries, made where the traces lie. */
struct cmt_figure_options {
    uint64_t at_ns; /* --at; 0 none */
    bool include_cached;
    bool allowance_set;
    uint64_t allowance; /* --context-allowance */
    const char *const *suppression_files;
    size_t n_suppression_files;
    bool no_default_suppressions;
    const struct cmt_frames_args *symbols;
    const char *env_suppressions; /* CUMEMTRACE_SUPPRESSIONS when it applies, else NULL */
};
/* Them as options, canonical (times in ns, sizes in bytes, in one order):
 * "" for the defaults; "--at 2000000000ns --include-cached" and so on. */
void cmt_figure_options_describe(const struct cmt_figure_options *f, char *out, size_t len);

#endif
