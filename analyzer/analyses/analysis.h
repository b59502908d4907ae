/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ANALYSIS_H
#define CUMEMTRACE_ANALYZER_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_views.h"
#include "feed.h"
#include "forensics.h"
#include "block_layer.h"
#include "phases.h"
#include "read_passes.h"
#include "replay.h"
#include "site_calls.h"
#include "thread_use.h"
#include "whatif.h"
#include "trace_model.h"
#include "trace_reader.h"

/* One trace read once (feed.h: metadata into the model, events into the
 * replay) with the analyses a command asks for following the replay. */
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
    bool over_budget;         /* the analysis needed more memory than --max-memory allows (message says so) */
    struct cmt_forensics *forensics; /* NULL when not asked for */
    struct cmt_phases *phases;       /* NULL when not asked for */
    struct cmt_block_layer *blocks;  /* PyTorch's block layer (block_layer.h); always followed */
    struct cmt_site_calls *site_calls; /* NULL when not asked for (usage) */
    struct cmt_thread_use *thread_use; /* NULL when not asked for (usage) */
    struct cmt_whatif *whatif;         /* NULL when not asked for (what-if replays) */
    struct cmt_read_passes *passes;    /* NULL when not asked for (holder peaks, uncached what-if) */
    struct cmt_alloc_views *views;     /* follows site_calls, thread_use and the holders: NULL without them */
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
    /* Follow allocation calls and short-lived allocations per call site
     * (site_calls.h) and device memory per allocating thread (thread_use.h):
     * the report's usage views. */
    bool usage;
    /* Replay PyTorch's tensor requests through models of its caching
     * allocator (whatif.h) under the recorded settings and these, on a
     * device of whatif_capacity bytes (0: each device's own). Attached after
     * the phases, so that failures find theirs. */
    bool whatif;
    const struct cmt_ta_settings *whatif_settings;
    size_t n_whatif_settings;
    uint64_t whatif_capacity;
    /* Follow, while the trace is read, what the report needs of each
     * stack's holder (read_passes.h): each holder's own peak
     * (holder_peaks) and, with whatif, what-if of PyTorch without its
     * cache. The stacks are classified with these frame options (the
     * report's); NULL: not followed (the report reads the trace again
     * when it needs them). */
    const struct cmt_frames_options *holder_frames;
    bool holder_peaks;
    /* More analyses, observers of the replay (replay.h), attached after
     * those above in this order: a new analysis is a file of analyses/ and
     * one line in the command that asks for it. Their results are theirs;
     * on_finish comes after the replay's end. At most
     * CMT_REPLAY_MAX_OBSERVERS in all. */
    const struct cmt_replay_observer *const *observers;
    size_t n_observers;
};

/* Opens and reads path (in two threads where that pays: feed.h). Returns
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
/* Whether the memory in use is over the budget (--max-memory,
 * memory_budget.h) now, once more is built from the analysis (a report):
 * then a->message says so, as when the read stopped for it. */
bool cmt_analysis_check_budget(struct cmt_analysis *a);

/* True when the trace is still being written (its process runs): it was
 * read up to what it had committed (trace_reader.h, CMT_READ_AUTO); its
 * state is "incomplete". */
bool cmt_analysis_in_progress(const struct cmt_analysis *a);
/* True for "complete". */
bool cmt_analysis_complete(const struct cmt_analysis *a);

/* The rank the trace's process recorded (-1 when none), read from the
 * metadata at the start of the trace only. Returns 0, or -1 when the file
 * cannot be opened as a trace. */
int cmt_analysis_peek_rank(const char *path, int64_t *rank);

#endif
