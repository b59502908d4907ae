/* SPDX-License-Identifier: MIT */
/* cumemtrace check [OPTIONS] TRACE... */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_options.h"
#include "cli.h"
#include "command_options.h"

static void check_usage(FILE *out)
{
    fputs("usage: cumemtrace check [OPTIONS] TRACE...\n"
          "\n"
          "Fails when a trace leaks, peaks over a budget, or its program did not survive a\n"
          "failed allocation, for CI.\n"
          "`cumemtrace run --check [OPTIONS] -- PROGRAM` runs a program and checks its traces.\n"
          "\n",
          out);
    cmt_check_options_help(out, false);
    fputs("\n"
          "Exit status: 0 every trace passed; 1 (or --error-exitcode) a limit was exceeded;\n"
          "2 bad options, or a trace that is missing, damaged, or whose leaks cannot be\n"
          "judged (the process did not exit normally). docs/check.md has the details.\n",
          out);
}

int cmt_check_write_report(struct cmt_check *c, const char *cmd, FILE *default_out, FILE *terminal)
{
    const struct cmt_check_options *o = c->opt;
    FILE *out = default_out;
    /* Through a temporary renamed into place, as every -o FILE is: a check
     * killed or out of disk space leaves the last report whole. */
    if (o->report_file && !(out = cmt_cli_output_open(cmd, o->report_file)))
        return -1;
    cmt_cli_render(CMT_VIEW_CHECK, o->format, c, out);
    int rc = 0;
    if (o->report_file)
        rc = cmt_cli_output_close(cmd, o->report_file, out, true, 0) == 0 ? 0 : -1;
    else
        fflush(out);
    /* Whoever watches the terminal still learns the result. */
    if (o->report_file || strcmp(o->format, "text") != 0) {
        cmt_check_render_summary(c, terminal);
        if (o->print_suppressions && strcmp(o->format, "json") != 0)
            cmt_check_print_suppressions(c, terminal);
    }
    fflush(terminal);
    return rc;
}

struct check_cli {
    struct cmt_check_options o;
    struct cmt_cli_options common; /* -o FILE (command_options.h) */
};

/* One of check's options (check_options.c, shared with `run --check`).
 * --report-file is check's older spelling of -o: the last one given wins. */
static int check_option(void *ctx, int value, const char *arg, const char *option)
{
    struct check_cli *cli = ctx;
    if (!strcmp(option, "report-file")) {
        cli->common.output = arg;
        return 0;
    }
    return cmt_check_parse_option(&cli->o, value, arg, "check");
}

int cmt_cmd_check(int argc, char **argv)
{
    struct option own[CMT_CHECK_LONGOPTS_MAX];
    struct cmt_cli_command command = {
        .name = "check",
        .view = CMT_VIEW_CHECK,
        .takes = CMT_TAKES_OUTPUT,
        .own = own,
        .n_own = cmt_check_all_longopts(own),
        .own_option = check_option,
        .usage = check_usage,
    };
    struct check_cli cli = {0};
    cmt_check_options_init(&cli.o);
    int status;
    int first = cmt_cli_parse(&command, argc, argv, &cli.common, &cli, &status);
    if (first < 0)
        return status;
    if (cmt_cli_some_traces("check", argc, first) != 0)
        return CMT_EXIT_USAGE;
    struct cmt_check_options o = cli.o;
    o.report_file = cli.common.output;
    if (cmt_check_validate_options(&o, "check", false) != 0)
        return CMT_EXIT_USAGE;
    struct cmt_check chk;
    char err[1024];
    if (cmt_check_init(&chk, &o, err, sizeof err) != 0) {
        cmt_cli_error("check: %s", err);
        cmt_check_free(&chk);
        return CMT_EXIT_USAGE;
    }
    for (int i = first; i < argc; i++) {
        if (cmt_check_add_trace(&chk, argv[i]) != 0) {
            cmt_cli_error("check: %s: out of memory; give fewer traces at a time, or free memory", argv[i]);
            cmt_check_free(&chk);
            return CMT_EXIT_USAGE;
        }
    }
    status = cmt_check_status(&chk);
    if (cmt_check_write_report(&chk, "check", stdout, stderr) != 0)
        status = CMT_EXIT_USAGE;
    cmt_check_free(&chk);
    return status;
}
