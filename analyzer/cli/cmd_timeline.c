/* SPDX-License-Identifier: MIT */
/* cumemtrace timeline [--csv|--json] [OPTIONS] TRACE  (docs/report.md) */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "json_writer.h"
#include "size_parse.h"
#include "time_arg.h"
#include "timeline_chart.h"

enum timeline_format { FORMAT_TEXT, FORMAT_CSV, FORMAT_JSON };

static void timeline_usage(FILE *out)
{
    fputs("usage: cumemtrace timeline [--csv|--json] [OPTIONS] TRACE\n"
          "\n"
          "Live bytes over time per device and memory kind (device, async-pool,\n"
          "vmm-physical, array, their device-resident total, managed, pinned-host), with\n"
          "each series' peak, and the events per stretch of time. Without --csv or\n"
          "--json: one chart per series.\n"
          "\n"
          "  --csv                  one row per time bucket (docs/report.md lists the columns)\n"
          "  --json                 one JSON object\n"
          "  --buckets N            at most N time buckets (default: all kept, up to 1024)\n"
          "  --at TIME              stop the replay at TIME after the start (2, 1.5s, 250ms...)\n"
          "  --chart-width N        columns of the text charts (default 72)\n"
          "  --chart-height N       rows of the text charts (default 8)\n"
          "\n"
          "Exit status: 0 printed; 2 bad options, or a file that is not a trace, is of a\n"
          "newer format, or is truncated or damaged (the output then covers the events\n"
          "before the damage).\n",
          out);
}

static void series_label(const struct cmt_timeline_series *s, char *buf, size_t len)
{
    if (s->device < 0)
        snprintf(buf, len, "host.%s", cmt_timeline_kind_name(s->kind));
    else
        snprintf(buf, len, "dev%d.%s", s->device, cmt_timeline_kind_name(s->kind));
}

static uint64_t rel(const struct cmt_analysis *a, uint64_t ts)
{
    return ts > a->info.start_monotonic_ns ? ts - a->info.start_monotonic_ns : 0;
}

static void print_csv(const struct cmt_analysis *a, const struct cmt_timeline_view *v)
{
    char label[64];
    printf("start_ns,end_ns,events,allocs,frees,failures");
    for (size_t s = 0; s < v->n_series; s++) {
        series_label(v->series[s], label, sizeof label);
        printf(",%s.min,%s.max,%s.last", label, label, label);
    }
    printf(",peaks\n");
    for (size_t b = 0; b < v->n; b++) {
        const struct cmt_timeline_counts *c = &v->counts[b];
        printf("%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
               rel(a, cmt_timeline_view_start(v, b)), rel(a, cmt_timeline_view_start(v, b + 1)), c->allocs + c->frees + c->failures, c->allocs, c->frees, c->failures);
        for (size_t s = 0; s < v->n_series; s++) {
            const struct cmt_timeline_cell *cell = &v->cells[s * v->n + b];
            printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64, cell->min, cell->max, cell->last);
        }
        printf(",");
        bool first = true;
        for (size_t s = 0; s < v->n_series; s++) {
            const struct cmt_timeline_series *se = v->series[s];
            if (se->peak && cmt_timeline_view_bucket(v, se->peak_ts) == b) {
                series_label(se, label, sizeof label);
                printf("%s%s", first ? "" : ";", label);
                first = false;
            }
        }
        printf("\n");
    }
}

static void print_json(const struct cmt_analysis *a, const struct cmt_timeline_view *v)
{
    struct cmt_json j;
    cmt_json_init(&j, stdout, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "trace");
    cmt_json_string(&j, a->path);
    cmt_json_key(&j, "start_realtime_ns");
    cmt_json_uint(&j, a->info.start_realtime_ns);
    cmt_json_key(&j, "end_ns");
    cmt_json_uint(&j, rel(a, v->end));
    cmt_json_key(&j, "bucket_ns");
    cmt_json_uint(&j, v->width);
    cmt_json_key(&j, "buckets");
    cmt_json_begin_array(&j);
    for (size_t b = 0; b < v->n; b++) {
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "start_ns");
        cmt_json_uint(&j, rel(a, cmt_timeline_view_start(v, b)));
        cmt_json_key(&j, "allocs");
        cmt_json_uint(&j, v->counts[b].allocs);
        cmt_json_key(&j, "frees");
        cmt_json_uint(&j, v->counts[b].frees);
        cmt_json_key(&j, "failures");
        cmt_json_uint(&j, v->counts[b].failures);
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_key(&j, "series");
    cmt_json_begin_array(&j);
    static const char *const fields[] = {"min", "max", "last"};
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_series *se = v->series[s];
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "device");
        cmt_json_int(&j, se->device);
        cmt_json_key(&j, "kind");
        cmt_json_string(&j, cmt_timeline_kind_name(se->kind));
        cmt_json_key(&j, "peak_bytes");
        cmt_json_uint(&j, se->peak);
        cmt_json_key(&j, "peak_time_ns");
        cmt_json_uint(&j, rel(a, se->peak_ts));
        cmt_json_key(&j, "peak_bucket");
        cmt_json_uint(&j, cmt_timeline_view_bucket(v, se->peak_ts));
        cmt_json_key(&j, "live_at_end_bytes");
        cmt_json_uint(&j, se->live);
        for (int f = 0; f < 3; f++) {
            cmt_json_key(&j, fields[f]);
            cmt_json_begin_array(&j);
            for (size_t b = 0; b < v->n; b++) {
                const struct cmt_timeline_cell *c = &v->cells[s * v->n + b];
                cmt_json_uint(&j, f == 0 ? c->min : f == 1 ? c->max : c->last);
            }
            cmt_json_end_array(&j);
        }
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}

