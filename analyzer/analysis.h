/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ANALYSIS_H
#define CUMEMTRACE_ANALYZER_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

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
};

/* Opens and reads path. With a trace of 8 MiB or more and an idle CPU (at
 * least two usable, load average below their number - 0.5), the trace is
 * decoded in a second thread while this one replays
 * (CUMEMTRACE_ANALYZER_THREADS=1 keeps one thread, =2 forces two). Returns
 * 0 when analysed (possibly up to damage or
 * truncation: see damaged and the reader's warnings), -1 when the file
 * cannot be analysed at all (message says why). */
int cmt_analysis_run(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns);
void cmt_analysis_free(struct cmt_analysis *a);

/* The rank the trace's process recorded (-1 when none), read from the
 * metadata at the start of the trace only. Returns 0, or -1 when the file
 * cannot be opened as a trace. */
int cmt_analysis_peek_rank(const char *path, int64_t *rank);

#endif
