/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_WHATIF_UNCACHED_H
#define CUMEMTRACE_ANALYZER_WHATIF_UNCACHED_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "frames.h"
#include "whatif.h"

/* What if for a trace of PyTorch with its cache off
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1): no block layer, one cudaMalloc and
 * one cudaFree per tensor, recognised by their stacks (NativeCaching-
 * Allocator's own cudaMalloc, not a cache's segment: memory_holder.h, which
 * needs the symbols). A second, light reading of the trace (as
 * holder_peaks.c does) feeds those tensors to the what-if engine:
 * "with PyTorch's cache these requests would reserve ...".
 *
 * *out NULL when the trace has no such allocation; else an engine to free
 * with cmt_whatif_uncached_free. Returns 0, or -1 when out of memory. */
struct cmt_report;
/* report, when asked for one (its frames are frames), keeps each stack's
 * classes (cmt_report_cache, cmt_report_holder); NULL: decided anew. */
int cmt_whatif_uncached_run(struct cmt_whatif **out, const struct cmt_analysis *a, struct cmt_frames *frames,
                            struct cmt_report *report, const struct cmt_ta_settings *settings, size_t n_settings,
                            uint64_t capacity);
void cmt_whatif_uncached_free(struct cmt_whatif *w);

#endif
