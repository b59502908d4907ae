/* SPDX-License-Identifier: MIT */
/* cumemtrace report [OPTIONS] TRACE...  (docs/report.md) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "compare.h"
#include "job.h"
#include "job_report.h"
#include "json_writer.h"
#include "report.h"
#include "size_parse.h"
#include "time_arg.h"

#define MAX_LIST_OPTION 64

static void report_usage(FILE *out)
{
    fputs("usage: cumemtrace report [OPTIONS] TRACE...\n"
          "\n"
          "Explains a trace: per device the peak, its timeline, the call sites and the\n"
          "call tree live at the peak; leaks (live at exit) by call site, allocated once\n"
          "or repeatedly; call sites whose live bytes keep growing; failed allocations\n"
          "and why they failed, fragmentation, internal waste, size churn, pools and\n"
          "device memory no allocation explains (cumemtrace frag has all of it in full).\n"
          "Several traces (one per process or rank: report rank*.bin) get a section each\n"
          "and a comparison table; the traces of a job (torchrun, mpirun, srun) also get\n"
          "a job view: per rank its peak, when and where, the imbalance, memory held on\n"
          "another rank's GPU, leaks, failures and a timeline side by side.\n"
          "\n"
          "  --json                 one JSON object instead of text (docs/report.md)\n"
          "  --at TIME              replay up to TIME after the start of the trace and show\n"
          "                         what was live then: 2, 1.5s, 250ms, 80us, 1500000ns\n"
          "  --top N                call sites listed per list (default 10)\n"
          "  --max-frames N         frames shown per call site in text (default 8, 0 = all)\n"
          "  --tree-min-percent P   call tree nodes under P% of the total are summed up\n"
          "                         (default 1, 0 = show every node)\n"
          "  --chart-width N        columns of the timeline charts (default 64, 0 = none)\n"
          "  --chart-height N       rows of the timeline charts (default 6)\n"
          "  --full-stacks          show every frame: the profiler's, cudart's, libcuda's,\n"
          "                         the interpreter's and the frameworks' too\n"
          "  --fold PATTERN         also fold frames whose function, file or module matches\n"
          "                         the glob PATTERN (repeatable)\n"
          "  --unfold PATTERN       frames matching PATTERN are yours: shown, and they may\n"
          "                         name the call site, whatever folds them (repeatable)\n"
          "  --include-cached       count what a caching allocator (PyTorch, CuPy, XLA, RMM)\n"
          "                         still holds at exit as leaks (by default it is shown as\n"
          "                         held by the allocator)\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          "  --context-allowance SIZE  device memory the CUDA context may use before the rest\n"
          "                         counts as other consumers in failure verdicts (default 1GiB)\n"
          "  --clock-tolerance TIME how far apart the clocks of a job's hosts may be, stated\n"
          "                         in the job view (default 10ms; one host shares one clock)\n"
          "  --no-forensics         skip the out-of-memory, fragmentation, waste, churn, pool\n"
          "                         and device-sample sections (about 15% faster on huge traces)\n"
          "\n"
          "Exit status: 0 report printed; 2 bad options, or a file that is not a trace, is\n"
          "of a newer format, or is truncated or damaged (the report then covers the\n"
          "events before the damage; with several traces, the others are reported).\n",
          out);
}

static int parse_percent(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= 0 && v <= 100))
        return -1;
    *out = v;
    return 0;
}

struct report_cli {
    bool json;
    struct cmt_report_options opt;
    const char *folds[MAX_LIST_OPTION];
    const char *unfolds[MAX_LIST_OPTION];
    const char *debuginfo[MAX_LIST_OPTION];
    size_t n_folds, n_unfolds, n_debuginfo;
    bool no_forensics; /* --no-forensics */
    uint64_t clock_tolerance_ns; /* --clock-tolerance */
};

/* Parses options into cli; returns -1 when done with an exit status in
 * *status (help, errors), else the index of the first trace. */
