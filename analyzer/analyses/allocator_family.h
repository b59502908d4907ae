/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ALLOCATOR_FAMILY_H
#define CUMEMTRACE_ANALYZER_ALLOCATOR_FAMILY_H

#include <stdint.h>

#include "frames.h"

/* Caching allocators recognised on a call stack. Their allocations are
 * segments they carve tensors or arrays out of: a CUDA-level trace sees the
 * segments (reserved memory), not what lives in them, and the allocator's
 * own settings are the remedy for what strands memory. */
enum cmt_allocator_family {
    CMT_ALLOCATOR_NONE = 0,
    CMT_ALLOCATOR_PYTORCH, /* c10::cuda::CUDACachingAllocator (libc10_cuda.so) */
    CMT_ALLOCATOR_CUPY,    /* cupy.cuda.memory.MemoryPool */
    CMT_ALLOCATOR_XLA,     /* XLA/JAX and TensorFlow's BFC allocator */
    CMT_ALLOCATOR_RMM,     /* RAPIDS Memory Manager pools */
    CMT_ALLOCATOR_COUNT
};

/* The family whose frames appear on the stack (every frame, folded ones
 * included), innermost first; NONE when none does. */
enum cmt_allocator_family cmt_allocator_family_of(struct cmt_frames *f, uint64_t stack);

const char *cmt_allocator_family_name(enum cmt_allocator_family a); /* "PyTorch" ... "" */
/* What to try when this allocator holds memory it does not use (one
 * sentence, no trailing period). */
const char *cmt_allocator_family_remedy(enum cmt_allocator_family a);
/* The same for PyTorch's cache when its recorded settings have
 * expandable_segments:True already. */
const char *cmt_allocator_family_remedy_expandable(void);

#endif
