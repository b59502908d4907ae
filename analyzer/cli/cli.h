/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CLI_H
#define CUMEMTRACE_ANALYZER_CLI_H

#include <stddef.h>
#include <stdio.h>

/* Exit statuses of the cumemtrace command (docs/cli.md). `run` passes the
 * program's own status through instead, unless --check finds a violation. */
enum cmt_exit {
    CMT_EXIT_OK = 0,
    CMT_EXIT_VIOLATION = 1, /* check: a limit was exceeded */
    CMT_EXIT_USAGE = 2      /* bad options, unreadable, damaged or truncated trace */
};

int cmt_cmd_report(int argc, char **argv);
int cmt_cmd_run(int argc, char **argv);
int cmt_cmd_timeline(int argc, char **argv);
int cmt_cmd_check(int argc, char **argv);
int cmt_cmd_frag(int argc, char **argv);

/* "cumemtrace: " + message on stderr. */
void cmt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A count option (rows, buckets, widths): decimal, 0 to 1,000,000. Returns 0,
 * or -1 when s is not one. */
int cmt_cli_parse_count(const char *s, size_t *out);

struct cmt_analysis;
/* After a command printed what it could of a damaged or truncated trace:
 * says so on stderr (what: "report", "timeline", "output": what covers the
 * events before the damage) and returns CMT_EXIT_USAGE; else CMT_EXIT_OK. */
int cmt_cli_damage_status(const char *path, const struct cmt_analysis *a, const char *what);

#endif
