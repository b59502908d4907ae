/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HOLDER_PASS_H
#define CUMEMTRACE_ANALYZER_HOLDER_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "addr_table.h"
#include "memory_holder.h"
#include "replay.h"
#include "trace_reader.h"

/* A holder's own peak on one device (memory_holder.h): the most its
 * device-resident allocations had live at once. */
struct cmt_holder_peak {
    uint64_t bytes, count, ts; /* ts absolute; 0 bytes: nothing ever */
};

/* Which holder made the allocations of a stack: the caller's rule. */
typedef enum cmt_holder (*cmt_holder_fn)(void *ctx, uint64_t stack);

/* Each holder's live bytes per device, followed over the events as the
 * reader decodes them (not the replay's: only the allocations of stacks
 * with a holder are kept, in a table of their own). Fed by the analysis's
 * one reading (stack_holders.h) or by a reading of its own (holder_peaks.c,
 * when the classes could not be known while reading). */
struct cmt_holder_pass {
    cmt_holder_fn holder_of;
    void *holder_ctx;
    uint64_t stop_ts; /* absolute; 0: to the end */
    uint8_t *known; /* by stack id: holder_of's answer + 1 (asked once per stack) */
    size_t known_cap;
    struct cmt_addr_table live_allocs; /* the holders' live allocations (tag: the holder) */
    bool out_of_memory;
    bool stopped;
    uint64_t live[CMT_MAX_DEVICES][CMT_HOLDER_COUNT];
    uint64_t live_count[CMT_MAX_DEVICES][CMT_HOLDER_COUNT];
    struct cmt_holder_peak peak[CMT_MAX_DEVICES][CMT_HOLDER_COUNT];
};

void cmt_holder_pass_init(struct cmt_holder_pass *p, cmt_holder_fn holder_of, void *ctx, uint64_t stop_ts);
/* One event in the order read. Returns nonzero once the pass is done with
 * the trace (past stop_ts, or out of memory: out_of_memory says which). */
int cmt_holder_pass_event(struct cmt_holder_pass *p, const struct cmt_event_in *e);
void cmt_holder_pass_free(struct cmt_holder_pass *p);

#endif
