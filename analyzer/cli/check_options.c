/* SPDX-License-Identifier: MIT */
#include "check_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "symbol_options.h"
#include "size_parse.h"

enum {
    OPT_MAX_LEAK_BYTES = CMT_CHECK_OPT_FIRST,
    OPT_MAX_LEAK_COUNT,
    OPT_MAX_PEAK,
    OPT_NO_FAILED_ALLOCATIONS,
    OPT_FAILED_ALLOCATIONS,
    OPT_SUPPRESSIONS,
    OPT_NO_DEFAULT_SUPPRESSIONS,
    OPT_PRINT_SUPPRESSIONS,
    OPT_BASELINE,
    OPT_MAX_PEAK_GROWTH,
    OPT_CHECK_INCOMPLETE,
    OPT_FORMAT,
    OPT_REPORT_FILE,
    OPT_SOURCE_ROOT,
    OPT_ERROR_EXITCODE,
    OPT_MAX_FRAMES,
    OPT_KEEP_TRACES,
    OPT_REQUIRE_TRACE,
    OPT_INCLUDE_CACHED,
    OPT_TENSORS_ALIVE_AT_EXIT,
    OPT_LAST
};

const struct option cmt_check_longopts[] = {
    {"max-leak-bytes", required_argument, NULL, OPT_MAX_LEAK_BYTES},
    {"max-leak-count", required_argument, NULL, OPT_MAX_LEAK_COUNT},
    {"max-peak", required_argument, NULL, OPT_MAX_PEAK},
    {"failed-allocations", required_argument, NULL, OPT_FAILED_ALLOCATIONS},
    {"no-failed-allocations", no_argument, NULL, OPT_NO_FAILED_ALLOCATIONS}, /* deprecated */
    {"suppressions", required_argument, NULL, OPT_SUPPRESSIONS},
    {"no-default-suppressions", no_argument, NULL, OPT_NO_DEFAULT_SUPPRESSIONS},
    {"print-suppressions", no_argument, NULL, OPT_PRINT_SUPPRESSIONS},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"max-peak-growth", required_argument, NULL, OPT_MAX_PEAK_GROWTH},
    {"check-incomplete", no_argument, NULL, OPT_CHECK_INCOMPLETE},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"report-file", required_argument, NULL, OPT_REPORT_FILE},
    {"source-root", required_argument, NULL, OPT_SOURCE_ROOT},
    {"error-exitcode", required_argument, NULL, OPT_ERROR_EXITCODE},
    {"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
    {"keep-traces", no_argument, NULL, OPT_KEEP_TRACES},
    {"require-trace", no_argument, NULL, OPT_REQUIRE_TRACE},
    {"include-cached", no_argument, NULL, OPT_INCLUDE_CACHED},
    {"tensors-alive-at-exit", no_argument, NULL, OPT_TENSORS_ALIVE_AT_EXIT},
    {NULL, 0, NULL, 0},
};

const size_t cmt_check_longopts_count = sizeof cmt_check_longopts / sizeof cmt_check_longopts[0] - 1;

bool cmt_check_is_option(int value)
{
    return (value >= CMT_CHECK_OPT_FIRST && value < OPT_LAST) || cmt_symbol_is_option(value);
}

size_t cmt_check_all_longopts(struct option *out)
{
    size_t n = cmt_check_longopts_count;
    memcpy(out, cmt_check_longopts, n * sizeof *out);
    cmt_symbol_longopts(out, &n);
    return n;
}

static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
    if (!*s || s[0] == '-' || s[0] == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max)
        return -1;
    *out = v;
    return 0;
}

static int add_to_list(const char **list, size_t *n, const char *value, const char *cmd, const char *name)
{
    if (*n == CMT_CHECK_MAX_LIST) {
        cmt_cli_error("%s: at most %d %s options", cmd, CMT_CHECK_MAX_LIST, name);
        return -1;
    }
    list[(*n)++] = value;
    return 0;
}

/* --max-peak SIZE or --max-peak DEVICE=SIZE. */
static int parse_peak(struct cmt_check_options *o, const char *arg, const char *cmd)
{
    int32_t device = -1;
    const char *size = arg;
    const char *eq = strchr(arg, '=');
    if (eq) {
        char dev[16];
        uint64_t d;
        size_t n = (size_t)(eq - arg);
        if (n == 0 || n >= sizeof dev)
            goto bad;
        memcpy(dev, arg, n);
        dev[n] = '\0';
        if (parse_count(dev, 63, &d) != 0)
            goto bad;
        device = (int32_t)d;
        size = eq + 1;
    }
    uint64_t bytes;
    if (cmt_parse_size(size, &bytes) != 0)
        goto bad;
    for (size_t i = 0; i < o->n_peak_limits; i++)
        if (o->peak_limits[i].device == device) {
            o->peak_limits[i].bytes = bytes; /* the last one given wins */
            return 0;
        }
    if (o->n_peak_limits == CMT_CHECK_MAX_LIST) {
        cmt_cli_error("%s: at most %d --max-peak options", cmd, CMT_CHECK_MAX_LIST);
        return -1;
    }
    o->peak_limits[o->n_peak_limits++] = (struct cmt_peak_limit){device, bytes};
    return 0;
bad:
    cmt_cli_error("%s: --max-peak needs a size such as 40GiB, or DEVICE=SIZE such as 1=40GiB; got '%s'", cmd, arg);
    return -1;
}

