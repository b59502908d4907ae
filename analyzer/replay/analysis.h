/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ANALYSIS_H
#define CUMEMTRACE_ANALYZER_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forensics.h"
#include "phases.h"
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
    int open_error;           /* why the file could not be opened (trace_reader.h), 0 when it was */
    char message[600];        /* why the trace could not be opened, or where it is damaged */
    uint64_t stop_at_ns;      /* >0: stop the replay at this time since the trace start */
    bool stopped_early;
    struct cmt_forensics *forensics; /* NULL when not asked for */
    struct cmt_phases *phases;       /* NULL when not asked for */
    const void *data;                /* the bytes of cmt_analysis_run_memory, NULL for a file: */
    size_t data_size;
};

struct cmt_analysis_options {
    /* Follow the replay with the out-of-memory and fragmentation forensics
     * (forensics.h): report and frag do, check and timeline need not. */
    bool forensics;
    struct cmt_forensics_options forensics_opt;
    /* Follow the phases and steps the program named (phases.h). */
    bool phases;
};

/* Opens and reads path. With a trace of 8 MiB or more and an idle CPU (at
 * least two usable, load average below their number - 0.5), the trace is
 * decoded in a second thread while this one replays
 * (CUMEMTRACE_ANALYZER_THREADS=1 keeps one thread, =2 forces two). Returns
 * 0 when analysed (possibly up to damage or
 * truncation: see damaged and the reader's warnings), -1 when the file
 * cannot be analysed at all (message says why). */
int cmt_analysis_run(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns);
/* Same over bytes in memory (tests, fuzzing); name stands for the path in
 * reports. The bytes must outlive the analysis. */
int cmt_analysis_run_memory(struct cmt_analysis *a, const void *data, size_t size, const char *name,
                            uint64_t stop_at_ns);
/* The same over bytes with options (the fuzz target follows phases too). */
int cmt_analysis_run_memory_with(struct cmt_analysis *a, const void *data, size_t size, const char *name,
                                 uint64_t stop_at_ns, const struct cmt_analysis_options *opt);
/* The same with options (NULL: the defaults, no forensics). */
int cmt_analysis_run_with(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns,
                          const struct cmt_analysis_options *opt);
void cmt_analysis_free(struct cmt_analysis *a);

/* What the file says of itself once read: "damaged" (the read stopped at
 * damage, a->message says where), "truncated" (the file ends before its
 * last chunk), "incomplete" (read whole, but the process did not exit
 * normally: killed, crashed, _exit), or "complete". */
const char *cmt_analysis_state(const struct cmt_analysis *a);
/* True for "complete". */
bool cmt_analysis_complete(const struct cmt_analysis *a);

/* The rank the trace's process recorded (-1 when none), read from the
 * metadata at the start of the trace only. Returns 0, or -1 when the file
 * cannot be opened as a trace. */
int cmt_analysis_peek_rank(const char *path, int64_t *rank);

#endif
