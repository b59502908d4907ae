/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "cmt_version.h"

static void usage(FILE *out)
{
    fputs("usage: cumemtrace COMMAND [OPTIONS] ...\n"
          "\n"
          "Commands:\n"
          "  run [-o TEMPLATE] [--] PROGRAM [ARGS...]   run PROGRAM with the profiler preloaded\n"
          "  run [-o TEMPLATE] --check [CHECK OPTIONS] -- PROGRAM [ARGS...]\n"
          "                                             run PROGRAM, then check its traces (CI)\n"
          "  report [--format F] [OPTIONS] TRACE...     explain traces: peaks, leaks, growth, failures\n"
          "  summarize [-o OUT] [-j N] TRACE...         sum traces up where they lie, for report's job\n"
          "                                             view of a job too large for one machine\n"
          "  timeline [--format F] [OPTIONS] TRACE      live bytes over time per device and kind\n"
          "  export --format perfetto|folded TRACE...   Perfetto JSON, collapsed stacks for flame graphs\n"
          "  check [OPTIONS] TRACE...                   fail on leaks, peaks over budget, failed allocations\n"
          "                                             the program did not survive\n"
          "  frag [--format F] [OPTIONS] TRACE          why allocations failed, fragmentation, waste, churn\n"
          "  diff [--format F] [OPTIONS] OLD NEW        two runs compared call site by call site\n"
          "  whatif [--set VALUE] [--compare] TRACE     PyTorch's cache replayed under other settings\n"
          "                                             and device sizes: reserve, out of memory or not\n"
          "  top [--once] [OPTIONS] [TRACE... | DIR]    follow running processes' traces live\n"
          "  version, -V, --version                     print the version\n"
          "  help [COMMAND]                             this text, or COMMAND's (COMMAND --help)\n"
          "\n"
          "`cumemtrace COMMAND --help` describes each command; `man cumemtrace` and docs/cli.md\n"
          "(installed: share/doc/cumemtrace/cli.md) have everything.\n",
          out);
}

/* The commands (docs/cli.md): a new one is a line here and a cmd_*.c. */
static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"run", cmt_cmd_run},
    {"report", cmt_cmd_report},
    {"timeline", cmt_cmd_timeline},
    {"check", cmt_cmd_check},
    {"frag", cmt_cmd_frag},
    {"diff", cmt_cmd_diff},
    {"export", cmt_cmd_export},
    {"whatif", cmt_cmd_whatif},
    {"summarize", cmt_cmd_summarize},
    {"top", cmt_cmd_top},
};

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cmt_cli_error("no command given");
        cmt_cli_try_help(NULL);
        return CMT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    const struct command *c = find_command(cmd);
    if (c)
        return c->run(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("cumemtrace %s (trace format %d.%d)\n", CMT_VERSION, CMT_VERSION_MAJOR, CMT_VERSION_MINOR);
        return CMT_EXIT_OK;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc < 3) {
            usage(stdout);
            return CMT_EXIT_OK;
        }
        /* `cumemtrace help report` is `cumemtrace report --help` */
        const struct command *h = find_command(argv[2]);
        if (!h) {
            cmt_cli_error("help: unknown command '%s'", argv[2]);
            cmt_cli_try_help(NULL);
            return CMT_EXIT_USAGE;
        }
        char *help_argv[] = {argv[2], (char *)"--help", NULL};
        return h->run(2, help_argv);
    }
    cmt_cli_error("unknown command '%s'", cmd);
    cmt_cli_try_help(NULL);
    return CMT_EXIT_USAGE;
}
