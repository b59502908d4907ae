/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_TORCH_BLOCKS_H
#define CUMEMTRACE_PRELOAD_TORCH_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "modules.h"

/* The block layer of PyTorch's CUDA caching allocator (docs/design.md,
 * "Block layer"): once libc10_cuda.so is loaded and its allocator made its
 * first segment, the shim loads its PyTorch bridge (libcumemtrace_torch.so,
 * beside the shim) and attaches it to the allocator's trace callbacks; each
 * block and segment event the allocator reports then becomes a BLOCK record
 * (format.h). Nothing is linked: the bridge is opened with dlopen, and only
 * in a process that loaded PyTorch's CUDA library. CUMEMTRACE_BLOCKS=0 keeps
 * it off. */

/* What the module map tells the bridge (record/modules.h): a module
 * recorded for the first time (if it is libc10_cuda.so, remember where its
 * code is); the end of a scan of the loaded objects, outside
 * dl_iterate_phdr (opens the bridge when the scan found libc10_cuda.so).
 * Metadata lock held. */
extern const struct cmt_module_listener cmt_torch_blocks_module_listener;

/* Called by the segment-making hooks (cudaMalloc, cuMemCreate) after they
 * recorded their call, inside the hook: when the call came from
 * libc10_cuda.so and the layer is undecided, attach now. One load and a
 * compare otherwise. */
void cmt_torch_blocks_after_segment_call_slow(const void *caller);

extern int cmt_torch_blocks_state; /* enum in torch_blocks.c; atomic */

/* True while libc10_cuda.so is loaded and the attach not tried yet. */
static inline bool cmt_torch_blocks_waiting(void)
{
    return __builtin_expect(__atomic_load_n(&cmt_torch_blocks_state, __ATOMIC_RELAXED) == 1, 0);
}

static inline void cmt_torch_blocks_after_segment_call(const void *caller)
{
    /* 1: libc10_cuda.so seen, attach not tried yet */
    if (__builtin_expect(__atomic_load_n(&cmt_torch_blocks_state, __ATOMIC_RELAXED) == 1, 0))
        cmt_torch_blocks_after_segment_call_slow(caller);
}

#endif