static int parse_percent(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || v > 1e9 || v != v)
        return -1;
    if (*end == '%')
        end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

int cmt_check_parse_option(struct cmt_check_options *o, int value, const char *arg, const char *cmd)
{
    uint64_t v;
    switch (value) {
    case OPT_MAX_LEAK_BYTES:
        if (cmt_parse_size(arg, &o->max_leak_bytes) != 0) {
            cmt_cli_error("%s: --max-leak-bytes needs a size such as 0, 4096 or 64MiB; got '%s'", cmd, arg);
            return -1;
        }
        o->has_max_leak_bytes = true;
        return 0;
    case OPT_MAX_LEAK_COUNT:
        if (parse_count(arg, UINT64_MAX, &o->max_leak_count) != 0) {
            cmt_cli_error("%s: --max-leak-count needs a number of allocations; got '%s'", cmd, arg);
            return -1;
        }
        o->has_max_leak_count = true;
        return 0;
    case OPT_MAX_PEAK:
        return parse_peak(o, arg, cmd);
    case OPT_NO_FAILED_ALLOCATIONS:
        /* Its name read as the opposite of what it did (issue 33): kept
         * working, said once. */
        cmt_cli_error("%s: --no-failed-allocations is deprecated (it fails on every failed allocation): use "
                      "--failed-allocations all",
                      cmd);
        o->failed_allocations = CMT_FAILED_ALL;
        return 0;
    case OPT_FAILED_ALLOCATIONS:
        if (!strcmp(arg, "fatal"))
            o->failed_allocations = CMT_FAILED_FATAL;
        else if (!strcmp(arg, "all"))
            o->failed_allocations = CMT_FAILED_ALL;
        else if (!strcmp(arg, "none"))
            o->failed_allocations = CMT_FAILED_NONE;
        else {
            cmt_cli_error("%s: --failed-allocations takes fatal, all or none; got '%s'", cmd, arg);
            return -1;
        }
        return 0;
    case OPT_SUPPRESSIONS:
        return add_to_list(o->suppression_files, &o->n_suppression_files, arg, cmd, "--suppressions");
    case OPT_NO_DEFAULT_SUPPRESSIONS:
        o->no_default_suppressions = true;
        return 0;
    case OPT_PRINT_SUPPRESSIONS:
        o->print_suppressions = true;
        return 0;
    case OPT_BASELINE:
        return add_to_list(o->baselines, &o->n_baselines, arg, cmd, "--baseline");
    case OPT_MAX_PEAK_GROWTH:
        if (parse_percent(arg, &o->max_peak_growth) != 0) {
            cmt_cli_error("%s: --max-peak-growth needs a percentage such as 10 or 12.5%%; got '%s'", cmd, arg);
            return -1;
        }
        o->has_max_peak_growth = true;
        return 0;
    case OPT_CHECK_INCOMPLETE:
        o->check_incomplete = true;
        return 0;
    case OPT_FORMAT:
        return cmt_cli_parse_format(cmd, CMT_VIEW_CHECK, arg, &o->format);
    case OPT_REPORT_FILE:
        o->report_file = arg;
        return 0;
    case OPT_SOURCE_ROOT:
        o->source_root = arg;
        return 0;
    case OPT_ERROR_EXITCODE:
        if (parse_count(arg, 255, &v) != 0 || v == 0) {
            cmt_cli_error("%s: --error-exitcode needs a status from 1 to 255; got '%s'", cmd, arg);
            return -1;
        }
        o->violation_status = (int)v;
        return 0;
    case OPT_MAX_FRAMES:
        if (parse_count(arg, 1000000, &v) != 0) {
            cmt_cli_error("%s: --max-frames needs a count (0 shows all); got '%s'", cmd, arg);
            return -1;
        }
        o->max_frames = (size_t)v;
        return 0;
    case OPT_KEEP_TRACES:
        o->keep_traces = true;
        return 0;
    case OPT_INCLUDE_CACHED:
        o->include_cached = true;
        return 0;
    case OPT_TENSORS_ALIVE_AT_EXIT:
        o->tensors_alive_at_exit = true;
        return 0;
    case OPT_REQUIRE_TRACE:
        o->require_trace = true;
        return 0;
    default:
        if (cmt_symbol_is_option(value))
            return cmt_symbol_parse(cmd, value, arg, &o->symbols);
        return -1;
    }
}

