/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_MEMORY_HOLDER_H
#define CUMEMTRACE_ANALYZER_MEMORY_HOLDER_H

#include <stdbool.h>
#include <stdint.h>

#include "frames.h"

/* Who holds an allocation, from the frames of its stack (every frame,
 * folded ones included, innermost first: the first frame that names a
 * holder decides, so cuBLAS's workspace taken from PyTorch's cache is
 * PyTorch's). docs/report.md, "Peak by holder" and "Held by an allocator at
 * exit", lists the frames each is recognised by. */
enum cmt_holder {
    CMT_HOLDER_OTHER = 0, /* the program and everything else */
    CMT_HOLDER_PYTORCH,   /* c10::cuda::CUDACachingAllocator */
    CMT_HOLDER_CUPY,      /* cupy.cuda.memory */
    CMT_HOLDER_XLA,       /* XLA/TensorFlow's BFC allocator */
    CMT_HOLDER_RMM,       /* RAPIDS Memory Manager */
    CMT_HOLDER_CUBLAS,    /* cuBLAS and cuBLASLt handles and workspaces */
    CMT_HOLDER_CUDNN,
    CMT_HOLDER_NCCL,
    CMT_HOLDER_PYTORCH_HOST, /* PyTorch's CachingHostAllocator: pinned host memory it caches */
    CMT_HOLDER_COUNT
};

/* The holders of device memory come first: CMT_HOLDER_PYTORCH_HOST holds
 * pinned host memory only, so a device account's split by holder (JSON
 * keys, text) goes up to here. */
#define CMT_HOLDER_DEVICE_COUNT CMT_HOLDER_PYTORCH_HOST

/* "PyTorch", "CuPy", "XLA", "RMM", "cuBLAS", "cuDNN", "NCCL", "PyTorch's
 * host cache", "other". */
const char *cmt_holder_name(enum cmt_holder h);
/* "pytorch", "cupy", ...: JSON keys. */
const char *cmt_holder_key(enum cmt_holder h);

/* Which holder made the allocations of a recorded stack. */
enum cmt_holder cmt_holder_of(struct cmt_frames *f, uint64_t stack);

/* The caching allocator whose cache an allocation of this stack is: a
 * segment PyTorch's DeviceCachingAllocator (or its expandable segments)
 * reserved, a block of CuPy's memory pool, a region of XLA's BFC allocator,
 * a block of an RMM pool or arena. CMT_HOLDER_OTHER when it is none: an
 * allocation PyTorch made without its cache (PYTORCH_NO_CUDA_MEMORY_CACHING=1)
 * holds one tensor and is not a cache. Pinned host memory that PyTorch's
 * CachingHostAllocator took with cudaHostAlloc is its host cache
 * (CMT_HOLDER_PYTORCH_HOST): it keeps freed blocks for reuse until exit.
 * Recognised by function names, else (no symbols) by the module of the
 * frame that called the CUDA API: libc10_cuda.so (PyTorch's device cache),
 * libtorch_cuda.so (its host cache); the caller decides by the memory's
 * kind which of the two applies. */
enum cmt_holder cmt_cache_of(struct cmt_frames *f, uint64_t stack);

/* The same two answers from a stack's frames as cmt_frames_get_unfolded
 * gives them (one resolution for both: stack_holders.c). */
enum cmt_holder cmt_holder_of_frames(const struct cmt_stack_frames *sf);
enum cmt_holder cmt_cache_of_frames(const struct cmt_stack_frames *sf);

#endif
