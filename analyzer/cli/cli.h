/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CLI_H
#define CUMEMTRACE_ANALYZER_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "renderers.h"

/* Exit statuses of the cumemtrace command (docs/cli.md). `run` passes the
 * program's own status through instead, unless --check finds a violation. */
enum cmt_exit {
    CMT_EXIT_OK = 0,
    CMT_EXIT_VIOLATION = 1, /* check: a limit was exceeded */
    CMT_EXIT_USAGE = 2      /* bad options, unreadable, damaged or truncated trace */
};

int cmt_cmd_report(int argc, char **argv);
/* `cumemtrace report ARGS` (argv[0] "report") with the report written to
 * out instead of stdout or -o: what the command runs, and what the
 * analysis library's cumemtrace_report_json calls. */
int cmt_report_command(int argc, char **argv, FILE *out);
int cmt_cmd_run(int argc, char **argv);
int cmt_cmd_timeline(int argc, char **argv);
int cmt_cmd_check(int argc, char **argv);
int cmt_cmd_frag(int argc, char **argv);
int cmt_cmd_diff(int argc, char **argv);
int cmt_cmd_export(int argc, char **argv);
int cmt_cmd_whatif(int argc, char **argv);
int cmt_cmd_summarize(int argc, char **argv);
int cmt_cmd_top(int argc, char **argv);

/* "cumemtrace: " + message on stderr. With cmt_cli_verdict the only way the
 * command prints a diagnostic: tests/messages finds every format passed here
 * and fails unless docs/messages.md has it, with what to do. */
void cmt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Diagnostics (the functions below) go to to instead of stderr on the
 * calling thread until called again with NULL: the analysis library
 * (analyzer/lib/) returns them to its caller. */
void cmt_cli_capture(FILE *to);
/* "cumemtrace CMD: " + message on stderr: the last line of `run --check`,
 * saying which exit status applies and why (docs/check.md). */
void cmt_cli_verdict(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After an error about how a command was called: the one line that says
 * where its options are, "try `cumemtrace CMD --help`" (cmd NULL: `cumemtrace
 * help`), on stderr, rather than the whole usage. */
void cmt_cli_try_help(const char *cmd);
/* getopt_long's complaint in our words (call it with opterr 0 and ':' first
 * in the short options): value ':' is a missing value, else an unknown
 * option; argv as given to getopt_long. */
void cmt_cli_option_error(const char *cmd, int value, char *const *argv);
/* A count option (rows, buckets, widths): decimal, 0 to 1,000,000. Returns 0,
 * or -1 when s is not one. */
int cmt_cli_parse_count(const char *s, size_t *out);

/* --format FORMAT of a command that renders view: FORMAT must be one of the
 * view's (renderers.h); *format then points at the table's spelling.
 * Returns 0, or -1 after saying which formats there are. */
int cmt_cli_parse_format(const char *cmd, enum cmt_view view, const char *arg, const char **format);
/* The format a command's options chose: --format FORMAT, or an older
 * spelling standing for one (--json, --csv). Two that differ contradict
 * each other, and are refused rather than the last winning. */
struct cmt_cli_format {
    const char *format; /* the table's spelling; "text" until given */
    char given_as[48];  /* how it was first given, "" when not */
};
#define CMT_CLI_FORMAT_INIT {"text", ""}
/* Records format (spelling: the option as given, "--json"; NULL: "--format
 * FORMAT"). Returns 0, or -1 after saying why it cannot be. */
int cmt_cli_format_option(const char *cmd, enum cmt_view view, struct cmt_cli_format *f, const char *format,
                          const char *spelling);
/* Renders model with the renderer of (view, format; NULL: "text"). Returns
 * 0, or -1 when there is none. */
int cmt_cli_render(enum cmt_view view, const char *format, const void *model, FILE *out);

struct cmt_analysis;
struct cmt_analysis_options;
/* cmt_analysis_run_with for a command's trace, path "-" being the standard
 * input (trace_input.c); free with cmt_cli_analysis_free. */
int cmt_cli_analyse(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns,
                    const struct cmt_analysis_options *opt);
void cmt_cli_analysis_free(struct cmt_analysis *a);
/* Whether path names the standard input ("-"). */
bool cmt_cli_is_stdin(const char *path);
/* The whole standard input in a malloc'd buffer (the reader needs to seek, a
 * pipe cannot); NULL with msg filled when it cannot be read. */
char *cmt_cli_read_stdin(size_t *size, char *msg, size_t msglen);
/* After a command printed what it could of a damaged or truncated trace:
 * says so on stderr (what: "report", "timeline", "output": what covers the
 * events before the damage) and returns CMT_EXIT_USAGE; else CMT_EXIT_OK. */
int cmt_cli_damage_status(const char *path, const struct cmt_analysis *a, const char *what);

#endif
