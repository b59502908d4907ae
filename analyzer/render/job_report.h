/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_JOB_REPORT_H
#define CUMEMTRACE_ANALYZER_JOB_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"

/* The job view (job.h) as text and as JSON (docs/report.md, "A job of
 * several processes"). columns: the side-by-side timeline's width (0: none);
 * tolerance_ns: how far apart the clocks of two hosts may be, stated when a
 * job spans several. */
struct cmt_job_render_options {
    size_t columns;
    uint64_t tolerance_ns;
    bool from_summaries; /* no section per trace above the view */
};

void cmt_job_render_text(const struct cmt_job_set *s, const struct cmt_job_render_options *opt, FILE *out);
struct cmt_json;
/* An array of jobs, one object each. */
void cmt_job_render_json(const struct cmt_job_set *s, const struct cmt_job_render_options *opt, struct cmt_json *j);

#endif
