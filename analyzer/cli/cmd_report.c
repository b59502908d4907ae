/* SPDX-License-Identifier: MIT */
/* cumemtrace report [OPTIONS] TRACE...  (docs/report.md) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "command_options.h"
#include "progress.h"
#include "report.h"
#include "one_trace.h"
#include "report_summaries.h"
#include "whatif_report.h"
#include "report_set.h"
#include "size_parse.h"
#include "suppressions.h"
#include "symbol_options.h"
#include "time_arg.h"

static void report_usage(FILE *out)
{
    fputs("usage: cumemtrace report [OPTIONS] TRACE...\n"
          "       cumemtrace report [OPTIONS] SUMMARY...|DIR   (the job view from summaries)\n"
          "\n"
          "Explains a trace. With PyTorch's block layer it leads with the tensors: their\n"
          "peak by category beside the cache's reserve, growth per step, the tensors kept\n"
          "step after step (its leaks), what to try. Then per device the peak, its\n"
          "timeline, the call sites and the call tree live at the peak; leaks (live at\n"
          "exit) by call site, allocated once or repeatedly; call sites whose live bytes\n"
          "keep growing; failed allocations and why they failed, fragmentation, internal\n"
          "waste, size churn, pools and device memory no allocation explains (cumemtrace\n"
          "frag has all of it in full).\n"
          "Several traces (one per process or rank: report rank*.bin) get a section each\n"
          "and a comparison table; the traces of a job (torchrun, mpirun, srun) also get\n"
          "a job view: per rank its peak, when and where, the imbalance, memory held on\n"
          "another rank's GPU, leaks, failures and a timeline side by side.\n"
          "Summaries (`cumemtrace summarize`, `run --summary`; a directory stands for its\n"
          "*.cmtsum files) give the comparison and the job view without the traces, with\n"
          "the figures the traces give: --format, -o, --chart-width, --clock-tolerance and\n"
          "--max-memory apply; the options that shape figures were given to summarize.\n"
          "\n"
          "  --format FORMAT        text (default), json (one object, docs/report.md) or html\n"
          "                         (one self-contained page with charts, docs/html.md)\n"
          "  -o, --output FILE      write the report to FILE instead of standard output\n"
          "  -j, --json             --format json\n"
          "  --at TIME              replay up to TIME after the start of the trace and show\n"
          "                         what was live then: 2, 1.5s, 250ms, 80us, 1500000ns\n"
          "  --top N                call sites listed per list, leaks' groups included\n"
          "                         (default 10, 0 = all)\n"
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
          "  --include-cached       count what a caching allocator (PyTorch's device and\n"
          "                         pinned host caches, CuPy, XLA, RMM) still holds at exit\n"
          "                         as leaks (by default it is shown as held by the\n"
          "                         allocator)\n"
          "  --suppressions FILE    leak:PATTERN lines, as for check (repeatable; also the\n"
          "                         files in CUMEMTRACE_SUPPRESSIONS): matching leaks are\n"
          "                         shown apart as suppressed, not counted\n"
          "  --no-default-suppressions  do not apply the built-in list (cuBLAS and cuDNN\n"
          "                         handles, PyTorch's cuBLAS workspaces)\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          CMT_MEMORY_OPTION_HELP
          "  --context-allowance SIZE  device memory the CUDA context may use before the rest\n"
          "                         counts as other consumers in failure verdicts (default 1GiB)\n"
          "  --clock-tolerance TIME how far apart the clocks of a job's hosts may be, stated\n"
          "                         in the job view (default 10ms; one host shares one clock)\n"
          "  --no-forensics         skip the out-of-memory, fragmentation, waste, churn, pool\n"
          "                         and device-sample sections (about 15% faster on huge traces)\n"
          "  --no-whatif            skip the replay of PyTorch's tensors under other allocator\n"
          "                         settings (the \"What if\" section)\n"
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
    struct cmt_cli_options common; /* the shared options (command_options.h) */
    FILE *stream; /* set by cmt_report_command's caller: the report goes there */
    struct cmt_report_options opt;
    bool no_forensics; /* --no-forensics */
    bool no_whatif;    /* --no-whatif */
    struct cmt_ta_settings whatif[8]; /* the candidates replayed (whatif_report.h) */
    size_t n_whatif;
    uint64_t clock_tolerance_ns; /* --clock-tolerance */
};

enum {
    OPT_TREE_MIN = CMT_CLI_OWN_FIRST,
    OPT_CHART_W,
    OPT_CHART_H,
    OPT_NO_FORENSICS,
    OPT_CLOCK_TOLERANCE,
    OPT_NO_WHATIF
};

