/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CHECK_H
#define CUMEMTRACE_ANALYZER_CHECK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "report.h"
#include "suppressions.h"

/* `cumemtrace check`: judges traces against limits, suppressions and
 * baselines, on top of the report model (one replay per trace, the same
 * call sites and peaks `report` shows). docs/check.md is the user's view. */

#define CMT_CHECK_MAX_LIST 64

struct cmt_peak_limit {
    int32_t device; /* -1: every device that has no limit of its own */
    uint64_t bytes;
};

struct cmt_check_options {
    bool has_max_leak_bytes, has_max_leak_count;
    uint64_t max_leak_bytes, max_leak_count;
    struct cmt_peak_limit peak_limits[CMT_CHECK_MAX_LIST];
    size_t n_peak_limits;
    /* --failed-allocations: which failed allocations fail the check
     * (docs/check.md, "What is checked") */
    enum cmt_failed_allocations {
        CMT_FAILED_FATAL = 0, /* those the program did not survive (the default) */
        CMT_FAILED_ALL,       /* every one (the deprecated --no-failed-allocations) */
        CMT_FAILED_NONE       /* none: a note */
    } failed_allocations;
    const char *suppression_files[CMT_CHECK_MAX_LIST];
    size_t n_suppression_files;
    bool no_default_suppressions;
    bool print_suppressions;
    const char *baselines[CMT_CHECK_MAX_LIST];
    size_t n_baselines;
    bool has_max_peak_growth;
    double max_peak_growth; /* percent */
    bool check_incomplete;
    const char *format; /* --format: a renderer of the check view (render/renderers.h) */
    const char *report_file;
    const char *source_root;
    int violation_status; /* --error-exitcode; 1 by default */
    size_t max_frames;
    struct cmt_frames_args symbols; /* --fold, --unfold, --full-stacks, --debuginfo-path, --sysroot */
    bool include_cached; /* --include-cached: memory caching allocators hold at exit is checked as leaks */
    /* --tensors-alive-at-exit: every tensor of PyTorch's block layer alive at
     * exit is a leak, not only those kept step after step (tensors_report.h) */
    bool tensors_alive_at_exit;
    /* `run --check` only */
    bool keep_traces;
    bool require_trace;
};

void cmt_check_options_init(struct cmt_check_options *o);

enum cmt_rule {
    CMT_RULE_LEAK,
    CMT_RULE_NEW_LEAK,
    CMT_RULE_LEAK_GROWTH,
    CMT_RULE_PEAK,
    CMT_RULE_PEAK_GROWTH,
    CMT_RULE_FAILED_ALLOCATION,
    CMT_RULE_MAPPING_LEAK, /* a mapping of another process's memory never closed */
    CMT_RULE_COUNT
};

/* "leak", "new-leak", ...: stable ids (text, JSON, SARIF ruleId). */
const char *cmt_rule_id(enum cmt_rule rule);
/* One sentence saying what the rule checks. */
const char *cmt_rule_description(enum cmt_rule rule);

enum cmt_level {
    CMT_LEVEL_ERROR,  /* a violation: fails the check */
    CMT_LEVEL_WARNING /* a leak the limits or the baseline tolerate */
};

struct cmt_finding {
    enum cmt_rule rule;
    enum cmt_level level;
    char message[512]; /* without the location: "leaked 64.0 MiB in 1 allocation (cudaMalloc) ..." */
    bool site;         /* about one call site (stack names it) rather than the whole trace */
    uint64_t stack;    /* canonical stack id in the trace's report (0: none) */
    uint64_t bytes, count;
    int32_t device; /* peaks and failures; -1 otherwise */
    uint8_t api, kind;
    bool has_limit;
    uint64_t limit;
    bool has_baseline;
    uint64_t baseline_bytes, baseline_count;
    const struct cmt_account_view *peak_view; /* peaks: what was live then */
    uint64_t fingerprint; /* rule + site, stable across runs */
};

enum cmt_trace_status {
    CMT_TRACE_PASS,
    CMT_TRACE_FAIL, /* at least one violation */
    CMT_TRACE_ERROR /* unreadable, damaged, or leaks could not be judged */
};

struct cmt_check_trace {
    char *path;
    bool opened; /* analysis and report are valid */
    struct cmt_analysis analysis;
    struct cmt_report report;
    enum cmt_trace_status status;
    char error[800]; /* why the trace is in error (empty when it is not) */
    bool complete;   /* exited normally, read to the end, nothing dropped */
    bool leaks_checked;
    /* PyTorch's block layer: tensors checked as leaks (kept step after
     * step, or with --tensors-alive-at-exit every one alive at exit) that
     * no suppression matched, those a suppression did, and every tensor
     * alive at exit (the check's figures; the report's tensors and blocks
     * models have them all). */
    uint64_t tensor_leak_bytes, tensor_leak_count;
    uint64_t tensor_suppressed_bytes, tensor_suppressed_count;
    uint64_t tensor_alive_bytes, tensor_alive_count;
    /* Mappings of another process's memory never closed that a suppression
     * matched (the report's ipc model has them all). */
    uint64_t mapping_suppressed_bytes, mapping_suppressed_count;
    struct cmt_finding *findings; /* errors first, then warnings, each largest first */
    size_t n_findings, n_errors, cap_findings;
    char **notes; /* what else the check has to say about this trace */
    size_t n_notes;
    char name[256]; /* the program and its arguments, unique among the traces (JUnit) */
};