int cmt_check_validate_options(const struct cmt_check_options *o, const char *cmd, bool run_mode)
{
    if (o->has_max_peak_growth && o->n_baselines == 0) {
        cmt_cli_error("%s: --max-peak-growth compares with a baseline: give --baseline TRACE too", cmd);
        return -1;
    }
    if (!run_mode && (o->keep_traces || o->require_trace)) {
        cmt_cli_error("%s: --%s only applies to `cumemtrace run --check`", cmd,
                      o->keep_traces ? "keep-traces" : "require-trace");
        return -1;
    }
    return 0;
}

void cmt_check_options_help(FILE *out, bool run_mode)
{
    fputs("Limits (each applies to every trace on its own):\n"
          "  --max-leak-bytes SIZE     bytes that may stay allocated at exit (default 0)\n"
          "  --max-leak-count N        allocations that may stay allocated at exit (default 0);\n"
          "                            giving only one of the two lifts the other\n"
          "  --include-cached          count what a caching allocator (PyTorch's device and\n"
          "                            pinned host caches, CuPy, XLA, RMM) still holds at\n"
          "                            exit as leaks (by default it is listed as held by the\n"
          "                            allocator, not checked)\n"
          "  --tensors-alive-at-exit   with PyTorch's block layer, check every tensor alive at\n"
          "                            exit as a leak (by default only those kept step after\n"
          "                            step are: a model, its optimizer state and other module\n"
          "                            globals are alive when Python exits)\n"
          "  --max-peak [DEV=]SIZE     peak of device-resident memory per device; DEV=SIZE for\n"
          "                            one device (repeatable); sizes take KiB, MiB, GiB\n"
          "  --failed-allocations WHICH\n"
          "                            which failed allocation calls fail the check: fatal\n"
          "                            (default: those the program did not survive, after\n"
          "                            which it allocated nothing and exited with another\n"
          "                            status than 0, or died), all, or none; an\n"
          "                            allocator's own probes and retries are never\n"
          "                            failures of their own\n"
          "Suppressions:\n"
          "  --suppressions FILE       leak:PATTERN lines (repeatable; also the files listed\n"
          "                            in CUMEMTRACE_SUPPRESSIONS, separated by ':')\n"
          "  --no-default-suppressions do not apply the built-in list\n"
          "  --print-suppressions      list which suppressions were used, and which were not\n"
          "Baselines:\n"
          "  --baseline TRACE          fail on call sites that leak and did not in TRACE, or\n"
          "                            leak more (repeatable: the largest of each site wins)\n"
          "  --max-peak-growth PCT     fail when a device's peak grew more than PCT percent\n"
          "Traces:\n"
          "  --check-incomplete        check leaks of processes that did not exit normally\n"
          "                            (by default their leaks cannot be judged: status 2)\n"
          "Output:\n"
          "  --format FMT              text (default), json, junit or sarif\n",
          out);
    if (run_mode)
        fputs("  --report-file FILE        write the report to FILE (a one-line result per trace\n"
              "                            still goes to the terminal)\n",
              out);
    else
        fputs("  -o, --output FILE         write the report to FILE (a one-line result per trace\n"
              "                            still goes to the terminal); --report-file FILE is the\n"
              "                            same\n",
              out);
    fputs("  --source-root DIR         print source paths relative to DIR (default: the\n"
          "                            current directory)\n"
          "  --error-exitcode N        exit status for violations (default 1)\n"
          "  --max-frames N            frames shown per call site (default 8, 0 = all)\n"
          "  --fold PATTERN, --unfold PATTERN, --full-stacks, --debuginfo-path DIR,\n"
          "  --sysroot DIR             as for `report`\n"
          "  --no-symbols              do not symbolize: open no module file the trace\n"
          "                            names; call sites are modules and offsets, and\n"
          "                            suppressions match module names only\n"
          "  --max-memory SIZE         refuse a trace whose analysis needs more memory\n"
          "                            (default: half of this machine's; 0: no limit)\n",
          out);
    if (run_mode)
        fputs("run --check only:\n"
              "  --keep-traces             keep the traces of a clean run (by default only the\n"
              "                            traces of a run that failed or erred are kept)\n"
              "  --require-trace           status 2 when no process wrote a trace (the program\n"
              "                            made no CUDA allocation, or the shim was not loaded)\n",
              out);
}
