/* SPDX-License-Identifier: MIT */
/* The report's holders: which allocator holds what a call site allocated
 * (memory_holder.h), looked up once per stack and kept, and the advice for
 * each (report_build.c, holder_peaks.c, site_floors.c). */
#include "report.h"

#include <stdlib.h>

#include "memory_holder.h"

static int holder_tables(struct cmt_report *r)
{
    if (r->holder_by_stack)
        return 0;
    size_t n = r->n_stacks ? r->n_stacks : 1;
    r->holder_by_stack = calloc(n, 1);
    r->cache_by_stack = calloc(n, 1);
    if (!r->holder_by_stack || !r->cache_by_stack)
        return -1;
    r->n_stack_slots = n;
    return 0;
}

enum cmt_holder cmt_report_holder(struct cmt_report *r, uint64_t stack)
{
    if (stack == 0 || holder_tables(r) != 0 || stack >= r->n_stack_slots)
        return CMT_HOLDER_OTHER;
    if (!r->holder_by_stack[stack])
        r->holder_by_stack[stack] = (uint8_t)(cmt_holder_of(r->frames, stack) + 1);
    return (enum cmt_holder)(r->holder_by_stack[stack] - 1);
}

enum cmt_holder cmt_report_cache(struct cmt_report *r, uint64_t stack)
{
    if (stack == 0 || holder_tables(r) != 0 || stack >= r->n_stack_slots)
        return CMT_HOLDER_OTHER;
    if (!r->cache_by_stack[stack])
        r->cache_by_stack[stack] = (uint8_t)(cmt_cache_of(r->frames, stack) + 1);
    return (enum cmt_holder)(r->cache_by_stack[stack] - 1);
}

const char *cmt_holder_cache_advice(enum cmt_holder h)
{
    switch (h) {
    case CMT_HOLDER_PYTORCH:
        return "run with PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is then its own cudaMalloc and cudaFree, "
               "and a tensor still alive at exit shows as a leak at the line that made it";
    case CMT_HOLDER_CUPY:
        return "call cupy.cuda.set_allocator(None) before the first array: every array is then its own "
               "allocation, and one still alive at exit shows as a leak";
    case CMT_HOLDER_XLA:
        return "run with XLA_PYTHON_CLIENT_ALLOCATOR=platform (JAX) or TF_GPU_ALLOCATOR=cuda_malloc_async "
               "(TensorFlow): buffers are then allocated one by one";
    case CMT_HOLDER_RMM:
        return "use rmm.mr.CudaMemoryResource (no pool) for the run: every buffer is then its own allocation";
    case CMT_HOLDER_PYTORCH_HOST:
        return "call torch.accelerator.memory.empty_host_cache() (recent PyTorch releases) before exit: the "
               "blocks it keeps for reuse are then freed, and what is still allocated are pinned tensors alive";
    default:
        return "";
    }
}

const char *cmt_holder_tensors_advice(void)
{
    return "the tensors inside these segments were recorded too (PyTorch's block layer): \"PyTorch's tensors\" "
           "shows them, and tensors kept step after step are leaks there";
}
