/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_COMPARE_H
#define CUMEMTRACE_ANALYZER_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* Several traces at once (one per process of a multi-process or multi-rank
 * job): what each process's report says in a few figures, kept after its
 * report is freed, so memory does not grow with the number of events of
 * all the traces together. */

#define CMT_COMPARE_MAX_DEVICES 16

struct cmt_process_summary {
    char trace[512];
    bool analysed;     /* false: the trace could not be read at all */
    char error[600];   /* why, when not analysed */
    bool complete;     /* read to its end and the process exited normally */
    int64_t rank;      /* -1 unknown */
    uint64_t pid;
    char hostname[128];
    char program[64];  /* the executable's file name, "" when the trace names none */
    size_t n_devices;
    struct {
        int32_t ordinal;
        uint64_t peak, peak_ns; /* peak_ns: since the trace started */
        uint64_t live;          /* at exit (or at --at) */
    } devices[CMT_COMPARE_MAX_DEVICES];
    uint64_t peak;     /* highest device peak of the process */
    uint64_t leak_bytes, leak_count;
    size_t growth_candidates;
    uint64_t failed;
    uint64_t events;
};

struct cmt_imbalance {
    size_t n;                    /* processes with a device peak */
    uint64_t max, min, mean;     /* of the processes' highest device peaks */
    size_t max_index, min_index; /* into the summaries */
    double max_over_mean;        /* 1.0: balanced */
    uint64_t leak_max;
    size_t leak_max_index;
};

void cmt_summary_from_report(const struct cmt_report *r, const struct cmt_analysis *a, const char *trace, struct cmt_process_summary *s);
void cmt_summary_failed(const char *trace, const char *error, struct cmt_process_summary *s);
void cmt_compare_imbalance(const struct cmt_process_summary *s, size_t n, struct cmt_imbalance *out);
/* "rank 3" or "pid 4242". */
void cmt_summary_label(const struct cmt_process_summary *s, char *buf, size_t len);

#endif
