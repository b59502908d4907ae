/* SPDX-License-Identifier: MIT */
/* cumemtrace timeline [--csv|--json] [OPTIONS] TRACE  (docs/report.md) */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "symbol_options.h"
#include "time_arg.h"
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
          "  --csv, --json          --format csv, --format json\n"
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

int cmt_cmd_timeline(int argc, char **argv)
{
    enum { OPT_CSV = 256, OPT_JSON, OPT_FORMAT, OPT_BUCKETS, OPT_AT, OPT_CHART_W, OPT_CHART_H, OPT_MAX_MEMORY };
    static const struct option longopts[] = {
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"buckets", required_argument, NULL, OPT_BUCKETS},
        {"at", required_argument, NULL, OPT_AT},
        {"chart-width", required_argument, NULL, OPT_CHART_W},
        {"chart-height", required_argument, NULL, OPT_CHART_H},
        {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cmt_cli_format format = CMT_CLI_FORMAT_INIT;
    size_t buckets = CMT_TIMELINE_BUCKETS, width = 72, height = 8;
    uint64_t at = 0;
    optind = 1;
    int c, index = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, &index)) != -1) {
        switch (c) {
        case OPT_CSV:
        case OPT_JSON:
            if (cmt_cli_format_option("timeline", CMT_VIEW_TIMELINE, &format, c == OPT_CSV ? "csv" : "json",
                                      c == OPT_CSV ? "--csv" : "--json") != 0)
                return CMT_EXIT_USAGE;
            break;
        case OPT_FORMAT:
            if (cmt_cli_format_option("timeline", CMT_VIEW_TIMELINE, &format, optarg, NULL) != 0)
                return CMT_EXIT_USAGE;
            break;
        case OPT_BUCKETS:
        case OPT_CHART_W:
        case OPT_CHART_H: {
            size_t *dst = c == OPT_BUCKETS ? &buckets : c == OPT_CHART_W ? &width : &height;
            if (cmt_cli_parse_count(optarg, dst) != 0 || *dst == 0) {
                cmt_cli_error("timeline: --%s needs a positive count, got '%s'", longopts[index].name, optarg);
                return CMT_EXIT_USAGE;
            }
            break;
        }
        case OPT_AT:
            if (cmt_parse_time_arg(optarg, &at) != 0 || at == 0) {
                cmt_cli_error("timeline: --at needs a time after the start of the trace, such as 2, 1.5s, "
                              "250ms, 80us or 1500000ns; got '%s'",
                              optarg);
                return CMT_EXIT_USAGE;
            }
            break;
        case OPT_MAX_MEMORY:
            if (cmt_memory_option("timeline", optarg) != 0)
                return CMT_EXIT_USAGE;
            break;
        case 'h':
            timeline_usage(stdout);
            return CMT_EXIT_OK;
        default:
            cmt_cli_option_error("timeline", c, argv);
            cmt_cli_try_help("timeline");
            return CMT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cmt_cli_error(optind == argc ? "timeline: no trace given"
                                     : "timeline: one trace at a time: run timeline once per trace");
        cmt_cli_try_help("timeline");
        return CMT_EXIT_USAGE;
    }
    const char *path = argv[optind];
    struct cmt_analysis a;
    if (cmt_cli_analyse(&a, path, at, NULL) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_timeline_report t;
    if (cmt_timeline_report_build(&t, &a, buckets, width, height) != 0) {
        cmt_cli_error("%s: out of memory; free memory", path);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    cmt_cli_render(CMT_VIEW_TIMELINE, format.format, &t, stdout);
    fflush(stdout);
    int status = cmt_cli_damage_status(path, &a, "timeline");
    cmt_timeline_report_free(&t);
    cmt_cli_analysis_free(&a);
    return status;
}