static const struct option report_options[] = {
    {"tree-min-percent", required_argument, NULL, OPT_TREE_MIN},
    {"chart-width", required_argument, NULL, OPT_CHART_W},
    {"chart-height", required_argument, NULL, OPT_CHART_H},
    {"no-forensics", no_argument, NULL, OPT_NO_FORENSICS},
    {"no-whatif", no_argument, NULL, OPT_NO_WHATIF},
    {"clock-tolerance", required_argument, NULL, OPT_CLOCK_TOLERANCE},
};

/* One of report's own options (the shared ones: command_options.c). */
static int report_option(void *ctx, int value, const char *arg, const char *option)
{
    struct report_cli *cli = ctx;
    struct cmt_report_options *opt = &cli->opt;
    switch (value) {
    case OPT_CHART_W:
    case OPT_CHART_H:
        if (cmt_cli_parse_count(arg, value == OPT_CHART_W ? &opt->chart_width : &opt->chart_height) != 0) {
            cmt_cli_error("%s: --%s needs a count, got '%s'", "report", option, arg);
            return -1;
        }
        return 0;
    case OPT_TREE_MIN:
        if (parse_percent(arg, &opt->tree_min_percent) != 0) {
            cmt_cli_error("report: --tree-min-percent needs a number from 0 to 100, got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_NO_FORENSICS:
        cli->no_forensics = true;
        return 0;
    case OPT_NO_WHATIF:
        cli->no_whatif = true;
        return 0;
    case OPT_CLOCK_TOLERANCE:
        if (cmt_parse_time_arg(arg, &cli->clock_tolerance_ns) != 0) {
            cmt_cli_error("report: --clock-tolerance needs a time such as 10ms, 500us or 0, got '%s'", arg);
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

static const struct cmt_cli_command report_command = {
    .name = "report",
    .view = CMT_VIEW_REPORT,
    .takes = CMT_TAKES_FORMAT | CMT_TAKES_JSON | CMT_TAKES_OUTPUT | CMT_TAKES_SYMBOLS | CMT_TAKES_AT |
             CMT_TAKES_TOP | CMT_TAKES_MAX_FRAMES | CMT_TAKES_INCLUDE_CACHED | CMT_TAKES_ALLOWANCE |
             CMT_TAKES_SUPPRESSIONS,
    .own = report_options,
    .n_own = sizeof report_options / sizeof report_options[0],
    .own_option = report_option,
    .usage = report_usage,
};

/* Parses options into cli; returns -1 when done with an exit status in
 * *status (help, errors), else the index of the first trace. */
static int parse_options(int argc, char **argv, struct report_cli *cli, int *status)
{
    struct cmt_report_options *opt = &cli->opt;
    *opt = (struct cmt_report_options){
        .top = 10, .max_frames = 8, .tree_min_percent = 1.0, .chart_width = 64, .chart_height = 6,
        .holder_peaks = true};
    opt->frames.symbolizer.demangle = true;
    struct cmt_cli_options *common = &cli->common;
    common->format = (struct cmt_cli_format)CMT_CLI_FORMAT_INIT;
    common->top = opt->top;
    common->max_frames = opt->max_frames;
    cli->clock_tolerance_ns = CMT_JOB_DEFAULT_CLOCK_TOLERANCE_NS;
    int first = cmt_cli_parse(&report_command, argc, argv, common, cli, status);
    if (first < 0)
        return -1;
    if (cmt_cli_some_traces("report", argc, first) != 0)
        return -1;
    opt->top = common->top;
    opt->max_frames = common->max_frames;
    opt->include_cached = common->include_cached;
    opt->context_allowance = common->context_allowance;
    opt->context_allowance_set = common->context_allowance_set;
    opt->at_ns = common->at_ns;
    opt->at_set = common->at_ns != 0;
    cmt_frames_args_apply(&common->symbols, &opt->frames);
    cli->n_whatif = cmt_whatif_candidates(cli->whatif, sizeof cli->whatif / sizeof cli->whatif[0]);
    return first;
}


/* Analyses path and builds its report (one_trace.h). */
static int build_one(const char *path, const struct report_cli *cli, struct cmt_built_report *b,
                     struct cmt_process_summary *summary, struct cmt_job_member *member)
{
    struct cmt_trace_build how = {.opt = &cli->opt, .no_forensics = cli->no_forensics, .no_whatif = cli->no_whatif,
                                  /* the HTML page shows no usage views */
                                  .no_usage = !strcmp(cli->common.format.format, "html"),
                                  .whatif = cli->whatif, .n_whatif = cli->n_whatif};
    return cmt_report_build_one(path, &how, b, summary, member);
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

/* The set's source of reports: builds trace i when the renderer asks and,
 * once written, says what became of it (its damage) and frees it. */
struct set_source {
    struct cmt_progress progress;
    const struct report_cli *cli;
    struct cmt_report_set set;
    struct cmt_built_report current;
    size_t current_index;
    int status;
};

static void finish_current(struct set_source *src)
{
    if (src->current.built) {
        int st = cmt_cli_damage_status(src->set.paths[src->current_index], &src->current.a, "report");
        if (st != CMT_EXIT_OK)
            src->status = st;
    }
    cmt_report_free_one(&src->current);
}

static const struct cmt_report *set_report(void *ctx, size_t i)
{
    struct set_source *src = ctx;
    src->current_index = i;
    cmt_progress_trace(&src->progress, i, src->set.paths[i]);
    int st = build_one(src->set.paths[i], src->cli, &src->current, &src->set.summaries[i], &src->set.members[i]);
    cmt_progress_done(&src->progress);
    if (st != CMT_EXIT_OK)
        src->status = st;
    return src->current.built ? &src->current.r : NULL;
}

static void set_done(void *ctx, size_t i)
{
    struct set_source *src = ctx;
    finish_current(src);
    if (i + 1 == src->set.n)
        cmt_report_set_group_jobs(&src->set);
}

/* Where the report goes: the library caller's stream, -o FILE or stdout.
 * NULL (with a message) when the file cannot be created. */
static FILE *open_output(const struct report_cli *cli)
{
    if (cli->stream)
        return cli->stream;
    return cmt_cli_output_open("report", cli->common.output);
}

/* Flushes and closes what open_output opened; CMT_EXIT_USAGE when writing
 * failed. */
static int close_output(const struct report_cli *cli, FILE *out, int status)
{
    return cmt_cli_output_close("report", cli->common.output, out, out != stdout && out != cli->stream, status);
}

static int report_many(char **paths, size_t n, const struct report_cli *cli)
{
    if (!cmt_renderer_find(CMT_VIEW_REPORTS, cli->common.format.format)) {
        cmt_cli_error("report: --format %s shows one trace at a time: give one trace, or --format text or json",
                      cli->common.format.format);
        return CMT_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(paths[i], "-")) {
            cmt_cli_error("report: '-' (the standard input) only as the one trace");
            return CMT_EXIT_USAGE;
        }
    }
    struct ordered_trace *order = calloc(n, sizeof *order);
    struct cmt_process_summary *sums = calloc(n, sizeof *sums);
    const char **sorted = calloc(n, sizeof *sorted);
    int64_t *ranks = calloc(n, sizeof *ranks);
    struct cmt_job_member *members = calloc(n, sizeof *members);
    if (!order || !sums || !sorted || !ranks || !members) {
        free(members);
        free(order);
        free(sums);
        free(sorted);
        free(ranks);
        cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
        return CMT_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = (struct ordered_trace){paths[i], -1, i};
        cmt_analysis_peek_rank(paths[i], &order[i].rank);
    }
    qsort(order, n, sizeof *order, by_rank);
    for (size_t i = 0; i < n; i++) {
        sorted[i] = order[i].path;
        ranks[i] = order[i].rank;
    }
    struct set_source src = {.cli = cli, .status = CMT_EXIT_OK};
    src.set = (struct cmt_report_set){
        .n = n, .paths = sorted, .ranks = ranks, .summaries = sums, .members = members,
        .job_columns = cli->opt.chart_width, .clock_tolerance_ns = cli->clock_tolerance_ns,
        .report = set_report, .done = set_done, .ctx = &src};
    cmt_progress_init(&src.progress, n);
    FILE *out = open_output(cli);
    if (out) {
        cmt_cli_render(CMT_VIEW_REPORTS, cli->common.format.format, &src.set, out);
        finish_current(&src);
        cmt_report_set_free_jobs(&src.set);
        src.status = close_output(cli, out, src.status);
    } else {
        src.status = CMT_EXIT_USAGE;
    }
    free(order);
    free(sums);
    free(sorted);
    free(ranks);
    free(members);
    return src.status;
}

/* The leak suppressions `check` applies, so that both say the same
 * (docs/report.md, "Suppressed"). */
static int load_suppressions(struct report_cli *cli, struct cmt_suppressions *s)
{
    char err[800];
    if (cmt_suppressions_load_all(s, cli->common.suppression_files, cli->common.n_suppression_files,
                                  cli->common.no_default_suppressions, err, sizeof err) != 0) {
        cmt_cli_error("report: %s", err);
        return -1;
    }
    if (cmt_suppressions_attach(s, &cli->opt) != 0) {
        cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
        return -1;
    }
    return 0;
}

static int report_main(int argc, char **argv, struct report_cli *cli, int first);

int cmt_cmd_report(int argc, char **argv)
{
    return cmt_report_command(argc, argv, NULL);
}

int cmt_report_command(int argc, char **argv, FILE *stream)
{
    struct report_cli cli = {0};
    int status;
    int first = parse_options(argc, argv, &cli, &status);
    if (first < 0)
        return status;
    cli.stream = stream;
    struct cmt_suppressions sup;
    cmt_suppressions_init(&sup);
    if (load_suppressions(&cli, &sup) != 0) {
        cmt_suppressions_free(&sup);
        return CMT_EXIT_USAGE;
    }
    status = report_main(argc, argv, &cli, first);
    cmt_suppressions_free(&sup);
    return status;
}

/* The comparison and the job view from summaries (report_summaries.h):
 * nothing is written when they do not belong in one report. */
static int report_summaries(char **paths, size_t n, const struct report_cli *cli)
{
    /* the options given that shape figures (not the environment's files:
     * they are the summaries' settings, said in the view) */
    struct cmt_figure_options f = {.at_ns = cli->opt.at_set ? cli->opt.at_ns : 0,
                                   .include_cached = cli->opt.include_cached,
                                   .allowance_set = cli->opt.context_allowance_set,
                                   .allowance = cli->opt.context_allowance,
                                   .suppression_files = cli->common.suppression_files,
                                   .n_suppression_files = cli->common.n_suppression_files,
                                   .no_default_suppressions = cli->common.no_default_suppressions,
                                   .symbols = &cli->common.symbols};
    char given[1024];
    cmt_figure_options_describe(&f, given, sizeof given);
    if (given[0]) {
        cmt_cli_error("report: %s shapes figures that the summaries already hold: give it to `cumemtrace "
                      "summarize` where the traces lie",
                      given);
        return CMT_EXIT_USAGE;
    }
    if (!cmt_renderer_find(CMT_VIEW_JOB, cli->common.format.format)) {
        cmt_cli_error("report: --format %s is not one of the job view's: give --format text, json or html",
                      cli->common.format.format);
        return CMT_EXIT_USAGE;
    }
    struct cmt_loaded_summaries l;
    int status = cmt_summaries_load(paths, n, &l);
    if (status < 0)
        return CMT_EXIT_USAGE;
    l.set.job_columns = cli->opt.chart_width;
    l.set.clock_tolerance_ns = cli->clock_tolerance_ns;
    FILE *out = open_output(cli);
    if (out) {
        cmt_cli_render(CMT_VIEW_JOB, cli->common.format.format, &l.set, out);
        status = close_output(cli, out, status);
    } else {
        status = CMT_EXIT_USAGE;
    }
    cmt_summaries_free(&l);
    return status;
}

static int report_main(int argc, char **argv, struct report_cli *cli_in, int first)
{
    struct report_cli cli = *cli_in;
    int status;
    /* the floors only the HTML page draws: they name every site's holder */
    cli.opt.site_floors = !strcmp(cli.common.format.format, "html");
    size_t n = (size_t)(argc - first);
    for (size_t i = 0; i < n; i++)
        if (cmt_summaries_input(argv[first + i]))
            return report_summaries(argv + first, n, &cli);
    if (n > 1)
        return report_many(argv + first, n, &cli);
    const char *path = argv[first];
    struct cmt_built_report b;
    struct cmt_progress progress;
    cmt_progress_init(&progress, 1);
    cmt_progress_trace(&progress, 0, path);
    /* A trace that cannot be read prints nothing on stdout (creates no -o file). */
    status = build_one(path, &cli, &b, NULL, NULL);
    cmt_progress_done(&progress);
    if (status != CMT_EXIT_OK)
        return status;
    FILE *out = open_output(&cli);
    if (!out) {
        cmt_report_free_one(&b);
        return CMT_EXIT_USAGE;
    }
    cmt_cli_render(CMT_VIEW_REPORT, cli.common.format.format, &b.r, out);
    status = close_output(&cli, out, cmt_cli_damage_status(path, &b.a, "report"));
    cmt_report_free_one(&b);
    return status;
}
