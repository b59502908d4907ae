/* SPDX-License-Identifier: MIT */
/* cumemtrace export --format perfetto|folded: the analyzer's model in other
 * tools' formats (docs/export.md). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "command_options.h"
#include "export_model.h"
#include "progress.h"
#include "renderers.h"
#include "report.h"
#include "symbol_options.h"
#include "trace_reader.h"

struct export_cli {
    enum { FORMAT_NONE, FORMAT_PERFETTO, FORMAT_FOLDED } format;
    enum cmt_folded_metric metric;
    const char *output;
    char **paths;
    const char *stdin_data; /* the trace "-", read whole before the first */
    size_t stdin_size;
    struct cmt_report_options opt;
};

static void export_usage(FILE *out)
{
    fputs("usage: cumemtrace export --format perfetto [-o OUT.json] [OPTIONS] TRACE...\n"
          "       cumemtrace export --format folded [--metric peak|leaks|allocated] [OPTIONS] TRACE\n"
          "\n"
          "  --format perfetto      Chrome Trace Event JSON for ui.perfetto.dev and chrome://tracing:\n"
          "                         live bytes per device and kind, device samples, failed\n"
          "                         allocations with their stacks, steps; one process per trace\n"
          "  --format folded        collapsed stacks (frame;frame;frame bytes) for flamegraph.pl,\n"
          "                         inferno and speedscope\n"
          "  --metric M             folded: peak (live at each device's peak, the default),\n"
          "                         leaks (live at exit) or allocated (every byte allocated)\n"
          "  -o, --output FILE      write there instead of stdout\n"
          "  --full-stacks          keep every frame (the profiler's, cudart's, frameworks')\n"
          "  --fold PATTERN         also fold frames matching PATTERN (repeatable)\n"
          "  --unfold PATTERN       frames matching PATTERN are yours (repeatable)\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          CMT_MEMORY_OPTION_HELP
          "  -h, --help             this help\n"
          "\n"
          "A TRACE of - is read from the standard input (once).\n"
          "docs/export.md says what each format holds and how long runs stay loadable.\n",
          out);
}

enum { OPT_FORMAT = CMT_CLI_OWN_FIRST, OPT_METRIC };

static const struct option export_options[] = {
    {"format", required_argument, NULL, OPT_FORMAT},
    {"metric", required_argument, NULL, OPT_METRIC},
};

/* export's --format names a format of its own, not of one view: its own
 * option, like --metric (the shared ones: command_options.c). */
static int export_option(void *ctx, int value, const char *arg, const char *option)
{
    struct export_cli *cli = ctx;
    (void)option;
    if (value == OPT_FORMAT) {
        if (!strcmp(arg, "perfetto"))
            cli->format = FORMAT_PERFETTO;
        else if (!strcmp(arg, "folded"))
            cli->format = FORMAT_FOLDED;
        else {
            cmt_cli_error("export: --format is perfetto or folded, got '%s'", arg);
            return -1;
        }
        return 0;
    }
    if (!strcmp(arg, "peak"))
        cli->metric = CMT_FOLDED_PEAK;
    else if (!strcmp(arg, "leaks"))
        cli->metric = CMT_FOLDED_LEAKS;
    else if (!strcmp(arg, "allocated"))
        cli->metric = CMT_FOLDED_ALLOCATED;
    else {
        cmt_cli_error("export: --metric is peak, leaks or allocated, got '%s'", arg);
        return -1;
    }
    return 0;
}

static const struct cmt_cli_command export_command = {
    .name = "export",
    .view = CMT_VIEW_PERFETTO,
    .takes = CMT_TAKES_OUTPUT | CMT_TAKES_SYMBOLS,
    .own = export_options,
    .n_own = sizeof export_options / sizeof export_options[0],
    .own_option = export_option,
    .usage = export_usage,
};

static int parse_options(int argc, char **argv, struct export_cli *cli, int *status)
{
    struct cmt_report_options *opt = &cli->opt;
    *opt = (struct cmt_report_options){.top = 10, .max_frames = 8, .tree_min_percent = 1.0, .holder_peaks = true};
    opt->frames.symbolizer.demangle = true;
    struct cmt_cli_options common = {0};
    if (cmt_cli_parse(&export_command, argc, argv, &common, cli, status) < 0)
        return -1;
    cli->output = common.output;
    *status = CMT_EXIT_USAGE;
    if (cli->format == FORMAT_NONE) {
        cmt_cli_error("export: say which format: --format perfetto or --format folded");
        cmt_cli_try_help("export");
        return -1;
    }
    if (cmt_cli_some_traces("export", argc, optind) != 0)
        return -1;
    if (cli->format == FORMAT_FOLDED && argc - optind > 1) {
        cmt_cli_error("export: --format folded takes one trace (run it once per trace)");
        return -1;
    }
    int from_stdin = 0;
    for (int i = optind; i < argc; i++)
        from_stdin += cmt_cli_is_stdin(argv[i]);
    if (from_stdin > 1) {
        cmt_cli_error("export: the standard input (-) can be given once");
        return -1;
    }
    cmt_frames_args_apply(&common.symbols, &opt->frames);
    return optind;
}

