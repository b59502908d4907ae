/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_SUMMARIES_H
#define CUMEMTRACE_ANALYZER_REPORT_SUMMARIES_H

/* `report` given summaries (summary_file.h) or directories of them: the
 * summaries read, ordered as `report` orders traces and grouped by job into
 * the job view's model (report_set.h, struct cmt_summary_set), which the
 * renderers of CMT_VIEW_JOB print (docs/report.md, "A job at scale"). */

#include <stdbool.h>
#include <stddef.h>

#include "job.h"
#include "report_set.h"

struct cmt_loaded_summaries {
    struct cmt_summary_set set; /* job_columns and clock_tolerance_ns are the caller's to set */
    char **paths;               /* the summaries' files, in rank order */
    size_t n;
    struct cmt_process_summary *summaries;
    struct cmt_job_member *members;
    struct cmt_job_set jobs;
    bool grouped;
    char settings[1024]; /* the options they were made with */
};

/* Whether a report input is a summary, or a directory (of summaries). */
bool cmt_summaries_input(const char *path);
/* Reads the summaries paths name (directories: their *.cmtsum files, by
 * name) into l. Returns the exit status so far (0, or 2 when one could not
 * be read or holds a trace that could not: said on stderr, the rest are
 * there), or -1 when they do not belong in one report (said why; l is then
 * empty): a trace among them, different settings, a directory without
 * summaries, more than the memory budget. */
int cmt_summaries_load(char **paths, size_t n, struct cmt_loaded_summaries *l);
void cmt_summaries_free(struct cmt_loaded_summaries *l);

#endif