static int parse_options(int argc, char **argv, struct report_cli *cli, int *status)
{
    enum {
        OPT_TOP = 256, OPT_MAX_FRAMES, OPT_FULL, OPT_FOLD, OPT_DEBUGINFO, OPT_SYSROOT, OPT_NO_SYMBOLS, OPT_AT,
        OPT_TREE_MIN, OPT_CHART_W, OPT_CHART_H, OPT_ALLOWANCE, OPT_NO_FORENSICS, OPT_UNFOLD, OPT_INCLUDE_CACHED,
        OPT_CLOCK_TOLERANCE
    };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"at", required_argument, NULL, OPT_AT},
        {"top", required_argument, NULL, OPT_TOP},
        {"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
        {"tree-min-percent", required_argument, NULL, OPT_TREE_MIN},
        {"chart-width", required_argument, NULL, OPT_CHART_W},
        {"chart-height", required_argument, NULL, OPT_CHART_H},
        {"full-stacks", no_argument, NULL, OPT_FULL},
        {"fold", required_argument, NULL, OPT_FOLD},
        {"unfold", required_argument, NULL, OPT_UNFOLD},
        {"include-cached", no_argument, NULL, OPT_INCLUDE_CACHED},
        {"debuginfo-path", required_argument, NULL, OPT_DEBUGINFO},
        {"sysroot", required_argument, NULL, OPT_SYSROOT},
        {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
        {"context-allowance", required_argument, NULL, OPT_ALLOWANCE},
        {"no-forensics", no_argument, NULL, OPT_NO_FORENSICS},
        {"clock-tolerance", required_argument, NULL, OPT_CLOCK_TOLERANCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cmt_report_options *opt = &cli->opt;
    *opt = (struct cmt_report_options){
        .top = 10, .max_frames = 8, .tree_min_percent = 1.0, .chart_width = 64, .chart_height = 6,
        .holder_peaks = true};
    opt->frames.symbolizer.demangle = true;
    cli->clock_tolerance_ns = CMT_JOB_DEFAULT_CLOCK_TOLERANCE_NS;
    *status = CMT_EXIT_USAGE;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            cli->json = true;
            break;
        case OPT_AT:
            if (cmt_parse_time_arg(optarg, &opt->at_ns) != 0 || opt->at_ns == 0) {
                cmt_cli_error("report: --at needs a time after the start of the trace, such as 2, 1.5s, 250ms, "
                              "80us or 1500000ns; got '%s'",
                              optarg);
                return -1;
            }
            opt->at_set = true;
            break;
        case OPT_TOP:
        case OPT_MAX_FRAMES:
        case OPT_CHART_W:
        case OPT_CHART_H: {
            size_t *dst = c == OPT_TOP ? &opt->top
                          : c == OPT_MAX_FRAMES ? &opt->max_frames
                          : c == OPT_CHART_W ? &opt->chart_width
                                             : &opt->chart_height;
            if (cmt_cli_parse_count(optarg, dst) != 0) {
                cmt_cli_error("report: %s needs a count, got '%s'", argv[optind - 1], optarg);
                return -1;
            }
            break;
        }
        case OPT_TREE_MIN:
            if (parse_percent(optarg, &opt->tree_min_percent) != 0) {
                cmt_cli_error("report: --tree-min-percent needs a number from 0 to 100, got '%s'", optarg);
                return -1;
            }
            break;
        case OPT_FULL:
            opt->frames.full_stacks = true;
            break;
        case OPT_FOLD:
        case OPT_DEBUGINFO:
            if ((c == OPT_FOLD ? cli->n_folds : cli->n_debuginfo) == MAX_LIST_OPTION) {
                cmt_cli_error("report: at most %d of each of --fold and --debuginfo-path", MAX_LIST_OPTION);
                return -1;
            }
            if (c == OPT_FOLD)
                cli->folds[cli->n_folds++] = optarg;
            else
                cli->debuginfo[cli->n_debuginfo++] = optarg;
            break;
        case OPT_UNFOLD:
            if (cli->n_unfolds == MAX_LIST_OPTION) {
                cmt_cli_error("report: at most %d --unfold", MAX_LIST_OPTION);
                return -1;
            }
            cli->unfolds[cli->n_unfolds++] = optarg;
            break;
        case OPT_INCLUDE_CACHED:
            opt->include_cached = true;
            break;
        case OPT_SYSROOT:
            opt->frames.symbolizer.sysroot = optarg;
            break;
        case OPT_NO_SYMBOLS:
            opt->frames.no_symbols = true;
            break;
        case OPT_ALLOWANCE:
            if (cmt_parse_size(optarg, &opt->context_allowance) != 0) {
                cmt_cli_error("report: --context-allowance needs a size such as 512MiB or 0, got '%s'", optarg);
                return -1;
            }
            opt->context_allowance_set = true;
            break;
        case OPT_NO_FORENSICS:
            cli->no_forensics = true;
            break;
        case OPT_CLOCK_TOLERANCE:
            if (cmt_parse_time_arg(optarg, &cli->clock_tolerance_ns) != 0) {
                cmt_cli_error("report: --clock-tolerance needs a time such as 10ms, 500us or 0, got '%s'", optarg);
                return -1;
            }
            break;
        case 'h':
            report_usage(stdout);
            *status = CMT_EXIT_OK;
            return -1;
        default:
            report_usage(stderr);
            return -1;
        }
    }
    if (optind == argc) {
        cmt_cli_error("report: no trace given");
        report_usage(stderr);
        return -1;
    }
    opt->frames.fold_patterns = cli->folds;
    opt->frames.n_fold_patterns = cli->n_folds;
    opt->frames.keep_patterns = cli->unfolds;
    opt->frames.n_keep_patterns = cli->n_unfolds;
    opt->frames.symbolizer.debuginfo_paths = cli->debuginfo;
    opt->frames.symbolizer.n_debuginfo_paths = cli->n_debuginfo;
    return optind;
}

/* Analyses one trace and renders it: as text to stdout, or as a JSON value
 * into j. With summary, also fills it. Returns the exit status. */