struct cmt_baseline;

/* The program `run --check` ran, for the renderers. */
struct cmt_check_program {
    char *const *argv;
    int argc;
    bool exited;     /* exit status known */
    int exit_status; /* when exited */
    int signal;      /* when killed */
    int final_status; /* what `run` exits with */
    bool status_passed_through;
};

struct cmt_check {
    const struct cmt_check_options *opt;
    struct cmt_report_options report_opt;
    struct cmt_suppressions suppressions;
    struct cmt_baseline *baseline;
    struct cmt_check_trace **traces; /* each allocated apart: reports point into them */
    size_t n_traces, cap_traces;
    size_t n_pass, n_fail, n_error;
    size_t n_damaged; /* of them, damaged or truncated traces: the check exits 2 */
    size_t n_unwritten; /* of them, traces the profiler could not create: the check exits 2 */
    char source_root[PATH_MAX];
    const struct cmt_check_program *program; /* NULL for `check` */
};

/* Loads the suppressions and the baselines. Returns 0, or -1 with the
 * reason in err (the check cannot be run: exit status 2). */
int cmt_check_init(struct cmt_check *c, const struct cmt_check_options *opt, char *err, size_t errlen);
/* Builds the report model of an analysed trace with the suppressions
 * applied; count credits the suppressions that match. */
int cmt_check_build_report(struct cmt_check *c, struct cmt_analysis *a, struct cmt_report *r, bool count);
/* Credits the suppressions with what they set aside in r: the allocations
 * live at exit, and (tensors) the block layer's tensors never released. */
void cmt_check_credit(struct cmt_check *c, const struct cmt_report *r, bool tensors);
/* Analyses and judges one trace. Returns 0, or -1 when out of memory. */
int cmt_check_add_trace(struct cmt_check *c, const char *path);
/* A trace the profiler could not create for process pid (`run --check`
 * learns it from the manifest, launch/manifest.h): a trace in error that
 * makes the check's status 2 whatever the others say. Returns 0, or -1 when
 * out of memory. */
int cmt_check_add_unwritten(struct cmt_check *c, const char *path, long pid, const char *reason);
/* The shim's reason a trace already added stopped recording (a write
 * error), as a note of that trace. Returns 0, or -1 when out of memory. */
int cmt_check_note_stop(struct cmt_check *c, const char *path, const char *reason);
/* 0 every trace passed; opt->violation_status when any failed; else 2 when
 * any is in error; 2 whatever the others say when one is damaged, truncated
 * or was never written. */
int cmt_check_status(const struct cmt_check *c);
void cmt_check_free(struct cmt_check *c);

/* ---- sites and locations (check_site.c) -------------------------------- */

/* The frame that names a site's location: the first with file and line,
 * else NULL. */
const struct cmt_frame *cmt_check_location_frame(const struct cmt_stack_frames *sf);
/* A source or module path for output: "." and ".." resolved by name, then
 * made relative to the source root when it lies below it (returns true), else
 * left absolute (returns false). */
bool cmt_check_path(const struct cmt_check *c, const char *path, char *buf, size_t len);
/* "function at path:line" with the path as cmt_check_path gives it, else as
 * cmt_frame_describe. */
void cmt_check_describe_frame(const struct cmt_check *c, const struct cmt_frame *fr, char *buf, size_t len);
/* "file:line", else the module's base name, else the trace path. */
void cmt_check_location(const struct cmt_check *c, const struct cmt_check_trace *t, uint64_t stack, char *buf,
                        size_t len);
/* What identifies a call site across runs: per frame the function, the
 * source file's base name, the line (unless with_lines is false) and the
 * module's base name (or the module offset when there is no function), and
 * the kind of memory. Never addresses or stack ids. Returns a malloc'd
 * string, NULL when out of memory. */
char *cmt_check_site_key(const struct cmt_stack_frames *sf, unsigned kind, bool with_lines);
uint64_t cmt_check_hash(const char *text, uint64_t seed);

/* ---- baselines (check_baseline.c) -------------------------------------- */

/* Reads the baseline traces with the same suppressions and folding. Returns
 * NULL with the reason in err. */
struct cmt_baseline *cmt_baseline_load(struct cmt_check *c, char *err, size_t errlen);
void cmt_baseline_free(struct cmt_baseline *b);
/* Adds new-leak / leak-growth errors and "known leak" warnings for the
 * trace's leak rows. Returns 0, or -1 when out of memory. */
int cmt_baseline_compare_leaks(struct cmt_check *c, struct cmt_check_trace *t);
/* The baseline traces read (each --baseline), and the executable trace i
 * ran, "" when it names none. */
size_t cmt_baseline_count(const struct cmt_baseline *b);
const char *cmt_baseline_exe(const struct cmt_baseline *b, size_t i);
/* The baseline's peak of device-resident memory on a device; false when the
 * baseline never used that device. */
bool cmt_baseline_device_peak(const struct cmt_baseline *b, int32_t device, uint64_t *peak);

/* ---- findings (check.c) ------------------------------------------------ */
struct cmt_finding *cmt_check_add_finding(struct cmt_check_trace *t, enum cmt_rule rule, enum cmt_level level);
/* "leaked 64.0 MiB in 1 allocation (cudaMalloc)" */
void cmt_check_describe_leak(char *buf, size_t len, uint64_t bytes, uint64_t count, unsigned api);

#endif
