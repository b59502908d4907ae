/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_H
#define CUMEMTRACE_ANALYZER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "call_tree.h"
#include "frames.h"
#include "growth.h"
#include "memory_holder.h"

/* The report model: what the replay found, grouped by call site and sorted,
 * ready for any renderer (text, JSON, and later exports). */

struct cmt_site_row {
    uint64_t stack; /* canonical stack id (0: no stack recorded) */
    uint64_t bytes;
    uint64_t count;
    uint8_t kind;
    uint8_t api;
    uint64_t first_ts; /* earliest allocation of the row */
    /* Leak rows: what the call site did over the whole run. */
    uint64_t site_allocs, site_frees;
    bool growing; /* the call site is also a growth candidate */
    uint8_t holder; /* held rows: enum cmt_holder of the cache */
};

/* The most one holder (memory_holder.h) had live on one device. */
struct cmt_holder_peak {
    uint64_t bytes, count, ts; /* ts absolute; 0 bytes: nothing ever */
};

/* What one account held at one instant (its peak, or --at TIME). */
struct cmt_snapshot {
    uint64_t ts;    /* absolute */
    uint64_t bytes;
    uint64_t count;
    uint64_t by_kind[CMT_KIND_COUNT];
    struct cmt_site_row *rows; /* by call site, largest first */
    size_t n_rows;
    size_t n_top; /* rows shown: min(n_rows, --top) */
    struct cmt_call_tree tree;
};

struct cmt_account_view {
    const struct cmt_account *account;
    struct cmt_site_row *top; /* sites live at the peak, largest first (= peak.rows) */
    size_t n_top;
    size_t n_sites_at_peak;
    struct cmt_snapshot peak;
    bool has_at;
    struct cmt_snapshot at; /* with --at: what was live then */
    /* Its live bytes over time: the device-resident total, the managed
     * memory of the device, or pinned host memory. */
    const struct cmt_timeline_series *series;
    /* Device accounts: the peak split by who held it, and each holder's own
     * peak (has_own_peaks: computed, see cmt_report_options.holder_peaks). */
    uint64_t peak_by_holder[CMT_HOLDER_COUNT];
    bool has_own_peaks;
    struct cmt_holder_peak own_peak[CMT_HOLDER_COUNT];
};

/* A call site whose live bytes keep rising (growth.h). */
struct cmt_growth_row {
    uint64_t stack; /* canonical */
    uint8_t kind, api;
    struct cmt_growth_verdict verdict;
    uint64_t live_bytes, live_count; /* at the end of the replay */
    uint64_t allocs, frees, failures;
    uint64_t first_ts;
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
    double tree_min_percent; /* call tree nodes below this share of the snapshot are summarized */
    bool at_set;             /* --at TIME: the replay stopped at at_ns after the start */
    uint64_t at_ns;
    size_t chart_width, chart_height; /* the text timeline; 0: no chart */
    /* Optional: called once for each allocation live at exit; returning true
     * sets it aside as suppressed (`check` suppressions) instead of a leak. */
    bool (*suppress_leak)(void *ctx, struct cmt_frames *frames, const struct cmt_live *allocation);
    void *suppress_ctx;
    /* Device memory the verdicts of failed allocations leave to the CUDA
     * context (docs/fragmentation.md); the default unless set. */
    bool context_allowance_set;
    uint64_t context_allowance;
    /* --include-cached: what caching allocators hold at exit is listed and
     * counted as leaks; by default it is set aside as held by them. */
    bool include_cached;
    /* Each holder's own peak per device: a second reading of the trace,
     * done only when some allocation is a caching allocator's (report). */
    bool holder_peaks;
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
    uint64_t leak_once_bytes, leak_once_count;         /* sites that allocated once in the run */
    uint64_t leak_repeated_bytes, leak_repeated_count; /* sites that allocated more than once */
    struct cmt_growth_row *growth; /* candidates, fastest first */
    size_t n_growth;
    struct cmt_site_row *suppressed; /* live at exit but suppressed, by call site */
    size_t n_suppressed;
    uint64_t suppressed_bytes, suppressed_count;
    /* Live at exit in a caching allocator's cache (not leaks unless
     * include_cached), by call site, largest first; totals per holder. */
    struct cmt_site_row *held;
    size_t n_held;
    uint64_t held_bytes[CMT_HOLDER_COUNT], held_count[CMT_HOLDER_COUNT];
    uint8_t *holder_by_stack; /* by stack id: holder + 1 (0: not yet known) */
    uint8_t *cache_by_stack;  /* by stack id: cache holder + 1 */
    size_t n_stack_slots;
    struct cmt_failure_group *failures;
    size_t n_failures;
    char **warnings;
    size_t n_warnings;
    struct cmt_forensics_report *forensics; /* NULL when the analysis ran without forensics */
    struct cmt_blocks_report *blocks;       /* PyTorch's block layer (blocks_report.h); NULL without one */
};

struct cmt_blocks_report;

int cmt_report_build(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_report_options *opt);
void cmt_report_free(struct cmt_report *r);

/* Holders of a recorded stack's allocations (memory_holder.h), cached. */
enum cmt_holder cmt_report_holder(struct cmt_report *r, uint64_t stack);
enum cmt_holder cmt_report_cache(struct cmt_report *r, uint64_t stack);
/* What to do to see the tensors or arrays inside a holder's cache (one
 * sentence, no trailing period); "" for holders that are no cache. */
const char *cmt_holder_cache_advice(enum cmt_holder h);

/* Shared by the renderers. */
const char *cmt_class_name(unsigned cls);
void cmt_report_add_warning(struct cmt_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ns since the trace started, from a monotonic timestamp. */
uint64_t cmt_report_rel_ns(const struct cmt_report *r, uint64_t ts);
/* "account" label of a view: "Device 0", "Managed memory, device 0", "Pinned host memory". */
void cmt_account_label(const struct cmt_account *acc, char *buf, size_t len);

#endif
