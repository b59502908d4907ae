/* SPDX-License-Identifier: MIT */
/* cumemtrace timeline [--csv|--json] [OPTIONS] TRACE  (docs/report.md) */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "command_options.h"
#include "symbol_options.h"
#include "timeline_report.h"

static void timeline_usage(FILE *out)
{
    fputs("usage: cumemtrace timeline [--format text|csv|json] [OPTIONS] TRACE\n"
          "\n"
          "Live bytes over time per device and memory kind (device, async-pool,\n"
          "vmm-physical, array, their device-resident total, managed, pinned-host), with\n"
          "each series' peak, and the events per stretch of time. Without --csv or\n"
          "--json: one chart per series.\n"
          "\n"
          "  --format FORMAT        text (default); csv: one row per time bucket\n"
          "                         (docs/report.md lists the columns); json: one object\n"
          "  --csv, -j, --json      --format csv, --format json\n"
          "  -o, --output FILE      write the timeline to FILE instead of standard output\n"
          "  --buckets N            at most N time buckets (default: all kept, up to 1024)\n"
          "  --at TIME              stop the replay at TIME after the start (2, 1.5s, 250ms...)\n"
          "  --chart-width N        columns of the text charts (default 72)\n"
          "  --chart-height N       rows of the text charts (default 8)\n"
          CMT_MEMORY_OPTION_HELP
          "\n"
          "Exit status: 0 printed; 2 bad options, or a file that is not a trace, is of a\n"
          "newer format, or is truncated or damaged (the output then covers the events\n"
          "before the damage).\n",
          out);
}

struct timeline_args {
    size_t buckets, width, height;
};

enum { OPT_BUCKETS = CMT_CLI_OWN_FIRST, OPT_CHART_W, OPT_CHART_H };

static const struct option timeline_options[] = {
    {"buckets", required_argument, NULL, OPT_BUCKETS},
    {"chart-width", required_argument, NULL, OPT_CHART_W},
    {"chart-height", required_argument, NULL, OPT_CHART_H},
};

/* One of timeline's own options (the shared ones: command_options.c). */
static int timeline_option(void *ctx, int value, const char *arg, const char *option)
{
    struct timeline_args *t = ctx;
    size_t *dst = value == OPT_BUCKETS ? &t->buckets : value == OPT_CHART_W ? &t->width : &t->height;
    if (cmt_cli_parse_count(arg, dst) != 0 || *dst == 0) {
        cmt_cli_error("timeline: --%s needs a positive count, got '%s'", option, arg);
        return -1;
    }
    return 0;
}

static const struct cmt_cli_command timeline_command = {
    .name = "timeline",
    .view = CMT_VIEW_TIMELINE,
    .takes = CMT_TAKES_FORMAT | CMT_TAKES_JSON | CMT_TAKES_OUTPUT | CMT_TAKES_CSV | CMT_TAKES_AT |
             CMT_TAKES_MAX_MEMORY,
    .own = timeline_options,
    .n_own = sizeof timeline_options / sizeof timeline_options[0],
    .own_option = timeline_option,
    .usage = timeline_usage,
};

int cmt_cmd_timeline(int argc, char **argv)
{
    struct cmt_cli_options o = {.format = CMT_CLI_FORMAT_INIT};
    struct timeline_args t = {.buckets = CMT_TIMELINE_BUCKETS, .width = 72, .height = 8};
    int status;
    int first = cmt_cli_parse(&timeline_command, argc, argv, &o, &t, &status);
    if (first < 0)
        return status;
    if (cmt_cli_one_trace("timeline", argc, first) != 0)
        return CMT_EXIT_USAGE;
    const char *path = argv[first];
    struct cmt_analysis a;
    if (cmt_cli_analyse(&a, path, o.at_ns, NULL) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_timeline_report rep;
    if (cmt_timeline_report_build(&rep, &a, t.buckets, t.width, t.height) != 0) {
        cmt_cli_error("%s: out of memory; free memory", path);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    FILE *out = cmt_cli_output_open("timeline", o.output);
    if (out) {
        cmt_cli_render(CMT_VIEW_TIMELINE, o.format.format, &rep, out);
        status = cmt_cli_output_close("timeline", o.output, out, out != stdout, CMT_EXIT_OK);
        int damage = cmt_cli_damage_status(path, &a, "timeline");
        if (status == CMT_EXIT_OK)
            status = damage;
    } else {
        status = CMT_EXIT_USAGE;
    }
    cmt_timeline_report_free(&rep);
    cmt_cli_analysis_free(&a);
    return status;
}
