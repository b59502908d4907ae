/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FEED_H
#define CUMEMTRACE_ANALYZER_FEED_H

#include <stdbool.h>
#include <stdint.h>

#include "replay.h"
#include "trace_model.h"
#include "trace_reader.h"

/* Reads an opened trace once: its metadata into a model, its events and
 * records (those the replay's observers need) into a replay, which tells
 * its observers. With a trace of 8 MiB or more and at least two usable
 * CPUs (load average at most their number + 1), the trace is decoded
 * in a second thread while this one replays (CUMEMTRACE_ANALYZER_THREADS=1
 * keeps one thread, =2 forces two). The model is only read by this thread
 * once the feed returned. */
struct cmt_feed {
    struct cmt_reader *reader;
    struct cmt_trace_model *model;
    struct cmt_replay *replay;
    uint64_t start_ns;   /* the trace's start (cmt_trace_info.start_monotonic_ns) */
    uint64_t file_size;  /* small traces keep one thread */
    uint64_t stop_at_ns; /* >0: stop before the first event after this time since the start */
    bool stopped_early;  /* set when the feed stopped there */
    /* The memory budget (memory_budget.h), checked every
     * CMT_FEED_BUDGET_EVERY events: past it the read stops. */
    bool over_budget;
    uint64_t memory_in_use; /* when the budget was found exceeded */
    uint64_t events_read;
    /* Each event as read, before the replay gets it, on the reading thread
     * (analyses/read_passes.h follows holders there); NULL: none. */
    void (*on_read)(void *ctx, const struct cmt_event_in *e);
    void *read_ctx;
};

#define CMT_FEED_BUDGET_EVERY 65536u

/* Returns what cmt_reader_run returned (nonzero: damage, said by the
 * reader); replay->out_of_memory when the replay gave up. */
int cmt_feed_run(struct cmt_feed *f);

#endif
