/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_DIFF_H
#define CUMEMTRACE_ANALYZER_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "report.h"

/* Two runs of one program compared call site by call site (cumemtrace diff
 * OLD NEW, docs/report.md "Comparing two runs"). Each run's report is
 * reduced to what the comparison needs and freed, so both need not be in
 * memory at once.
 *
 * A call site of one run is the same as one of the other when its frames
 * read the same (function, file and line of every frame shown, innermost
 * first): stack ids and addresses differ from run to run. Figures per site:
 *   peak:  its bytes live at the device peak, every device together (the
 *          "call sites live at the peak" of each device's section);
 *   leak:  its bytes live at exit (the report's leaks);
 *   calls: its successful allocation calls over the run;
 *   suppressed: its bytes live at exit that a leak suppression set aside
 *          (the report's suppressed leaks, not in leak);
 *   tensor_peak, tensor_kept: with PyTorch's block layer, its tensors' bytes
 *          live at the tensors' peak and kept step after step at exit (the
 *          report's "PyTorch's tensors"); PyTorch's segments are then left
 *          out of peak, counted once, as tensors. */

#define CMT_DIFF_FRAMES_SHOWN 8

/* A run's tensors (PyTorch's block layer), every device together. */
struct cmt_diff_tensors {
    bool on;
    uint64_t peak;                 /* the tensors' bytes at their peak */
    uint64_t cats[CMT_CAT_COUNT];  /* by category then (the cache's reserve last) */
    uint64_t kept_bytes, kept_count, alive_bytes, alive_count;
    uint64_t steps, rate_per_step; /* rate: the tensors' growth per step, 0 when not growing */
};

struct cmt_diff_run {
    char trace[512];
    char program[1024];  /* the command line, or the executable */
    char exe[512];
    char when[64];       /* "2026-01-01 00:00:00 UTC" */
    uint64_t duration_ns;
    struct cmt_process_summary summary; /* peaks per device, leaks, events */
    uint64_t calls;      /* successful allocation calls */
    uint64_t suppressed_bytes, suppressed_count; /* the report's suppressed leaks (memory) */
    struct cmt_diff_tensors tensors;
};

struct cmt_diff_side {
    uint64_t peak, leak, leak_count, calls;
    uint64_t suppressed, suppressed_count; /* leaked but suppressed */
    uint64_t tensor_peak, tensor_kept;
};


struct cmt_diff_site {
    char *key;      /* frames shown, one per line (as the older run names them) */
    char *identity; /* what matches it in the other run (cmt_frames_site_identity) */
    size_t n_lines; /* lines in key */
    char api[48]; /* the longest API name, cudaMemPoolImportFromShareableHandle, is 36 */
    struct cmt_diff_side side[2]; /* [0] OLD, [1] NEW */
    uint32_t suppression; /* index + 1 into the diff's suppressions of what suppressed it; 0 none */
};

struct cmt_diff {
    struct cmt_diff_run run[2];
    struct cmt_diff_site *sites;
    size_t n_sites, cap;
    /* Both runs: the executable's path differs (the sites may not match). */
    bool different_program;
    /* The leak suppressions both reports applied (the caller's; they
     * outlive the diff), as the report names them. */
    const struct cmt_report_suppression *suppressions;
    size_t n_suppressions;
    /* Call sites the text lists (--top; 0 = all); JSON has every one. */
    size_t top;
    /* Category names for the renderers (tensor_pass.h). */
    const char *category_name[CMT_CAT_COUNT], *category_key[CMT_CAT_COUNT];
};

void cmt_diff_init(struct cmt_diff *d);
/* Adds the report of run which (0 OLD, 1 NEW). Returns 0, -1 out of memory. */
int cmt_diff_add(struct cmt_diff *d, int which, const struct cmt_report *r, const struct cmt_analysis *a, const char *trace);
/* After both runs: sorts the sites, the largest change first. */
void cmt_diff_finish(struct cmt_diff *d);
void cmt_diff_free(struct cmt_diff *d);

/* Signed change NEW - OLD of a figure, saturated to int64. */
int64_t cmt_diff_delta(uint64_t old_v, uint64_t new_v);
/* True when a site changed in any figure but its suppressed leaks. */
bool cmt_diff_site_changed(const struct cmt_diff_site *s);
/* True when a site's suppressed leaks changed. */
bool cmt_diff_site_suppressed_changed(const struct cmt_diff_site *s);

#endif
