/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_H
#define CUMEMTRACE_ANALYZER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "frames.h"

/* The report model: what the replay found, grouped by call site and sorted,
 * ready for any renderer (text, JSON, and later exports). */

struct cmt_site_row {
    uint64_t stack; /* canonical stack id (0: no stack recorded) */
    uint64_t bytes;
    uint64_t count;
    uint8_t kind;
    uint8_t api;
    uint64_t first_ts; /* earliest allocation of the row */
};

struct cmt_account_view {
    const struct cmt_account *account;
    struct cmt_site_row *top; /* sites live at the peak, largest first */
    size_t n_top;
    size_t n_sites_at_peak;
};

struct cmt_failure_group {
    uint64_t stack;
    uint8_t api;
    int32_t result;
    int32_t device;
    uint64_t count;
    uint64_t min_size, max_size;
    uint64_t first_ts;
    uint64_t live_device_bytes; /* at the first failure */
    size_t first_index;         /* of the first failure, in the replay's failures */
};

struct cmt_report_options {
    size_t top;        /* call sites per list (default 10) */
    size_t max_frames; /* frames per site in text (0 = all) */
    struct cmt_frames_options frames;
    /* Optional: called once for each allocation live at exit; returning true
     * sets it aside as suppressed (`check` suppressions) instead of a leak. */
    bool (*suppress_leak)(void *ctx, struct cmt_frames *frames, const struct cmt_live *allocation);
    void *suppress_ctx;
    /* Device memory the verdicts of failed allocations leave to the CUDA
     * context (docs/fragmentation.md); the default unless set. */
    bool context_allowance_set;
    uint64_t context_allowance;
};

struct cmt_forensics_report;

struct cmt_report {
    const struct cmt_analysis *analysis;
    struct cmt_frames *frames;
    const struct cmt_report_options *opt;
    struct cmt_account_view *accounts; /* by device, then class */
    size_t n_accounts;
    struct cmt_site_row *leaks;
    size_t n_leaks;
    uint64_t leak_bytes, leak_count;
    uint64_t leak_bytes_by_kind[CMT_KIND_COUNT];
    struct cmt_site_row *suppressed; /* live at exit but suppressed, by call site */
    size_t n_suppressed;
    uint64_t suppressed_bytes, suppressed_count;
    struct cmt_failure_group *failures;
    size_t n_failures;
    char **warnings;
    size_t n_warnings;
    struct cmt_forensics_report *forensics; /* NULL when the analysis ran without forensics */
};

int cmt_report_build(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_report_options *opt);
void cmt_report_free(struct cmt_report *r);

void cmt_report_render_text(const struct cmt_report *r, FILE *out);
void cmt_report_render_json(const struct cmt_report *r, FILE *out);

/* Shared by the renderers. */
const char *cmt_class_name(unsigned cls);
void cmt_report_add_warning(struct cmt_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ns since the trace started, from a monotonic timestamp. */
uint64_t cmt_report_rel_ns(const struct cmt_report *r, uint64_t ts);

#endif
