/* SPDX-License-Identifier: MIT */
/* How the commands speak (cli.h): every diagnostic goes through here, to
 * stderr, or to the stream a library caller set (cmt_cli_capture). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "cli.h"

static __thread FILE *captured;

void cmt_cli_capture(FILE *to)
{
    captured = to;
}

static FILE *sink(void)
{
    return captured ? captured : stderr;
}

void cmt_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    FILE *out = sink();
    fputs("cumemtrace: ", out);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
}

void cmt_cli_verdict(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    FILE *out = sink();
    fprintf(out, "cumemtrace %s: ", cmd);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
}

void cmt_cli_try_help(const char *cmd)
{
    if (cmd)
        fprintf(sink(), "try `cumemtrace %s --help`\n", cmd);
    else
        fputs("try `cumemtrace help`\n", sink());
}

void cmt_cli_option_error(const char *cmd, int value, char *const *argv)
{
    const char *arg = argv[optind - 1];
    if (value == ':')
        cmt_cli_error("%s: option '%s' needs a value", cmd, arg);
    else if (optopt && optopt != '?')
        cmt_cli_error("%s: unknown option '-%c'", cmd, optopt);
    else
        cmt_cli_error("%s: unknown option '%s'", cmd, arg);
}

int cmt_cli_damage_status(const char *path, const struct cmt_analysis *a, const char *what)
{
    if (a->damaged) {
        cmt_cli_error("%s: %s; the %s covers the events before it (the file changed after it was written: copy it "
                      "again from where it was recorded, or record again)", path, a->message, what);
        return CMT_EXIT_USAGE;
    }
    if (cmt_reader_truncated(a->reader)) {
        cmt_cli_error("%s: trace is truncated: the file ends at offset %llu; the %s covers the events before "
                      "the cut (copy the whole file to see the rest)",
                      path, (unsigned long long)a->info.file_size, what);
        return CMT_EXIT_USAGE;
    }
    return CMT_EXIT_OK;
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
