/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FORENSICS_REPORT_H
#define CUMEMTRACE_ANALYZER_FORENSICS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "allocator_family.h"
#include "analysis.h"
#include "forensics.h"
#include "oom_replay.h"

struct cmt_report;

/* The forensics as the renderers need them: verdicts decided, raw stacks
 * turned into call sites (canonical stacks) and merged, lists ranked. Built
 * by cmt_report_build when the analysis ran the forensics. */

/* A device's context allowance when --context-allowance is not given:
 * device memory in use that no allocation explains, measured on an H200
 * with PyTorch, cuBLAS and cuDNN loaded, was 620 to 850 MiB. */
#define CMT_DEFAULT_CONTEXT_ALLOWANCE (1024ull << 20)
/* Call sites with fewer distinct sizes are not listed as churn: the advice
 * is to round sizes to a few classes, and a site of up to 7 sizes (four
 * threads each allocating one fixed size) already has a few (issue 33). */
#define CMT_CHURN_MIN_SIZES 8

struct cmt_live_site {
    uint64_t stack; /* canonical */
    uint64_t bytes, count;
};

struct cmt_oom_view {
    const struct cmt_oom_case *c;
    struct cmt_oom_figures fig;
    struct cmt_verdict_result verdict;
    const char *verdict_name; /* cmt_verdict_name of verdict.verdict */
    const char *rule_id;      /* cmt_verdict_rule_id of verdict.rule: "R5" */
    uint64_t stack; /* canonical */
    enum cmt_allocator_family allocator;
    const char *allocator_name, *allocator_remedy; /* cmt_allocator_family_name, _remedy of allocator */
    /* PyTorch's own OOM of this failure (its block layer: the first
     * TORCH_OOM record on the device and thread at or after the failure and
     * before the thread's next allocation, a failed retry's window followed);
     * NULL: none recorded. */
    const struct cmt_blocks_oom *block_oom;
    /* block_oom says capacity and that expandable segments would not have
     * served it: no allocator setting frees enough, none is suggested. */
    bool cache_cannot_serve;
    /* With block_oom: the report's replay of the usual settings on this
     * device (oom_replay.h), filled once the replay is built
     * (cmt_forensics_report_replay); replay.on false without one. */
    struct cmt_oom_replay replay;
    /* One verdict per failure: a caching allocator's probe (failed by
     * design, asked again at once and served) is no failure and is shown
     * apart; its retry of a failure (report.h, CMT_FAILURE_RETRY) is that
     * failure's: retry_of the case it repeats (SIZE_MAX: none), whose
     * retries count them and last_retry_ts says when the last one was. */
    bool probe;
    size_t retry_of;
    uint64_t retries, last_retry_ts;
    struct cmt_live_site top[CMT_OOM_TOP_SITES];
    size_t n_top;
};

enum cmt_churn_pattern {
    CMT_CHURN_SHORT_LIVED, /* at least half released during the run, after a tenth of its duration or less on average */
    CMT_CHURN_LONG_LIVED
};

struct cmt_churn_view {
    struct cmt_churn_row row; /* row.key: canonical stack */
    enum cmt_churn_pattern pattern;
    enum cmt_allocator_family allocator;
    const char *allocator_name, *allocator_remedy; /* cmt_allocator_family_name, _remedy of allocator */
};

struct cmt_waste_view {
    uint64_t stack;
    uint64_t pitch_bytes, pitch_count, round_bytes;
};

struct cmt_opener_view {
    uint64_t stack;
    uint64_t count, bytes, largest;
};

struct cmt_pin_view {
    uint64_t stack;
    uint64_t pinned_bytes, holes, allocations, oldest_ts; /* cmt_pin_site's */
};

struct cmt_forensics_report {
    /* The forensics' own figures, copied at build time (forensics.h). */
    uint64_t failures_seen;  /* failed allocations, examined or not */
    bool track_holes;        /* releases were tracked for the holes they open */
    uint64_t samples;        /* device memory samples, every device */
    bool used_vmm;           /* the program called cuMemCreate */
    /* Per device (NULL: none seen) and the pools, as the forensics keep them:
     * their figures are final once the replay is done. */
    const struct cmt_device_forensics *devices[CMT_MAX_DEVICES];
    const struct cmt_pool_info *pools;
    size_t n_pools;
    uint64_t allowance;
    struct cmt_oom_view *oom; /* every case examined, in order (probes and retries too: see each view) */
    size_t n_oom;
    size_t n_failures, n_probes; /* cases that are a failure of their own (neither probe nor retry); probes */
    struct cmt_churn_view *churn;
    size_t n_churn;
    struct cmt_waste_view *waste;
    size_t n_waste;
    uint64_t pitch_waste_total, round_waste_total;
    struct cmt_opener_view *openers;
    size_t n_openers;
    struct cmt_pin_view pins[CMT_MAX_DEVICES][CMT_TOP_PINS];
    size_t n_pins[CMT_MAX_DEVICES];
};

/* Returns NULL when out of memory (or a has no forensics). */
struct cmt_forensics_report *cmt_forensics_report_build(struct cmt_report *r, const struct cmt_analysis *a,
                                                        uint64_t allowance);
void cmt_forensics_report_free(struct cmt_forensics_report *fr);

/* Each PyTorch failure's facts from the report's replay (r->whatif): after
 * the replay is built. */
void cmt_forensics_report_replay(struct cmt_forensics_report *fr, const struct cmt_report *r);

/* The verdict of the failure at this index of the replay's failures, or
 * NULL when it was not examined. */
const struct cmt_oom_view *cmt_forensics_report_failure(const struct cmt_forensics_report *fr, size_t failure_index);

#endif
