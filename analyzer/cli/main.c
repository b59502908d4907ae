/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

#ifndef CMT_VERSION
#define CMT_VERSION "unknown"
#endif

void cmt_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cumemtrace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cmt_cli_damage_status(const char *path, const struct cmt_analysis *a, const char *what)
{
    if (a->damaged) {
        cmt_cli_error("%s: %s; the %s covers the events before it", path, a->message, what);
        return CMT_EXIT_USAGE;
    }
    if (cmt_reader_truncated(a->reader)) {
        cmt_cli_error("%s: trace is truncated: the file ends at offset %llu; the %s covers the events before "
                      "the cut",
                      path, (unsigned long long)a->info.file_size, what);
        return CMT_EXIT_USAGE;
    }
    return CMT_EXIT_OK;
}

static void usage(FILE *out)
{
    fputs("usage: cumemtrace COMMAND [OPTIONS] ...\n"
          "\n"
          "Commands:\n"
          "  run [-o TEMPLATE] [--] PROGRAM [ARGS...]   run PROGRAM with the profiler preloaded\n"
          "  run [-o TEMPLATE] --check [CHECK OPTIONS] -- PROGRAM [ARGS...]\n"
          "                                             run PROGRAM, then check its traces (CI)\n"
          "  report [--json] [OPTIONS] TRACE...         explain traces: peaks, leaks, growth, failures\n"
          "  timeline [--csv|--json] [OPTIONS] TRACE    live bytes over time per device and kind\n"
          "  check [OPTIONS] TRACE...                   fail on leaks, peaks over budget, failed allocations\n"
          "  frag [--json] [OPTIONS] TRACE              why allocations failed, fragmentation, waste, churn\n"
          "  version                                    print the version\n"
          "  help                                       this text\n"
          "\n"
          "`cumemtrace COMMAND --help` describes each command; docs/cli.md has everything.\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CMT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "report"))
        return cmt_cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "timeline"))
        return cmt_cmd_timeline(argc - 1, argv + 1);
    if (!strcmp(cmd, "run"))
        return cmt_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check"))
        return cmt_cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "frag"))
        return cmt_cmd_frag(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("cumemtrace %s (trace format %d.%d)\n", CMT_VERSION, CMT_VERSION_MAJOR, CMT_VERSION_MINOR);
        return CMT_EXIT_OK;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return CMT_EXIT_OK;
    }
    cmt_cli_error("unknown command '%s'", cmd);
    usage(stderr);
    return CMT_EXIT_USAGE;
}

int cmt_cli_parse_count(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v > 1000000)
        return -1;
    *out = (size_t)v;
    return 0;
}
