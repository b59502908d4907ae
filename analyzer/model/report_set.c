/* SPDX-License-Identifier: MIT */
/* The report set's job view, grouped once every trace is read. */
#include "report_set.h"

void cmt_report_set_group_jobs(struct cmt_report_set *s)
{
    cmt_report_set_free_jobs(s);
    if (cmt_job_set_build(&s->job_set, s->members, s->n) == 0)
        s->jobs = &s->job_set;
}

void cmt_report_set_free_jobs(struct cmt_report_set *s)
{
    if (s->jobs)
        cmt_job_set_free(&s->job_set);
    s->jobs = NULL;
}
