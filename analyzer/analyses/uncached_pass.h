/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_UNCACHED_PASS_H
#define CUMEMTRACE_ANALYZER_UNCACHED_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "addr_table.h"
#include "trace_model.h"
#include "trace_reader.h"
#include "whatif.h"

/* What if for a trace of PyTorch with its cache off
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1; model/whatif_uncached.h): its tensors'
 * cudaMalloc and cudaFree calls, recognised by their stacks, fed to the
 * what-if engine as requests and releases, with the device memory held
 * outside them. Fed with the events in the order read: by the analysis's
 * one reading, or by a reading of its own. */
typedef bool (*cmt_tensor_fn)(void *ctx, const struct cmt_event_in *e);

struct cmt_uncached_pass {
    const struct cmt_trace_model *model; /* the recorded settings, the devices' sizes */
    struct cmt_whatif *w;
    cmt_tensor_fn is_tensor;
    void *tensor_ctx;
    uint64_t stop_ts; /* absolute; 0: to the end */
    struct cmt_addr_table allocs; /* device allocations live (tag: one of PyTorch's tensors) */
    uint64_t live[CMT_WHATIF_MAX_DEVICES];
    bool out_of_memory, stopped;
    /* What the model said when the engine first needed it: the recorded
     * settings (before the first device's models) and each device's size. */
    bool settings_taken, settings_known;
    uint32_t conf_ids[2];
    uint64_t total_taken[CMT_WHATIF_MAX_DEVICES];
    bool device_taken[CMT_WHATIF_MAX_DEVICES];
};

/* w is initialised (cmt_whatif_init) and stays the caller's. */
void cmt_uncached_pass_init(struct cmt_uncached_pass *p, const struct cmt_trace_model *model, struct cmt_whatif *w,
                            cmt_tensor_fn is_tensor, void *ctx, uint64_t stop_ts);
/* One event in the order read. Returns nonzero once the pass is done with
 * the trace (past stop_ts, or out of memory). */
int cmt_uncached_pass_event(struct cmt_uncached_pass *p, const struct cmt_event_in *e);
/* After the last event: the recorded settings if no device needed them. */
void cmt_uncached_pass_finish(struct cmt_uncached_pass *p);
/* Whether what the model said when the pass asked is what it says now
 * (for a pass fed while the model grew). */
bool cmt_uncached_pass_model_same(const struct cmt_uncached_pass *p);
bool cmt_uncached_pass_failed(const struct cmt_uncached_pass *p);
void cmt_uncached_pass_free(struct cmt_uncached_pass *p);

#endif
