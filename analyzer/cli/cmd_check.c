/* SPDX-License-Identifier: MIT */
/* cumemtrace check [OPTIONS] TRACE... */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_options.h"
#include "cli.h"

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
    if (o->report_file) {
        out = fopen(o->report_file, "w");
        if (!out) {
            cmt_cli_error("%s: cannot write the report to %s: %s; check that its directory exists and is writable",
                          cmd, o->report_file, strerror(errno));
            return -1;
        }
    }
    cmt_cli_render(CMT_VIEW_CHECK, o->format, c, out);
    int rc = 0;
    if (o->report_file) {
        if (fclose(out) != 0) {
            cmt_cli_error("%s: cannot write the report to %s: %s; check that its directory exists and is writable",
                          cmd, o->report_file, strerror(errno));
            rc = -1;
        }
    } else {
        fflush(out);
    }
    /* Whoever watches the terminal still learns the result. */
    if (o->report_file || strcmp(o->format, "text") != 0) {
        cmt_check_render_summary(c, terminal);
        if (o->print_suppressions && strcmp(o->format, "json") != 0)
            cmt_check_print_suppressions(c, terminal);
    }
    fflush(terminal);
    return rc;
}

int cmt_cmd_check(int argc, char **argv)
{
    struct option longopts[CMT_CHECK_LONGOPTS_MAX + 2];
    size_t n = cmt_check_all_longopts(longopts);
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n + 1] = (struct option){NULL, 0, NULL, 0};
    struct cmt_check_options o;
    cmt_check_options_init(&o);
    optind = 1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            check_usage(stdout);
            return CMT_EXIT_OK;
        }
        if (!cmt_check_is_option(c)) {
            cmt_cli_option_error("check", c, argv);
            cmt_cli_try_help("check");
            return CMT_EXIT_USAGE;
        }
        if (cmt_check_parse_option(&o, c, optarg, "check") != 0)
            return CMT_EXIT_USAGE;
    }
    if (optind >= argc) {
        cmt_cli_error("check: no trace given");
        cmt_cli_try_help("check");
        return CMT_EXIT_USAGE;
    }
    if (cmt_check_validate_options(&o, "check", false) != 0)
        return CMT_EXIT_USAGE;
    struct cmt_check chk;
    char err[1024];
    if (cmt_check_init(&chk, &o, err, sizeof err) != 0) {
        cmt_cli_error("check: %s", err);
        cmt_check_free(&chk);
        return CMT_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++) {
        if (cmt_check_add_trace(&chk, argv[i]) != 0) {
            cmt_cli_error("check: %s: out of memory; give fewer traces at a time, or free memory", argv[i]);
            cmt_check_free(&chk);
            return CMT_EXIT_USAGE;
        }
    }
    int status = cmt_check_status(&chk);
    if (cmt_check_write_report(&chk, "check", stdout, stderr) != 0)
        status = CMT_EXIT_USAGE;
    cmt_check_free(&chk);
    return status;
}
