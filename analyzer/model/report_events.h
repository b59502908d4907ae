/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_EVENTS_H
#define CUMEMTRACE_ANALYZER_REPORT_EVENTS_H

#include <stddef.h>
#include <stdint.h>

/* What happened when, one by one, as the report model carries it for the
 * views that draw events on a time axis (the Perfetto export): named
 * threads, the driver's device samples, failed allocations, steps. Copied
 * from the analysis by cmt_report_events_build. */
struct cmt_report_thread {
    uint32_t tid;
    const char *name; /* "" when the trace named none */
};

struct cmt_report_sample {
    uint64_t ts;          /* absolute */
    uint64_t used;        /* total minus free, as the driver said */
    uint64_t unexplained; /* used that neither live allocations nor pools explain */
    uint64_t pool_reserved, pool_used;
};

struct cmt_report_device_samples {
    int device;
    struct cmt_report_sample *samples;
    size_t n;
};

struct cmt_report_failure {
    uint8_t api;
    int32_t result, device;
    uint32_t tid, stack;
    uint64_t size, ts, live_device_bytes;
};

struct cmt_report_step {
    const char *name; /* "" or NULL: unnamed (a cumemtrace_step step) */
    uint64_t number;
    uint64_t start_ts, end_ts;
    uint64_t peak, live_at_end, alloc_bytes;
};

struct cmt_report_events {
    struct cmt_report_thread *threads;
    size_t n_threads;
    struct cmt_report_device_samples *devices; /* the forensics' devices seen, in order */
    size_t n_devices;
    struct cmt_report_failure *failures; /* those the replay kept, in order */
    size_t n_failures;
    struct cmt_report_step *steps;
    size_t n_steps;
};

struct cmt_analysis;
/* Returns 0, or -1 when out of memory. */
int cmt_report_events_build(struct cmt_report_events *e, const struct cmt_analysis *a);
void cmt_report_events_free(struct cmt_report_events *e);

#endif
