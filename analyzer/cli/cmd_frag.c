/* SPDX-License-Identifier: MIT */
/* cumemtrace frag [OPTIONS] TRACE: the full out-of-memory and fragmentation
 * view (docs/fragmentation.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "command_options.h"
#include "report.h"

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
          "  -j, --json                 --format json\n"
          "  -o, --output FILE          write the output to FILE instead of standard output\n"
          "  --top N                    call sites listed per list (default 10, 0 = all)\n"
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

static const struct cmt_cli_command frag_command = {
    .name = "frag",
    .view = CMT_VIEW_FRAG,
    .takes = CMT_TAKES_FORMAT | CMT_TAKES_JSON | CMT_TAKES_OUTPUT | CMT_TAKES_SYMBOLS | CMT_TAKES_TOP |
             CMT_TAKES_MAX_FRAMES | CMT_TAKES_ALLOWANCE,
    .usage = frag_usage,
};

int cmt_cmd_frag(int argc, char **argv)
{
    struct cmt_cli_options o = {.format = CMT_CLI_FORMAT_INIT, .top = 10, .max_frames = 8};
    int status;
    int first = cmt_cli_parse(&frag_command, argc, argv, &o, NULL, &status);
    if (first < 0)
        return status;
    if (cmt_cli_one_trace("frag", argc, first) != 0)
        return CMT_EXIT_USAGE;
    struct cmt_report_options opt = {.top = o.top,
                                     .max_frames = o.max_frames,
                                     .context_allowance = o.context_allowance,
                                     .context_allowance_set = o.context_allowance_set};
    opt.frames.symbolizer.demangle = true;
    cmt_frames_args_apply(&o.symbols, &opt.frames);

    const char *path = argv[first];
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
    FILE *out = cmt_cli_output_open("frag", o.output);
    if (out) {
        cmt_cli_render(CMT_VIEW_FRAG, o.format.format, &r, out);
        status = cmt_cli_output_close("frag", o.output, out, out != stdout, CMT_EXIT_OK);
        int damage = cmt_cli_damage_status(path, &a, "output");
        if (status == CMT_EXIT_OK)
            status = damage;
    } else {
        status = CMT_EXIT_USAGE;
    }
    cmt_report_free(&r);
    cmt_cli_analysis_free(&a);
    return status;
}
