/* SPDX-License-Identifier: MIT */
#include "allocator_family.h"

#include <string.h>

static bool contains(const char *s, const char *needle)
{
    return s && strstr(s, needle) != NULL;
}

static enum cmt_allocator_family family_of_frame(const struct cmt_frame *fr)
{
    const char *fn = fr->function, *mod = fr->module ? cmt_basename(fr->module) : NULL;
    if (contains(fn, "CUDACachingAllocator") || contains(mod, "libc10_cuda"))
        return CMT_ALLOCATOR_PYTORCH;
    if (contains(fn, "cupy") || (fr->module && strstr(fr->module, "/cupy/")) || contains(mod, "cupy_backends"))
        return CMT_ALLOCATOR_CUPY;
    if (contains(fn, "BFCAllocator") || contains(mod, "xla_extension") || contains(mod, "libtensorflow"))
        return CMT_ALLOCATOR_XLA;
    if (contains(fn, "rmm::mr::"))
        return CMT_ALLOCATOR_RMM;
    return CMT_ALLOCATOR_NONE;
}

enum cmt_allocator_family cmt_allocator_family_of(struct cmt_frames *f, uint64_t stack)
{
    const struct cmt_stack_frames *sf = cmt_frames_get_unfolded(f, stack);
    for (size_t i = 0; i < sf->n; i++) {
        enum cmt_allocator_family a = family_of_frame(&sf->frames[i]);
        if (a != CMT_ALLOCATOR_NONE)
            return a;
    }
    return CMT_ALLOCATOR_NONE;
}

const char *cmt_allocator_family_name(enum cmt_allocator_family a)
{
    static const char *const names[CMT_ALLOCATOR_COUNT] = {"", "PyTorch", "CuPy", "XLA", "RMM"};
    return a < CMT_ALLOCATOR_COUNT ? names[a] : "";
}

const char *cmt_allocator_family_remedy(enum cmt_allocator_family a)
{
    switch (a) {
    case CMT_ALLOCATOR_PYTORCH:
        return "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place instead of one per "
               "new size) or backend:cudaMallocAsync (the driver's pool), pad inputs to a few fixed shapes, or "
               "call torch.cuda.empty_cache() between phases";
    case CMT_ALLOCATOR_CUPY:
        return "call cupy.get_default_memory_pool().free_all_blocks() between phases, cap it with set_limit(), "
               "or use cupy.cuda.MemoryAsyncPool (the driver's stream-ordered pool)";
    case CMT_ALLOCATOR_XLA:
        return "set XLA_PYTHON_CLIENT_ALLOCATOR=platform or lower XLA_PYTHON_CLIENT_MEM_FRACTION (JAX), "
               "or TF_GPU_ALLOCATOR=cuda_malloc_async (TensorFlow)";
    case CMT_ALLOCATOR_RMM:
        return "use rmm's cuda_async_memory_resource or an arena resource instead of a growing pool";
    default:
        return "";
    }
}

const char *cmt_allocator_family_remedy_expandable(void)
{
    return "expandable_segments:True is on already (PyTorch's cache unmaps its free pages when a request fails and "
           "asks again): add garbage_collection_threshold:0.8 to PYTORCH_CUDA_ALLOC_CONF so that the cache gives "
           "back what it does not use before the device fills, or call torch.cuda.empty_cache() between phases";
}
