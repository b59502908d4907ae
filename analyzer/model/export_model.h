/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_EXPORT_MODEL_H
#define CUMEMTRACE_ANALYZER_EXPORT_MODEL_H

#include <stdint.h>

#include "report.h"
#include "report_set.h"

/* The models of `cumemtrace export` (docs/export.md). */

/* --format perfetto: the traces, pulled one at a time, placed on one time
 * axis by their wall-clock starts. */
struct cmt_perfetto_model {
    struct cmt_report_set set;
    uint64_t origin_realtime_ns; /* the earliest start among the traces */
};

/* --format folded: one trace's stacks weighted by a metric. */
enum cmt_folded_metric {
    CMT_FOLDED_PEAK,      /* live at each account's peak: sums to the peaks */
    CMT_FOLDED_LEAKS,     /* live at exit, memory only: sums to leaks.bytes */
    CMT_FOLDED_ALLOCATED, /* every byte allocated over the run (not VMM address space) */
};

struct cmt_folded_model {
    const struct cmt_report *report;
    enum cmt_folded_metric metric;
};

#endif
