/* SPDX-License-Identifier: MIT */
/* One trace analysed and reported (one_trace.h). */
#include "one_trace.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmt_report_build_one(const char *path, const struct cmt_trace_build *how, struct cmt_built_report *b,
                         struct cmt_process_summary *summary, struct cmt_job_member *member)
{
    if (member)
        cmt_job_member_failed(path, member);
    b->built = false;
    struct cmt_analysis_options aopt = {.forensics = !how->no_forensics,
                                        .phases = !how->no_phases,
                                        .usage = !how->no_usage,
                                        .whatif = !how->no_whatif,
                                        .whatif_settings = how->whatif,
                                        .n_whatif_settings = how->n_whatif,
                                        /* the holders followed as the trace is read: no second reading */
                                        .holder_frames = &how->opt->frames,
                                        .holder_peaks = how->opt->holder_peaks};
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

static void append(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t len, const char *fmt, ...)
{
    size_t used = strlen(out);
    if (used + 1 >= len)
        return;
    if (used)
        out[used++] = ' ', out[used] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + used, len - used, fmt, ap);
    va_end(ap);
}

void cmt_figure_options_describe(const struct cmt_figure_options *f, char *out, size_t len)
{
    out[0] = 0;
    if (f->at_ns)
        append(out, len, "--at %" PRIu64 "ns", f->at_ns);
    if (f->include_cached)
        append(out, len, "--include-cached");
    if (f->allowance_set)
        append(out, len, "--context-allowance %" PRIu64, f->allowance);
    for (size_t i = 0; i < f->n_suppression_files; i++)
        append(out, len, "--suppressions %s", f->suppression_files[i]);
    if (f->no_default_suppressions)
        append(out, len, "--no-default-suppressions");
    const struct cmt_frames_args *a = f->symbols;
    if (a) {
        if (a->full_stacks)
            append(out, len, "--full-stacks");
        for (size_t i = 0; i < a->n_folds; i++)
            append(out, len, "--fold %s", a->folds[i]);
        for (size_t i = 0; i < a->n_unfolds; i++)
            append(out, len, "--unfold %s", a->unfolds[i]);
        for (size_t i = 0; i < a->n_debuginfo_paths; i++)
            append(out, len, "--debuginfo-path %s", a->debuginfo_paths[i]);
        if (a->sysroot)
            append(out, len, "--sysroot %s", a->sysroot);
        if (a->no_symbols)
            append(out, len, "--no-symbols");
    }
    if (f->env_suppressions && *f->env_suppressions)
        append(out, len, "CUMEMTRACE_SUPPRESSIONS=%s", f->env_suppressions);
}
