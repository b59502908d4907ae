/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_COMMAND_OPTIONS_H
#define CUMEMTRACE_ANALYZER_COMMAND_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "frames.h"

/* The options the commands that read traces share (report, export,
 * timeline, frag, diff, whatif, check), parsed in one place with the same
 * words: each command says which it takes and adds its own. A new command
 * that writes a report takes CMT_TAKES_OUTPUT and opens its output with
 * cmt_cli_output_open (docs/cli.md, "Options every command shares").
 *
 * getopt values: a command's own long options from CMT_CLI_OWN_FIRST to
 * 299, check's from 300 (check_options.h), the symbol options' from 400
 * (symbol_options.h), these from 500. */
#define CMT_CLI_OWN_FIRST 256
#define CMT_CLI_MAX_FILES 64

enum cmt_cli_takes {
    CMT_TAKES_FORMAT = 1u << 0,         /* --format FORMAT, one of the command's view's */
    CMT_TAKES_JSON = 1u << 1,           /* --json (-j): --format json */
    CMT_TAKES_CSV = 1u << 2,            /* --csv: --format csv */
    CMT_TAKES_OUTPUT = 1u << 3,         /* -o, --output FILE */
    CMT_TAKES_SYMBOLS = 1u << 4,        /* the symbol options, --max-memory included */
    CMT_TAKES_MAX_MEMORY = 1u << 5,     /* --max-memory alone (a command that shows no stacks) */
    CMT_TAKES_TOP = 1u << 6,            /* --top N */
    CMT_TAKES_MAX_FRAMES = 1u << 7,     /* --max-frames N */
    CMT_TAKES_ALLOWANCE = 1u << 8,      /* --context-allowance SIZE */
    CMT_TAKES_AT = 1u << 9,             /* --at TIME */
    CMT_TAKES_INCLUDE_CACHED = 1u << 10, /* --include-cached */
    CMT_TAKES_SUPPRESSIONS = 1u << 11,  /* --suppressions FILE, --no-default-suppressions */
};

/* What the shared options said. The command sets the defaults it wants
 * (format CMT_CLI_FORMAT_INIT, top, max_frames) before parsing. */
struct cmt_cli_options {
    struct cmt_cli_format format;
    const char *output; /* -o FILE; NULL: standard output */
    struct cmt_frames_args symbols;
    size_t top, max_frames;
    uint64_t context_allowance;
    bool context_allowance_set;
    uint64_t at_ns; /* --at; 0 when not given */
    bool include_cached;
    const char *suppression_files[CMT_CLI_MAX_FILES];
    size_t n_suppression_files;
    bool no_default_suppressions;
};

struct cmt_cli_command {
    const char *name;   /* in messages: "report" */
    enum cmt_view view; /* the formats --format takes */
    unsigned takes;     /* enum cmt_cli_takes */
    /* The command's own long options (n_own of them, no terminator) and
     * what applies one: returns 0, or -1 after saying what is wrong
     * (option: its long name). */
    const struct option *own;
    size_t n_own;
    int (*own_option)(void *ctx, int value, const char *arg, const char *option);
    /* Its own short options, getopt's way ("j:"), each the value of one of
     * own; NULL when none. */
    const char *own_shorts;
    void (*usage)(FILE *out); /* --help, on standard output */
};

/* Parses argv (argv[0] the command's name) into o and, through
 * own_option, ctx. Returns the index of the first operand; or -1 when the
 * command is done, *status then being CMT_EXIT_OK (--help printed) or
 * CMT_EXIT_USAGE (said why, with the `--help` line where the command line
 * itself is wrong). */
int cmt_cli_parse(const struct cmt_cli_command *c, int argc, char **argv, struct cmt_cli_options *o, void *ctx,
                  int *status);
/* A command of one trace or more: argv[first] must be an operand. Returns
 * 0, or -1 after saying "no trace given". */
int cmt_cli_some_traces(const char *cmd, int argc, int first);
/* A command of one trace: argv[first] must be the only operand. Returns 0,
 * or -1 after saying "no trace given" or "one trace at a time". */
int cmt_cli_one_trace(const char *cmd, int argc, int first);

/* The command's output: -o FILE, or the standard output when path is NULL.
 * A regular file (or a new one) is written to a temporary beside it that
 * cmt_cli_output_close renames over it: a run that fails leaves FILE as it
 * was, never empty or cut; a device, FIFO or symbolic link is written in
 * place. NULL after saying why the file cannot be created. Open it once
 * what is written is known to exist where that is known early. */
FILE *cmt_cli_output_open(const char *cmd, const char *path);
/* Flushes out, and closes it when close (a file: renamed into place);
 * returns status, or CMT_EXIT_USAGE after saying that writing path (NULL:
 * the standard output) failed, the temporary removed. */
int cmt_cli_output_close(const char *cmd, const char *path, FILE *out, bool close, int status);
/* Closes what cmt_cli_output_open opened with nothing worth keeping in it
 * (no trace could be read): FILE is left as it was. */
void cmt_cli_output_discard(FILE *out);

#endif
