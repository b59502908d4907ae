/* SPDX-License-Identifier: MIT */
/* cumemtrace diff [OPTIONS] OLD NEW  (docs/report.md, "Comparing two runs") */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "diff.h"
#include "diff_render.h"
#include "json_writer.h"
#include "report.h"

#define MAX_DEBUGINFO 64

static void diff_usage(FILE *out)
{
    fputs("usage: cumemtrace diff [OPTIONS] OLD NEW\n"
          "\n"
          "Compares two runs call site by call site: the change in bytes live at the\n"
          "device peak, in bytes leaked (live at exit) and in allocation calls, largest\n"
          "change first. Call sites are matched by their frames (function, file, line).\n"
          "\n"
          "  --json                 one JSON object instead of text\n"
          "  --top N                call sites listed (default 10, 0 = all)\n"
          "  --full-stacks          match and show every frame, folded ones too\n"
          "  --include-cached       count what caching allocators hold at exit as leaked\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          "\n"
          "Exit status: 0 compared; 2 bad options, or a trace that cannot be read,\n"
          "is damaged or truncated (the comparison then covers the events before it).\n",
          out);
}

struct diff_cli {
    bool json;
    size_t top;
    struct cmt_report_options opt;
    const char *debuginfo[MAX_DEBUGINFO];
    size_t n_debuginfo;
};

static int parse_options(int argc, char **argv, struct diff_cli *cli, int *status)
{
    enum { OPT_TOP = 256, OPT_FULL, OPT_INCLUDE_CACHED, OPT_DEBUGINFO, OPT_SYSROOT, OPT_NO_SYMBOLS };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, OPT_TOP},
        {"full-stacks", no_argument, NULL, OPT_FULL},
        {"include-cached", no_argument, NULL, OPT_INCLUDE_CACHED},
        {"debuginfo-path", required_argument, NULL, OPT_DEBUGINFO},
        {"sysroot", required_argument, NULL, OPT_SYSROOT},
        {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cli->top = 10;
    /* Every site at the peak is compared, not only the top rows shown. */
    cli->opt = (struct cmt_report_options){.top = SIZE_MAX, .max_frames = 0, .tree_min_percent = 100.0};
    cli->opt.frames.symbolizer.demangle = true;
    *status = CMT_EXIT_USAGE;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            cli->json = true;
            break;
        case OPT_TOP:
            if (cmt_cli_parse_count(optarg, &cli->top) != 0) {
                cmt_cli_error("diff: --top needs a count, got '%s'", optarg);
                return -1;
            }
            break;
        case OPT_FULL:
            cli->opt.frames.full_stacks = true;
            break;
        case OPT_INCLUDE_CACHED:
            cli->opt.include_cached = true;
            break;
        case OPT_DEBUGINFO:
            if (cli->n_debuginfo == MAX_DEBUGINFO) {
                cmt_cli_error("diff: at most %d --debuginfo-path", MAX_DEBUGINFO);
                return -1;
            }
            cli->debuginfo[cli->n_debuginfo++] = optarg;
            break;
        case OPT_SYSROOT:
            cli->opt.frames.symbolizer.sysroot = optarg;
            break;
        case OPT_NO_SYMBOLS:
            cli->opt.frames.no_symbols = true;
            break;
        case 'h':
            diff_usage(stdout);
            *status = CMT_EXIT_OK;
            return -1;
        default:
            diff_usage(stderr);
            return -1;
        }
    }
    if (argc - optind != 2) {
        cmt_cli_error("diff: needs two traces, OLD and NEW; got %d", argc - optind);
        diff_usage(stderr);
        return -1;
    }
    cli->opt.frames.symbolizer.debuginfo_paths = cli->debuginfo;
    cli->opt.frames.symbolizer.n_debuginfo_paths = cli->n_debuginfo;
    return optind;
}

/* Reads one run into d. Returns the exit status (a damaged trace is
 * compared up to the damage and answers CMT_EXIT_USAGE), or -1 when it
 * cannot be compared at all. */
static int add_run(struct cmt_diff *d, int which, const char *path, const struct diff_cli *cli)
{
    struct cmt_analysis a;
    struct cmt_analysis_options aopt = {0};
    if (cmt_analysis_run_with(&a, path, 0, &aopt) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_analysis_free(&a);
        return -1;
    }
    struct cmt_report r;
    int rc = cmt_report_build(&r, &a, &cli->opt);
    if (rc == 0)
        rc = cmt_diff_add(d, which, &r, path);
    int status = rc == 0 ? cmt_cli_damage_status(path, &a, "comparison") : -1;
    if (rc != 0)
        cmt_cli_error("%s: out of memory while comparing", path);
    cmt_report_free(&r);
    cmt_analysis_free(&a);
    return status;
}

int cmt_cmd_diff(int argc, char **argv)
{
    struct diff_cli cli = {0};
    int status;
    int first = parse_options(argc, argv, &cli, &status);
    if (first < 0)
        return status;
    struct cmt_diff d;
    cmt_diff_init(&d);
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
    if (cli.json) {
        struct cmt_json j;
        cmt_json_init(&j, stdout, true);
        cmt_diff_render_json(&d, &j);
        cmt_json_finish(&j);
    } else {
        cmt_diff_render_text(&d, cli.top, stdout);
    }
    fflush(stdout);
    cmt_diff_free(&d);
    return status;
}
