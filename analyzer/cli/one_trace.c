/* SPDX-License-Identifier: MIT */
/* One trace analysed and reported (one_trace.h). */
#include "one_trace.h"

#include "cli.h"

int cmt_report_build_one(const char *path, const struct cmt_trace_build *how, struct cmt_built_report *b,
                         struct cmt_process_summary *summary, struct cmt_job_member *member)
{
    if (member)
        cmt_job_member_failed(path, member);
    b->built = false;
    struct cmt_analysis_options aopt = {.forensics = !how->no_forensics,
                                        .phases = true,
                                        .usage = true,
                                        .whatif = !how->no_whatif,
                                        .whatif_settings = how->whatif,
                                        .n_whatif_settings = how->n_whatif};
    if (cmt_cli_analyse(&b->a, path, how->opt->at_set ? how->opt->at_ns : 0, &aopt) != 0) {
        cmt_cli_error("%s: %s", path, b->a.message);
        if (summary)
            cmt_summary_failed(path, b->a.message, summary);
        cmt_cli_analysis_free(&b->a);
        return CMT_EXIT_USAGE;
    }
    if (cmt_report_build(&b->r, &b->a, how->opt) != 0) {
        cmt_cli_error("%s: out of memory while building the report; give fewer traces at a time, or free memory", path);
        if (summary)
            cmt_summary_failed(path, "out of memory while building the report", summary);
        cmt_report_free(&b->r);
        cmt_cli_analysis_free(&b->a);
        return CMT_EXIT_USAGE;
    }
    if (cmt_analysis_check_budget(&b->a)) {
        cmt_cli_error("%s: %s", path, b->a.message);
        if (summary)
            cmt_summary_failed(path, b->a.message, summary);
        cmt_report_free(&b->r);
        cmt_cli_analysis_free(&b->a);
        return CMT_EXIT_USAGE;
    }
    if (summary)
        cmt_summary_from_report(&b->r, &b->a, path, summary);
    if (member)
        cmt_job_member_from_report(&b->r, &b->a, path, member);
    b->built = true;
    return CMT_EXIT_OK;
}

void cmt_report_free_one(struct cmt_built_report *b)
{
    if (!b->built)
        return;
    cmt_report_free(&b->r);
    cmt_cli_analysis_free(&b->a);
    b->built = false;
}
