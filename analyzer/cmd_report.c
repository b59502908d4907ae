/* SPDX-License-Identifier: MIT */
/* cumemtrace report [OPTIONS] TRACE */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "report.h"
#include "size_parse.h"

#define MAX_LIST_OPTION 64

static void report_usage(FILE *out)
{
    fputs("usage: cumemtrace report [OPTIONS] TRACE\n"
          "\n"
          "Explains a trace: per device the peak and the call sites live at it, leaks\n"
          "(live at exit) by call site, and failed allocations.\n"
          "\n"
          "  --json                 one JSON object instead of text (docs/report.md)\n"
          "  --top N                call sites listed per peak (default 10)\n"
          "  --max-frames N         frames shown per call site in text (default 8, 0 = all)\n"
          "  --full-stacks          keep the profiler's, cudart's and libcuda's frames\n"
          "  --fold PATTERN         also fold frames whose function, file or module matches\n"
          "                         the glob PATTERN (repeatable)\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          "  --context-allowance SIZE  device memory the CUDA context may use before the rest\n"
          "                         counts as other consumers in failure verdicts (default 1GiB)\n"
          "  --no-forensics         skip the out-of-memory, fragmentation, waste, churn, pool\n"
          "                         and device-sample sections (about 15% faster on huge traces)\n"
          "\n"
          "Exit status: 0 report printed; 2 bad options, or a file that is not a trace, is\n"
          "of a newer format, or is truncated or damaged (the report then covers the\n"
          "events before the damage).\n",
          out);
}

static int parse_count(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v > 1000000)
        return -1;
    *out = (size_t)v;
    return 0;
}

int cmt_cmd_report(int argc, char **argv)
{
    enum { OPT_TOP = 256, OPT_MAX_FRAMES, OPT_FULL, OPT_FOLD, OPT_DEBUGINFO, OPT_SYSROOT, OPT_NO_SYMBOLS, OPT_ALLOWANCE, OPT_NO_FORENSICS };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, OPT_TOP},
        {"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
        {"full-stacks", no_argument, NULL, OPT_FULL},
        {"fold", required_argument, NULL, OPT_FOLD},
        {"debuginfo-path", required_argument, NULL, OPT_DEBUGINFO},
        {"sysroot", required_argument, NULL, OPT_SYSROOT},
        {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
        {"context-allowance", required_argument, NULL, OPT_ALLOWANCE},
        {"no-forensics", no_argument, NULL, OPT_NO_FORENSICS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    struct cmt_analysis_options analysis_opt = {0};
    const char *folds[MAX_LIST_OPTION], *debuginfo[MAX_LIST_OPTION];
    size_t n_folds = 0, n_debuginfo = 0;
    struct cmt_report_options opt = {.top = 10, .max_frames = 8};
    opt.frames.symbolizer.demangle = true;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case OPT_TOP:
            if (parse_count(optarg, &opt.top) != 0) {
                cmt_cli_error("report: --top needs a count, got '%s'", optarg);
                return CMT_EXIT_USAGE;
            }
            break;
        case OPT_MAX_FRAMES:
            if (parse_count(optarg, &opt.max_frames) != 0) {
                cmt_cli_error("report: --max-frames needs a count, got '%s'", optarg);
                return CMT_EXIT_USAGE;
            }
            break;
        case OPT_FULL:
            opt.frames.full_stacks = true;
            break;
        case OPT_FOLD:
        case OPT_DEBUGINFO:
            if ((c == OPT_FOLD ? n_folds : n_debuginfo) == MAX_LIST_OPTION) {
                cmt_cli_error("report: at most %d of each of --fold and --debuginfo-path", MAX_LIST_OPTION);
                return CMT_EXIT_USAGE;
            }
            if (c == OPT_FOLD)
                folds[n_folds++] = optarg;
            else
                debuginfo[n_debuginfo++] = optarg;
            break;
        case OPT_SYSROOT:
            opt.frames.symbolizer.sysroot = optarg;
            break;
        case OPT_NO_SYMBOLS:
            opt.frames.no_symbols = true;
            break;
        case OPT_ALLOWANCE:
            if (cmt_parse_size(optarg, &opt.context_allowance) != 0) {
                cmt_cli_error("report: --context-allowance needs a size such as 512MiB or 0, got '%s'", optarg);
                return CMT_EXIT_USAGE;
            }
            opt.context_allowance_set = true;
            break;
        case OPT_NO_FORENSICS:
            analysis_opt.no_forensics = true;
            break;
        case 'h':
            report_usage(stdout);
            return CMT_EXIT_OK;
        default:
            report_usage(stderr);
            return CMT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cmt_cli_error(optind == argc ? "report: no trace given" : "report: one trace at a time");
        report_usage(stderr);
        return CMT_EXIT_USAGE;
    }
    opt.frames.fold_patterns = folds;
    opt.frames.n_fold_patterns = n_folds;
    opt.frames.symbolizer.debuginfo_paths = debuginfo;
    opt.frames.symbolizer.n_debuginfo_paths = n_debuginfo;

    const char *path = argv[optind];
    struct cmt_analysis a;
    if (cmt_analysis_run_with(&a, path, 0, &analysis_opt) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_report r;
    if (cmt_report_build(&r, &a, &opt) != 0) {
        cmt_cli_error("%s: out of memory while building the report", path);
        cmt_report_free(&r);
        cmt_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    if (json)
        cmt_report_render_json(&r, stdout);
    else
        cmt_report_render_text(&r, stdout);
    fflush(stdout);

    int status = CMT_EXIT_OK;
    if (a.damaged) {
        cmt_cli_error("%s: %s; the report covers the events before it", path, a.message);
        status = CMT_EXIT_USAGE;
    } else if (cmt_reader_truncated(a.reader)) {
        cmt_cli_error("%s: trace is truncated; the report covers the events before the cut", path);
        status = CMT_EXIT_USAGE;
    }
    cmt_report_free(&r);
    cmt_analysis_free(&a);
    return status;
}
