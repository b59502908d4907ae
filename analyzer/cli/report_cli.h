/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_CLI_H
#define CUMEMTRACE_ANALYZER_REPORT_CLI_H

/* What `report` and `summarize` share (cmd_report.c, cmd_summarize.c,
 * report_summaries.c): their options, and one trace analysed and reported,
 * so that a summary holds the figures `report` gives from the trace. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "cli.h"
#include "compare.h"
#include "job.h"
#include "report.h"
#include "symbol_options.h"
#include "ta_settings.h"

#define CMT_REPORT_MAX_SUPPRESSION_FILES 64

struct report_cli {
    bool summarize;     /* `summarize`: the options that shape a summary's figures, -o names where it goes */
    struct cmt_cli_format format;
    const char *output; /* -o FILE; NULL: stdout (summarize: beside each trace) */
    FILE *stream;       /* set by cmt_report_command's caller: the report goes there */
    struct cmt_report_options opt;
    struct cmt_frames_args symbols;
    bool no_forensics; /* --no-forensics */
    bool no_whatif;    /* --no-whatif */
    struct cmt_ta_settings whatif[8]; /* the candidates replayed (whatif_report.h) */
    size_t n_whatif;
    uint64_t clock_tolerance_ns; /* --clock-tolerance */
    const char *suppression_files[CMT_REPORT_MAX_SUPPRESSION_FILES]; /* --suppressions */
    size_t n_suppression_files;
    bool no_default_suppressions;
    /* The options given that shape a trace's figures, as given ("--at 2s
     * --include-cached"): a summary records them, and report refuses them
     * with summaries (they were applied where the traces lie). */
    char figure_options[1024];
    size_t jobs; /* summarize -j N: traces summarised at once (0: one per core) */
};

struct cmt_suppressions;
/* Loads the leak suppressions cli names (and the built-in list, and
 * CUMEMTRACE_SUPPRESSIONS's files) into s and attaches them to cli->opt.
 * Returns 0, or -1 after saying why. */
int cmt_report_load_suppressions(struct report_cli *cli, struct cmt_suppressions *s);

/* The options' defaults (what parsing starts from). */
void cmt_report_cli_defaults(struct report_cli *cli);

/* One trace analysed and its report built; what the renderers get. */
struct cmt_built_report {
    struct cmt_analysis a;
    struct cmt_report r;
    bool built;
};

/* Analyses path and builds its report; with summary and member, also fills
 * them (a trace that could not be analysed fills them as failed). Returns
 * the exit status so far (0, or 2 when nothing was built, said on stderr). */
int cmt_report_build_one(const char *path, const struct report_cli *cli, struct cmt_built_report *b,
                         struct cmt_process_summary *summary, struct cmt_job_member *member);
void cmt_report_free_one(struct cmt_built_report *b);

/* Where the report goes: -o FILE or stdout. NULL (with a message) when the
 * file cannot be created. */
FILE *cmt_report_open_output(const struct report_cli *cli);
/* Flushes and closes what cmt_report_open_output opened; CMT_EXIT_USAGE
 * when writing failed, else status. */
int cmt_report_close_output(const struct report_cli *cli, FILE *out, int status);

/* `report` given summaries (or directories of them): the comparison and
 * the job view from them (report_summaries.c). */
int cmt_report_from_summaries(char **paths, size_t n, const struct report_cli *cli);
/* Whether a report input is a summary or a directory (then of summaries). */
bool cmt_report_input_is_summary(const char *path);

/* `summarize` once its options are parsed (cmd_summarize.c). */
int cmt_summarize_main(char **traces, size_t n, const struct report_cli *cli);
/* Summarises traces[0..n) in parallel (jobs processes at most, 0: one per
 * core), each into out_paths[i]: what `summarize` and `run --summary` do.
 * Returns the exit status: 0, or 2 when a trace could not be summarised
 * or was damaged (said on stderr). */
int cmt_summarize_traces(const char *const *traces, const char *const *out_paths, size_t n, const struct report_cli *cli);
/* The options of `summarize` with their defaults, for `run --summary`. */
void cmt_summarize_defaults(struct report_cli *cli);

#endif
