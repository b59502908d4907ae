/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_SET_H
#define CUMEMTRACE_ANALYZER_REPORT_SET_H

#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "job.h"
#include "report.h"

/* Several traces reported one after the other (`cumemtrace report
 * rank*.bin`), in rank order, then compared. The renderer pulls each
 * report in turn (report, then done), so one report is in memory at a time; pulling
 * trace i fills summaries[i] (compare.h), which the comparison reads after
 * the last. */
struct cmt_report_set {
    size_t n;
    const char *const *paths;     /* in the order reported */
    const int64_t *ranks;         /* -1: none recorded */
    struct cmt_process_summary *summaries;
    /* Pulling trace i also fills members[i] (job.h): the job view groups
     * them by job after the last. */
    struct cmt_job_member *members;
    size_t job_columns;          /* the job view's timeline width (--chart-width) */
    uint64_t clock_tolerance_ns; /* --clock-tolerance */
    /* The report of trace i, valid until the next call; NULL when the trace
     * could not be analysed (summaries[i].error says why). */
    const struct cmt_report *(*report)(void *ctx, size_t i);
    /* Called once trace i is written (its report is no longer needed);
     * after the last, the source groups the members by job
     * (cmt_report_set_group_jobs). */
    void (*done)(void *ctx, size_t i);
    void *ctx;
    /* The job view's model, set once the last trace is done: &job_set, or
     * NULL when grouping ran out of memory. */
    const struct cmt_job_set *jobs;
    struct cmt_job_set job_set;
};

/* The job view from summaries (`report` given the files of `cumemtrace
 * summarize`, summary_file.h): the comparison and the job view of the
 * traces they sum up, without the traces (docs/report.md, "A job at
 * scale"). */
struct cmt_summary_set {
    size_t n;
    const char *const *paths;                     /* the summaries' files, in rank order */
    const struct cmt_process_summary *summaries;  /* their comparison rows */
    const struct cmt_job_member *members;         /* their job members */
    const struct cmt_job_set *jobs;               /* grouped by job; NULL when out of memory */
    size_t job_columns;                           /* --chart-width */
    uint64_t clock_tolerance_ns;                  /* --clock-tolerance */
    const char *settings;                         /* the options the summaries were made with ("" none) */
};

/* Groups s->members by job into s->job_set and points s->jobs at it (NULL
 * when out of memory); call once all members are filled. */
void cmt_report_set_group_jobs(struct cmt_report_set *s);
void cmt_report_set_free_jobs(struct cmt_report_set *s);

#endif