static void print_text(const struct cmt_analysis *a, const struct cmt_timeline_view *v, size_t width,
                       size_t height)
{
    char b1[32], b2[32], when[32];
    printf("cumemtrace timeline of %s\n", a->path);
    cmt_format_duration(v->width, b1, sizeof b1);
    cmt_format_duration(rel(a, v->end), b2, sizeof b2);
    printf("  %zu buckets of %s, 0 s to %s\n", v->n, b1, b2);
    if (v->n_series == 0)
        printf("\nNothing was allocated.\n");
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_series *se = v->series[s];
        cmt_format_size(se->peak, b1, sizeof b1);
        cmt_format_size(se->live, b2, sizeof b2);
        cmt_format_duration(rel(a, se->peak_ts), when, sizeof when);
        if (se->device < 0 && se->kind == CMT_TIMELINE_TOTAL)
            printf("\nHost, total of pinned host memory (host-located VMM included)");
        else if (se->device < 0)
            printf("\nHost, %s", cmt_timeline_kind_name(se->kind));
        else if (se->kind == CMT_TIMELINE_TOTAL)
            printf("\nDevice %d, total of device-resident memory", se->device);
        else
            printf("\nDevice %d, %s", se->device, cmt_timeline_kind_name(se->kind));
        printf(": peak %s at %s, %s at the end\n", b1, when, b2);
        cmt_timeline_chart(stdout, &a->replay.timeline, se, width, height, "  ", a->info.start_monotonic_ns);
    }
}

int cmt_cmd_timeline(int argc, char **argv)
{
    enum { OPT_CSV = 256, OPT_JSON, OPT_BUCKETS, OPT_AT, OPT_CHART_W, OPT_CHART_H };
    static const struct option longopts[] = {
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"buckets", required_argument, NULL, OPT_BUCKETS},
        {"at", required_argument, NULL, OPT_AT},
        {"chart-width", required_argument, NULL, OPT_CHART_W},
        {"chart-height", required_argument, NULL, OPT_CHART_H},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    enum timeline_format format = FORMAT_TEXT;
    size_t buckets = CMT_TIMELINE_BUCKETS, width = 72, height = 8;
    uint64_t at = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_CSV:
        case OPT_JSON:
            format = c == OPT_CSV ? FORMAT_CSV : FORMAT_JSON;
            break;
        case OPT_BUCKETS:
        case OPT_CHART_W:
        case OPT_CHART_H: {
            size_t *dst = c == OPT_BUCKETS ? &buckets : c == OPT_CHART_W ? &width : &height;
            if (cmt_cli_parse_count(optarg, dst) != 0 || *dst == 0) {
                cmt_cli_error("timeline: %s needs a positive count, got '%s'", argv[optind - 1], optarg);
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
        case 'h':
            timeline_usage(stdout);
            return CMT_EXIT_OK;
        default:
            timeline_usage(stderr);
            return CMT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cmt_cli_error(optind == argc ? "timeline: no trace given" : "timeline: one trace at a time");
        timeline_usage(stderr);
        return CMT_EXIT_USAGE;
    }
    const char *path = argv[optind];
    struct cmt_analysis a;
    if (cmt_analysis_run(&a, path, at) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_timeline_view v;
    if (cmt_timeline_resample(&a.replay.timeline, buckets, &v) != 0) {
        cmt_cli_error("%s: out of memory", path);
        cmt_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    if (format == FORMAT_CSV)
        print_csv(&a, &v);
    else if (format == FORMAT_JSON)
        print_json(&a, &v);
    else
        print_text(&a, &v, width, height);
    fflush(stdout);
    int status = cmt_cli_damage_status(path, &a, "timeline");
    cmt_timeline_view_free(&v);
    cmt_analysis_free(&a);
    return status;
}
