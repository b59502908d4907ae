/* SPDX-License-Identifier: MIT */
/* cumemtrace frag [OPTIONS] TRACE: the full out-of-memory and fragmentation
 * view (docs/fragmentation.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "forensics_report.h"
#include "json_writer.h"
#include "report.h"
#include "size_parse.h"

#define MAX_LIST_OPTION 64

static void frag_usage(FILE *out)
{
    fputs("usage: cumemtrace frag [OPTIONS] TRACE\n"
          "\n"
          "Why allocations failed and where device memory is wasted: every failed\n"
          "allocation examined with a verdict, holes between live allocations over time\n"
          "and which releases opened them, internal waste, size churn, stream-ordered\n"
          "pools, and device memory no allocation explains.\n"
          "\n"
          "  --json                     one JSON object instead of text (docs/fragmentation.md)\n"
          "  --top N                    call sites listed per list (default 10)\n"
          "  --max-frames N             frames shown per call site in text (default 8, 0 = all)\n"
          "  --context-allowance SIZE   device memory the CUDA context may use before the\n"
          "                             rest counts as other consumers (default 1GiB)\n"
          "  --full-stacks              keep the profiler's, cudart's and libcuda's frames\n"
          "  --fold PATTERN             also fold frames matching the glob PATTERN (repeatable)\n"
          "  --debuginfo-path DIR       look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR              look up the recorded module paths under DIR first\n"
          "  --no-symbols               do not symbolize: addresses and modules only\n"
          "\n"
          "Exit status: 0 printed; 2 bad options, or a file that is not a trace, is of a\n"
          "newer format, or is truncated or damaged (the output then covers the events\n"
          "before the damage).\n",
          out);
}

static void render_json(const struct cmt_report *r, FILE *out)
{
    const struct cmt_analysis *a = r->analysis;
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "trace");
    cmt_json_string(&j, a->path);
    char v[32];
    snprintf(v, sizeof v, "%u.%u", a->info.version_major, a->info.version_minor);
    cmt_json_key(&j, "format_version");
    cmt_json_string(&j, v);
    cmt_json_key(&j, "complete");
    cmt_json_bool(&j, cmt_analysis_complete(a));
    cmt_json_key(&j, "trace_state");
    cmt_json_string(&j, cmt_analysis_state(a));
    cmt_json_key(&j, "duration_ns");
    cmt_json_uint(&j, cmt_report_rel_ns(r, a->model.has_end ? a->model.end.ts : a->replay.last_ts));
    cmt_json_key(&j, "checkpoints");
    cmt_json_uint(&j, a->forensics->checkpoints);
    cmt_forensics_render_json(r, &j, true);
    cmt_json_key(&j, "warnings");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < r->n_warnings; i++)
        cmt_json_string(&j, r->warnings[i]);
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}

static void render_text(const struct cmt_report *r, FILE *out)
{
    const struct cmt_analysis *a = r->analysis;
    fprintf(out, "cumemtrace frag of %s\n", a->path);
    fprintf(out, "  %llu events, %llu fragmentation checkpoints, %llu device samples\n",
            (unsigned long long)a->replay.events, (unsigned long long)a->forensics->checkpoints,
            (unsigned long long)a->forensics->samples);
    if (a->replay.failed_allocs == 0)
        fprintf(out, "\nNo allocation failed.\n");
    cmt_forensics_render_text(r, out, true);
    if (r->n_warnings) {
        fprintf(out, "\nWarnings:\n");
        for (size_t i = 0; i < r->n_warnings; i++)
            fprintf(out, "  - %s\n", r->warnings[i]);
    }
}

int cmt_cmd_frag(int argc, char **argv)
{
    enum { OPT_TOP = 256, OPT_MAX_FRAMES, OPT_ALLOWANCE, OPT_FULL, OPT_FOLD, OPT_DEBUGINFO, OPT_SYSROOT, OPT_NO_SYMBOLS };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, OPT_TOP},
        {"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
        {"context-allowance", required_argument, NULL, OPT_ALLOWANCE},
        {"full-stacks", no_argument, NULL, OPT_FULL},
        {"fold", required_argument, NULL, OPT_FOLD},
        {"debuginfo-path", required_argument, NULL, OPT_DEBUGINFO},
        {"sysroot", required_argument, NULL, OPT_SYSROOT},
        {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
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
        case OPT_FULL:
            opt.frames.full_stacks = true;
            break;
        case OPT_FOLD:
        case OPT_DEBUGINFO:
            if ((c == OPT_FOLD ? n_folds : n_debuginfo) == MAX_LIST_OPTION) {
                cmt_cli_error("frag: at most %d of each of --fold and --debuginfo-path", MAX_LIST_OPTION);
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
        case 'h':
            frag_usage(stdout);
            return CMT_EXIT_OK;
        default:
            frag_usage(stderr);
            return CMT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cmt_cli_error(optind == argc ? "frag: no trace given" : "frag: one trace at a time");
        frag_usage(stderr);
        return CMT_EXIT_USAGE;
    }
    opt.frames.fold_patterns = folds;
    opt.frames.n_fold_patterns = n_folds;
    opt.frames.symbolizer.debuginfo_paths = debuginfo;
    opt.frames.symbolizer.n_debuginfo_paths = n_debuginfo;

    const char *path = argv[optind];
    struct cmt_analysis a;
    struct cmt_analysis_options aopt = {.forensics = true, .forensics_opt = {.track_holes = true}};
    if (cmt_analysis_run_with(&a, path, 0, &aopt) != 0) {
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
        render_json(&r, stdout);
    else
        render_text(&r, stdout);
    fflush(stdout);
    int status = cmt_cli_damage_status(path, &a, "output");
    cmt_report_free(&r);
    cmt_analysis_free(&a);
    return status;
}
