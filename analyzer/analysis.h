/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ANALYSIS_H
#define CUMEMTRACE_ANALYZER_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "forensics.h"
#include "replay.h"
#include "trace_model.h"
#include "trace_reader.h"

/* One trace read once: metadata into the model, events into the replay. */
struct cmt_analysis {
    const char *path;
    struct cmt_reader *reader;
    struct cmt_trace_info info;
    struct cmt_trace_model model;
    struct cmt_replay replay;
    bool damaged;             /* the read stopped at damage */
    char message[600];        /* why the trace could not be opened, or where it is damaged */
    uint64_t stop_at_ns;      /* >0: stop the replay at this time since the trace start */
    bool stopped_early;
    struct cmt_forensics *forensics; /* NULL when not asked for */
};

struct cmt_analysis_options {
    bool no_forensics; /* skip the out-of-memory and fragmentation forensics */
    struct cmt_forensics_options forensics;
};

/* Opens and reads path. Returns 0 when analysed (possibly up to damage or
 * truncation: see damaged and the reader's warnings), -1 when the file
 * cannot be analysed at all (message says why). */
int cmt_analysis_run(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns);
/* The same with options (NULL: the defaults cmt_analysis_run uses). */
int cmt_analysis_run_with(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns,
                          const struct cmt_analysis_options *opt);
void cmt_analysis_free(struct cmt_analysis *a);

#endif
