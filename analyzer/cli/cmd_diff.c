/* SPDX-License-Identifier: MIT */
/* cumemtrace diff [OPTIONS] OLD NEW  (docs/report.md, "Comparing two runs") */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "command_options.h"
#include "diff.h"
#include "report.h"
#include "suppressions.h"
#include "symbol_options.h"

static void diff_usage(FILE *out)
{
    fputs("usage: cumemtrace diff [OPTIONS] OLD NEW\n"
          "\n"
          "Compares two runs call site by call site: the change in bytes live at the\n"
          "device peak, in bytes leaked (live at exit) and in allocation calls, largest\n"
          "change first. Call sites are matched by their frames (function, the file's\n"
          "name, line), as check's baselines match them: two checkouts of one source\n"
          "match.\n"
          "\n"
          "  --format FORMAT        text (default) or json: one object (docs/report.md)\n"
          "  -j, --json             --format json\n"
          "  -o, --output FILE      write the comparison to FILE instead of standard output\n"
          "  --top N                call sites listed in text (default 10, 0 = all)\n"
          "  --include-cached       count what caching allocators hold at exit as leaked\n"
          "  --suppressions FILE    leak:PATTERN lines, as for report and check (repeatable;\n"
          "                         also the files in CUMEMTRACE_SUPPRESSIONS): matching\n"
          "                         leaks are compared apart as suppressed, not as leaked\n"
          "  --no-default-suppressions  do not apply the built-in list (cuBLAS and cuDNN\n"
          "                         handles, PyTorch's cuBLAS workspaces)\n"
          "  --full-stacks          match and show every frame, folded ones too\n"
          "  --fold PATTERN         also fold frames matching the glob PATTERN (repeatable)\n"
          "  --unfold PATTERN       frames matching PATTERN are yours (repeatable)\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          CMT_MEMORY_OPTION_HELP
          "\n"
          "Exit status: 0 compared; 2 bad options, or a trace that cannot be read,\n"
          "is damaged or truncated (the comparison then covers the events before it).\n",
          out);
}

struct diff_cli {
    struct cmt_cli_options common; /* the shared options (command_options.h) */
    struct cmt_report_options opt;
};

static const struct cmt_cli_command diff_command = {
    .name = "diff",
    .view = CMT_VIEW_DIFF,
    .takes = CMT_TAKES_FORMAT | CMT_TAKES_JSON | CMT_TAKES_OUTPUT | CMT_TAKES_SYMBOLS | CMT_TAKES_TOP |
             CMT_TAKES_INCLUDE_CACHED | CMT_TAKES_SUPPRESSIONS,
    .usage = diff_usage,
};

static int parse_options(int argc, char **argv, struct diff_cli *cli, int *status)
{
    cli->common.format = (struct cmt_cli_format)CMT_CLI_FORMAT_INIT;
    cli->common.top = 10;
    int first = cmt_cli_parse(&diff_command, argc, argv, &cli->common, NULL, status);
    if (first < 0)
        return -1;
    if (argc - first != 2) {
        cmt_cli_error("diff: needs two traces, OLD and NEW; got %d", argc - first);
        cmt_cli_try_help("diff");
        return -1;
    }
    /* Every site at the peak is compared, not only the top rows shown. */
    cli->opt = (struct cmt_report_options){.top = SIZE_MAX, .max_frames = 0, .tree_min_percent = 100.0,
                                           .include_cached = cli->common.include_cached};
    cli->opt.frames.symbolizer.demangle = true;
    cmt_frames_args_apply(&cli->common.symbols, &cli->opt.frames);
    return first;
}

/* Reads one run into d. Returns the exit status (a damaged trace is
 * compared up to the damage and answers CMT_EXIT_USAGE), or -1 when it
 * cannot be compared at all. */
static int add_run(struct cmt_diff *d, int which, const char *path, const struct diff_cli *cli)
{
    struct cmt_analysis a;
    struct cmt_analysis_options aopt = {0};
    if (cmt_cli_analyse(&a, path, 0, &aopt) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_cli_analysis_free(&a);
        return -1;
    }
    struct cmt_report r;
    int rc = cmt_report_build(&r, &a, &cli->opt);
    if (rc == 0)
        rc = cmt_diff_add(d, which, &r, &a, path);
    int status = rc == 0 ? cmt_cli_damage_status(path, &a, "comparison") : -1;
    if (rc != 0)
        cmt_cli_error("%s: out of memory while comparing; free memory", path);
    cmt_report_free(&r);
    cmt_cli_analysis_free(&a);
    return status;
}

/* The leak suppressions `report` and `check` apply, so that each run's
 * leaks are the report's (docs/report.md, "Suppressed"). */
static int load_suppressions(struct diff_cli *cli, struct cmt_suppressions *s)
{
    char err[800];
    if (cmt_suppressions_load_all(s, cli->common.suppression_files, cli->common.n_suppression_files,
                                  cli->common.no_default_suppressions, err, sizeof err) != 0) {
        cmt_cli_error("diff: %s", err);
        return -1;
    }
    if (cmt_suppressions_attach(s, &cli->opt) != 0) {
        cmt_cli_error("diff: out of memory; free memory");
        return -1;
    }
    return 0;
}

static int diff_main(char **argv, struct diff_cli *cli, int first);

int cmt_cmd_diff(int argc, char **argv)
{
    struct diff_cli cli = {0};
    int status;
    int first = parse_options(argc, argv, &cli, &status);
    if (first < 0)
        return status;
    struct cmt_suppressions sup;
    cmt_suppressions_init(&sup);
    if (load_suppressions(&cli, &sup) != 0) {
        cmt_suppressions_free(&sup);
        return CMT_EXIT_USAGE;
    }
    status = diff_main(argv, &cli, first);
    cmt_suppressions_free(&sup);
    return status;
}

static int diff_main(char **argv, struct diff_cli *cli_in, int first)
{
    const struct diff_cli cli = *cli_in;
    int status;
    struct cmt_diff d;
    cmt_diff_init(&d);
    d.suppressions = cli.opt.suppressions;
    d.n_suppressions = cli.opt.n_suppressions;
    status = CMT_EXIT_OK;
    for (int which = 0; which < 2; which++) {
        int st = add_run(&d, which, argv[first + which], &cli);
        if (st < 0) {
            cmt_diff_free(&d);
            return CMT_EXIT_USAGE;
        }
        if (st != CMT_EXIT_OK)
            status = st;
    }
    cmt_diff_finish(&d);
    d.top = cli.common.top;
    FILE *out = cmt_cli_output_open("diff", cli.common.output);
    if (out) {
        cmt_cli_render(CMT_VIEW_DIFF, cli.common.format.format, &d, out);
        status = cmt_cli_output_close("diff", cli.common.output, out, out != stdout, status);
    } else {
        status = CMT_EXIT_USAGE;
    }
    cmt_diff_free(&d);
    return status;
}
