/* SPDX-License-Identifier: MIT */
/* cumemtrace top [OPTIONS] [TRACE... | DIR...]: traces followed while their
 * processes write them, shown live (analyzer/tui/) or once (docs/top.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "command_options.h"
#include "top.h"
#include "top_cli.h"
#include "tui.h"

static void top_usage(FILE *out)
{
    fputs("usage: cumemtrace top [OPTIONS] [TRACE... | DIR...]\n"
          "\n"
          "Follows traces while their processes write them (and traces already complete)\n"
          "and shows, refreshed every interval: per process and device, live bytes, the\n"
          "peak and when, who holds the memory (PyTorch's reserve and tensors, cuBLAS,\n"
          "NCCL, the rest), the step and phase, growth per step, failed allocations, and\n"
          "the call sites, threads or phases holding the most. A DIR is watched for new\n"
          "traces (*.bin) as processes start; without arguments, the current directory.\n"
          "\n"
          "  --once                 print one snapshot and exit (no terminal needed)\n"
          "  --format FORMAT        with --once: text (default) or json\n"
          "  -j, --json             --format json\n"
          "  -o, --output FILE      with --once: write the snapshot to FILE instead of\n"
          "                         standard output\n"
          "  --interval SECONDS     refresh every SECONDS (0.1 to 60; default 0.5)\n"
          "  --sort KEY             live (default), peak, count or growth\n"
          "  --view VIEW            sites (default), threads or phases\n"
          "  --sites N              with --once: call sites shown per device (default 10)\n"
          "  --no-color             no colours (also when NO_COLOR is set)\n"
          "\n"
          "Keys: q quit, space pause, l p c g sort by live, peak, count, growth, s next\n"
          "sort, tab or arrows next process (and device), d next device, v next view,\n"
          "1 2 3 sites, threads, phases.\n"
          "\n"
          "Exit status: 0; 2 bad options, no terminal for the live view, a TRACE that is\n"
          "not a trace, or (with --once) a trace that is damaged.\n",
          out);
}

int cmt_top_parse_interval(const char *s, unsigned *ms)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.1 && v <= 60))
        return -1;
    *ms = (unsigned)(v * 1000 + 0.5);
    return 0;
}

int cmt_top_parse_sort(const char *s, enum cmt_top_sort *out)
{
    for (int k = 0; k < CMT_TOP_SORT_N; k++)
        if (!strcmp(s, cmt_top_sort_name((enum cmt_top_sort)k))) {
            *out = (enum cmt_top_sort)k;
            return 0;
        }
    return -1;
}

static int parse_view(const char *s, enum cmt_top_view *out)
{
    for (int k = 0; k < CMT_TOP_VIEW_N; k++)
        if (!strcmp(s, cmt_top_view_name((enum cmt_top_view)k))) {
            *out = (enum cmt_top_view)k;
            return 0;
        }
    return -1;
}

bool cmt_top_color_wanted(bool no_color_option)
{
    const char *nc = getenv("NO_COLOR");
    return !no_color_option && !(nc && *nc);
}

static int once(struct cmt_top *t, const char *format, const char *output, enum cmt_top_sort sort, size_t sites)
{
    cmt_top_poll(t, true);
    struct cmt_top_snapshot snap = {.top = t, .sort = sort, .max_sites = sites};
    FILE *out = cmt_cli_output_open("top", output);
    if (!out)
        return CMT_EXIT_USAGE;
    cmt_cli_render(CMT_VIEW_TOP, format, &snap, out);
    int status = cmt_cli_output_close("top", output, out, out != stdout, CMT_EXIT_OK);
    const struct cmt_top_process *const *p;
    size_t n = cmt_top_processes(t, &p);
    for (size_t i = 0; i < n; i++)
        if (p[i]->state == CMT_TOP_DAMAGED) {
            cmt_cli_error("top: %s", p[i]->how); /* the follower's words name the trace */
            status = CMT_EXIT_USAGE;
        }
    if (cmt_top_out_of_memory(t)) {
        cmt_cli_error("top: out of memory while following the traces; free memory");
        status = CMT_EXIT_USAGE;
    }
    return status;
}