static int report_one(const char *path, const struct report_cli *cli, struct cmt_json *j,
                      struct cmt_process_summary *summary, struct cmt_job_member *member)
{
    if (member)
        cmt_job_member_failed(path, member);
    struct cmt_analysis a;
    struct cmt_analysis_options aopt = {.forensics = !cli->no_forensics, .phases = true};
    if (cmt_analysis_run_with(&a, path, cli->opt.at_set ? cli->opt.at_ns : 0, &aopt) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        if (summary)
            cmt_summary_failed(path, a.message, summary);
        cmt_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_report r;
    if (cmt_report_build(&r, &a, &cli->opt) != 0) {
        cmt_cli_error("%s: out of memory while building the report", path);
        if (summary)
            cmt_summary_failed(path, "out of memory while building the report", summary);
        cmt_report_free(&r);
        cmt_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    if (cli->opt.at_set && !a.stopped_early)
        cmt_report_add_warning(&r, "--at is at or after the end of the trace: the report shows the end");
    if (j)
        cmt_report_render_json_value(&r, j);
    else
        cmt_report_render_text(&r, stdout);
    fflush(stdout);
    if (summary)
        cmt_summary_from_report(&r, path, summary);
    if (member)
        cmt_job_member_from_report(&r, path, member);
    int status = cmt_cli_damage_status(path, &a, "report");
    cmt_report_free(&r);
    cmt_analysis_free(&a);
    return status;
}

struct ordered_trace {
    const char *path;
    int64_t rank;
    size_t given; /* position on the command line */
};

static int by_rank(const void *pa, const void *pb)
{
    const struct ordered_trace *a = pa, *b = pb;
    /* Known ranks first, in order; the rest as given. */
    uint64_t ra = (uint64_t)a->rank, rb = (uint64_t)b->rank;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return a->given < b->given ? -1 : a->given > b->given;
}

static int report_many(char **paths, size_t n, const struct report_cli *cli)
{
    struct ordered_trace *order = calloc(n, sizeof *order);
    struct cmt_process_summary *sums = calloc(n, sizeof *sums);
    struct cmt_job_member *members = calloc(n, sizeof *members);
    if (!order || !sums || !members) {
        free(order);
        free(sums);
        free(members);
        cmt_cli_error("report: out of memory");
        return CMT_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = (struct ordered_trace){paths[i], -1, i};
        cmt_analysis_peek_rank(paths[i], &order[i].rank);
    }
    qsort(order, n, sizeof *order, by_rank);
    int status = CMT_EXIT_OK;
    struct cmt_json j;
    if (cli->json) {
        cmt_json_init(&j, stdout, true);
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "processes");
        cmt_json_begin_array(&j);
    }
    for (size_t i = 0; i < n; i++) {
        const char *path = order[i].path;
        if (!cli->json) {
            if (order[i].rank >= 0)
                printf("%s===== rank %lld: %s =====\n", i ? "\n" : "", (long long)order[i].rank, path);
            else
                printf("%s===== %s =====\n", i ? "\n" : "", path);
            fflush(stdout);
        }
        int st = report_one(path, cli, cli->json ? &j : NULL, &sums[i], &members[i]);
        if (cli->json && !sums[i].analysed) {
            cmt_json_begin_object(&j);
            cmt_json_key(&j, "trace");
            cmt_json_string(&j, path);
            cmt_json_key(&j, "error");
            cmt_json_string(&j, sums[i].error);
            cmt_json_end_object(&j);
        } else if (!cli->json && !sums[i].analysed) {
            printf("not analysed: %s\n", sums[i].error);
        }
        if (st != CMT_EXIT_OK)
            status = st;
    }
    struct cmt_job_set jobs;
    if (cmt_job_set_build(&jobs, members, n) != 0) {
        cmt_cli_error("report: out of memory while grouping the traces by job");
        status = CMT_EXIT_USAGE;
    }
    struct cmt_job_render_options jopt = {cli->opt.chart_width, cli->clock_tolerance_ns};
    if (cli->json) {
        cmt_json_end_array(&j);
        cmt_json_key(&j, "comparison");
        cmt_compare_render_json(sums, n, &j);
        cmt_json_key(&j, "jobs");
        cmt_job_render_json(&jobs, &jopt, &j);
        cmt_json_end_object(&j);
        cmt_json_finish(&j);
    } else {
        cmt_compare_render_text(sums, n, stdout);
        cmt_job_render_text(&jobs, &jopt, stdout);
    }
    fflush(stdout);
    cmt_job_set_free(&jobs);
    free(order);
    free(sums);
    free(members);
    return status;
}

int cmt_cmd_report(int argc, char **argv)
{
    struct report_cli cli = {0};
    int status;
    int first = parse_options(argc, argv, &cli, &status);
    if (first < 0)
        return status;
    size_t n = (size_t)(argc - first);
    if (n > 1)
        return report_many(argv + first, n, &cli);
    if (!cli.json)
        return report_one(argv[first], &cli, NULL, NULL, NULL);
    struct cmt_json j;
    cmt_json_init(&j, stdout, true);
    /* A trace that cannot be read prints nothing on stdout. */
    status = report_one(argv[first], &cli, &j, NULL, NULL);
    if (j.need_comma[0])
        cmt_json_finish(&j);
    return status;
}
