/* SPDX-License-Identifier: MIT */
/* cumemtrace frag [OPTIONS] TRACE: the full out-of-memory and fragmentation
 * view (docs/fragmentation.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "report.h"
#include "size_parse.h"
#include "symbol_options.h"

static void frag_usage(FILE *out)
{
    fputs("usage: cumemtrace frag [OPTIONS] TRACE\n"
          "\n"
          "Why allocations failed and where device memory is wasted: every failed\n"
          "allocation examined with a verdict, holes between live allocations over time\n"
          "and which releases opened them, internal waste, size churn, stream-ordered\n"
          "pools, and device memory no allocation explains.\n"
          "\n"
          "  --format FORMAT            text (default) or json: one object (docs/fragmentation.md)\n"
          "  --json                     --format json\n"
          "  --top N                    call sites listed per list (default 10)\n"
          "  --max-frames N             frames shown per call site in text (default 8, 0 = all)\n"
          "  --context-allowance SIZE   device memory the CUDA context may use before the\n"
          "                             rest counts as other consumers (default 1GiB)\n"
          "  --full-stacks              keep the profiler's, cudart's and libcuda's frames\n"
          "  --fold PATTERN             also fold frames matching the glob PATTERN (repeatable)\n"
          "  --unfold PATTERN           frames matching PATTERN are yours (repeatable)\n"
          "  --debuginfo-path DIR       look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR              look up the recorded module paths under DIR first\n"
          "  --no-symbols               do not symbolize: addresses and modules only\n"
          "  --max-memory SIZE          refuse a trace whose analysis needs more memory\n"
          "                             (default: half of this machine's; 0: no limit)\n"
          "\n"
          "Exit status: 0 printed; 2 bad options, or a file that is not a trace, is of a\n"
          "newer format, or is truncated or damaged (the output then covers the events\n"
          "before the damage).\n",
          out);
}

int cmt_cmd_frag(int argc, char **argv)
{
    enum { OPT_FORMAT = 255, OPT_TOP = 256, OPT_MAX_FRAMES, OPT_ALLOWANCE };
    static const struct option own[] = {
        {"json", no_argument, NULL, 'j'},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"top", required_argument, NULL, OPT_TOP},
        {"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
        {"context-allowance", required_argument, NULL, OPT_ALLOWANCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct option longopts[sizeof own / sizeof own[0] + CMT_SYMBOL_LONGOPTS_MAX];
    size_t n_opts = sizeof own / sizeof own[0] - 1;
    memcpy(longopts, own, n_opts * sizeof *longopts);
    cmt_symbol_longopts(longopts, &n_opts);
    longopts[n_opts] = (struct option){NULL, 0, NULL, 0};
    struct cmt_cli_format format = CMT_CLI_FORMAT_INIT;
    struct cmt_frames_args symbols = {0};
    struct cmt_report_options opt = {.top = 10, .max_frames = 8};
    opt.frames.symbolizer.demangle = true;
    optind = 1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
        case OPT_FORMAT:
            if (cmt_cli_format_option("frag", CMT_VIEW_FRAG, &format, c == 'j' ? "json" : optarg,
                                      c == 'j' ? "--json" : NULL) != 0)
                return CMT_EXIT_USAGE;
            break;
        case OPT_TOP:
        case OPT_MAX_FRAMES:
            if (cmt_cli_parse_count(optarg, c == OPT_TOP ? &opt.top : &opt.max_frames) != 0) {
                cmt_cli_error("frag: %s needs a count, got '%s'", c == OPT_TOP ? "--top" : "--max-frames", optarg);
                return CMT_EXIT_USAGE;
            }
            break;
        case OPT_ALLOWANCE:
            if (cmt_parse_size(optarg, &opt.context_allowance) != 0) {
                cmt_cli_error("frag: --context-allowance needs a size such as 512MiB or 0, got '%s'", optarg);
                return CMT_EXIT_USAGE;
            }
            opt.context_allowance_set = true;
            break;
        case 'h':
            frag_usage(stdout);
            return CMT_EXIT_OK;
        default:
            if (cmt_symbol_is_option(c)) {
                if (cmt_symbol_parse("frag", c, optarg, &symbols) != 0)
                    return CMT_EXIT_USAGE;
                break;
            }
            cmt_cli_option_error("frag", c, argv);
            cmt_cli_try_help("frag");
            return CMT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cmt_cli_error(optind == argc ? "frag: no trace given" : "frag: one trace at a time: run frag once per trace");
        cmt_cli_try_help("frag");
        return CMT_EXIT_USAGE;
    }
    cmt_frames_args_apply(&symbols, &opt.frames);

    const char *path = argv[optind];
    struct cmt_analysis a;
    struct cmt_analysis_options aopt = {.forensics = true, .forensics_opt = {.track_holes = true}};
    if (cmt_cli_analyse(&a, path, 0, &aopt) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_report r;
    if (cmt_report_build(&r, &a, &opt) != 0) {
        cmt_cli_error("%s: out of memory while building the report; free memory", path);
        cmt_report_free(&r);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    cmt_cli_render(CMT_VIEW_FRAG, format.format, &r, stdout);
    fflush(stdout);
    int status = cmt_cli_damage_status(path, &a, "output");
    cmt_report_free(&r);
    cmt_cli_analysis_free(&a);
    return status;
}