enum { OPT_ONCE = CMT_CLI_OWN_FIRST, OPT_INTERVAL, OPT_SORT, OPT_VIEW, OPT_SITES, OPT_NO_COLOR };

static const struct option top_options[] = {
    {"once", no_argument, NULL, OPT_ONCE},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"sort", required_argument, NULL, OPT_SORT},
    {"view", required_argument, NULL, OPT_VIEW},
    {"sites", required_argument, NULL, OPT_SITES},
    {"no-color", no_argument, NULL, OPT_NO_COLOR},
};

struct top_args {
    bool once_only, no_color;
    unsigned interval_ms;
    enum cmt_top_sort sort;
    enum cmt_top_view view;
    size_t sites;
};

/* One of top's own options (the shared ones: command_options.c). */
static int top_option(void *ctx, int value, const char *arg, const char *option)
{
    struct top_args *a = ctx;
    (void)option;
    switch (value) {
    case OPT_ONCE:
        a->once_only = true;
        return 0;
    case OPT_INTERVAL:
        if (cmt_top_parse_interval(arg, &a->interval_ms) != 0) {
            cmt_cli_error("top: --interval takes seconds from 0.1 to 60, got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_SORT:
        if (cmt_top_parse_sort(arg, &a->sort) != 0) {
            cmt_cli_error("top: --sort is one of live, peak, count, growth; got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_VIEW:
        if (parse_view(arg, &a->view) != 0) {
            cmt_cli_error("top: --view is one of sites, threads, phases; got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_SITES:
        if (cmt_cli_parse_count(arg, &a->sites) != 0) {
            cmt_cli_error("top: --sites takes a count, got '%s'", arg);
            return -1;
        }
        return 0;
    default:
        a->no_color = true;
        return 0;
    }
}

static const struct cmt_cli_command top_command = {
    .name = "top",
    .view = CMT_VIEW_TOP,
    .takes = CMT_TAKES_FORMAT | CMT_TAKES_JSON | CMT_TAKES_OUTPUT,
    .own = top_options,
    .n_own = sizeof top_options / sizeof top_options[0],
    .own_option = top_option,
    .usage = top_usage,
};

int cmt_cmd_top(int argc, char **argv)
{
    struct cmt_cli_options opts = {.format = CMT_CLI_FORMAT_INIT};
    struct top_args a = {.interval_ms = 500, .sort = CMT_TOP_SORT_LIVE, .view = CMT_TOP_VIEW_SITES, .sites = 10};
    int status;
    int first = cmt_cli_parse(&top_command, argc, argv, &opts, &a, &status);
    if (first < 0)
        return status;
    if (opts.format.given_as[0] && !a.once_only) {
        cmt_cli_error("top: %s is for --once: the live view is a screen", opts.format.given_as);
        return CMT_EXIT_USAGE;
    }
    if (opts.output && !a.once_only) {
        cmt_cli_error("top: %s is for --once: the live view is a screen", "-o");
        return CMT_EXIT_USAGE;
    }
    struct cmt_top *t;
    if (cmt_top_new(&t) != 0) {
        cmt_cli_error("top: out of memory; free memory");
        return CMT_EXIT_USAGE;
    }
    char err[600];
    char *dot[] = {(char *)".", NULL};
    char **paths = first < argc ? argv + first : dot;
    int n_paths = first < argc ? argc - first : 1;
    for (int i = 0; i < n_paths; i++) {
        if (cmt_top_add_path(t, paths[i], err, sizeof err) != 0) {
            cmt_cli_error("top: %s", err);
            cmt_top_free(t);
            return CMT_EXIT_USAGE;
        }
    }
    if (a.once_only) {
        status = once(t, opts.format.format, opts.output, a.sort, a.sites);
    } else {
        struct cmt_tui_options o = {.interval_ms = a.interval_ms, .color = cmt_top_color_wanted(a.no_color),
                                    .sort = a.sort, .view = a.view};
        status = CMT_EXIT_OK;
        if (cmt_tui_run(t, &o, err, sizeof err) != 0) {
            cmt_cli_error("top: %s", err);
            status = CMT_EXIT_USAGE;
        }
    }
    cmt_top_free(t);
    return status;
}