/* The earliest wall-clock start of the traces that can be opened. */
static uint64_t earliest_start(const struct export_cli *cli, size_t n)
{
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        struct cmt_reader *reader;
        char err[CMT_READER_MESSAGE_MAX];
        int rc = cmt_cli_is_stdin(cli->paths[i])
                     ? cmt_reader_open_memory(cli->stdin_data, cli->stdin_size, &reader, err, sizeof err)
                     : cmt_reader_open(cli->paths[i], &reader, err, sizeof err);
        if (rc != 0)
            continue;
        uint64_t s = cmt_reader_info(reader)->start_realtime_ns;
        first = s < first ? s : first;
        cmt_reader_close(reader);
    }
    return first == UINT64_MAX ? 0 : first;
}

/* The traces, analysed one at a time as the renderer pulls them. */
struct export_source {
    const struct export_cli *cli;
    struct cmt_progress progress;
    struct cmt_analysis a;
    struct cmt_report r;
    bool analysed, built;
    size_t n_built; /* traces rendered: none, and -o FILE is left as it was */
    int status;
};

static void export_free(struct export_source *src)
{
    if (src->built)
        cmt_report_free(&src->r);
    if (src->analysed)
        cmt_analysis_free(&src->a);
    src->built = src->analysed = false;
}

static const struct cmt_report *export_report(void *ctx, size_t i)
{
    struct export_source *src = ctx;
    const char *path = src->cli->paths[i];
    cmt_progress_trace(&src->progress, i, path);
    /* the holders' own peaks followed in the one reading (read_passes.h),
     * with the report's frames: without them the report reads the trace
     * again for those figures */
    struct cmt_analysis_options aopt = {.forensics = src->cli->format == FORMAT_PERFETTO, .phases = true,
                                        .holder_frames = &src->cli->opt.frames,
                                        .holder_peaks = src->cli->opt.holder_peaks};
    int rc = cmt_cli_is_stdin(path) ? cmt_analysis_run_memory_with(&src->a, src->cli->stdin_data,
                                                                    src->cli->stdin_size, path, 0, &aopt)
                                    : cmt_analysis_run_with(&src->a, path, 0, &aopt);
    src->analysed = true;
    cmt_progress_done(&src->progress);
    if (rc != 0) {
        cmt_cli_error("%s: %s", path, src->a.message);
        src->status = CMT_EXIT_USAGE;
        export_free(src);
        return NULL;
    }
    if (cmt_report_build(&src->r, &src->a, &src->cli->opt) != 0) {
        cmt_cli_error("%s: out of memory while building the report; give fewer traces at a time, or free memory", path);
        src->status = CMT_EXIT_USAGE;
        cmt_report_free(&src->r);
        export_free(src);
        return NULL;
    }
    src->built = true;
    src->n_built++;
    return &src->r;
}

static int export_all(struct export_cli *cli, size_t n);

static void export_done(void *ctx, size_t i)
{
    struct export_source *src = ctx;
    if (src->built) {
        int st = cmt_cli_damage_status(src->cli->paths[i], &src->a, "output");
        if (st != CMT_EXIT_OK)
            src->status = st;
    }
    export_free(src);
}

int cmt_cmd_export(int argc, char **argv)
{
    struct export_cli cli = {0};
    int status;
    int first = parse_options(argc, argv, &cli, &status);
    if (first < 0)
        return status;
    cli.paths = argv + first;
    size_t n = (size_t)(argc - first);
    char *stdin_buf = NULL;
    for (size_t i = 0; i < n; i++)
        if (cmt_cli_is_stdin(cli.paths[i])) {
            char msg[256];
            if (!(stdin_buf = cmt_cli_read_stdin(&cli.stdin_size, msg, sizeof msg))) {
                cmt_cli_error("-: %s", msg);
                return CMT_EXIT_USAGE;
            }
            cli.stdin_data = stdin_buf;
        }
    status = export_all(&cli, n);
    free(stdin_buf);
    return status;
}

static int export_all(struct export_cli *cli_in, size_t n)
{
    struct export_cli cli = *cli_in;
    FILE *out = cmt_cli_output_open("export", cli.output);
    if (!out)
        return CMT_EXIT_USAGE;
    struct export_source src = {.cli = &cli, .status = CMT_EXIT_OK};
    cmt_progress_init(&src.progress, n);
    if (cli.format == FORMAT_PERFETTO) {
        struct cmt_process_summary *sums = calloc(n, sizeof *sums);
        if (!sums) {
            cmt_cli_error("export: out of memory; give fewer traces at a time, or free memory");
            cmt_cli_output_discard(out);
            return CMT_EXIT_USAGE;
        }
        struct cmt_perfetto_model m = {
            .set = {.n = n, .paths = (const char *const *)cli.paths, .summaries = sums, .report = export_report,
                    .done = export_done, .ctx = &src},
            .origin_realtime_ns = earliest_start(&cli, n)};
        cmt_cli_render(CMT_VIEW_PERFETTO, "perfetto", &m, out);
        free(sums);
    } else {
        const struct cmt_report *r = export_report(&src, 0);
        if (r) {
            struct cmt_folded_model m = {.report = r, .metric = cli.metric};
            cmt_cli_render(CMT_VIEW_FOLDED, "folded", &m, out);
        }
        export_done(&src, 0);
    }
    if (!src.n_built && out != stdout) {
        cmt_cli_output_discard(out); /* no trace could be read: no file */
        return src.status;
    }
    return cmt_cli_output_close("export", cli.output, out, out != stdout, src.status);
}
