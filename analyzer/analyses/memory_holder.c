/* SPDX-License-Identifier: MIT */
#include "memory_holder.h"

#include <string.h>

static bool has(const char *s, const char *needle)
{
    return s && strstr(s, needle) != NULL;
}

static bool starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* PyTorch's pinned host memory cache: at::cuda::CachingHostAllocator,
 * at::CachingHostAllocatorImpl, at::cuda::(anonymous)::CUDACachingHostAllocatorImpl
 * (2.x), at::cuda::(anonymous)::CUDAHostAllocator (1.x). */
static bool host_cache_frame(const char *fn)
{
    return has(fn, "CachingHostAllocator") || has(fn, "CUDAHostAllocator");
}

static enum cmt_holder holder_of_frame(const struct cmt_frame *fr)
{
    const char *fn = fr->function, *path = fr->module;
    const char *mod = path ? cmt_basename(path) : NULL;
    /* before libc10_cuda's rule: the host cache's frames may sit in it */
    if (host_cache_frame(fn))
        return CMT_HOLDER_PYTORCH_HOST;
    if (has(fn, "CUDACachingAllocator") || starts(mod, "libc10_cuda"))
        return CMT_HOLDER_PYTORCH;
    if (has(fn, "cupy") || has(path, "/cupy/") || has(path, "/cupy_backends/") || has(fr->file, "/cupy/"))
        return CMT_HOLDER_CUPY;
    if (has(fn, "BFCAllocator") || starts(mod, "xla_extension") || starts(mod, "libtensorflow"))
        return CMT_HOLDER_XLA;
    if (has(fn, "rmm::mr::"))
        return CMT_HOLDER_RMM;
    /* PyTorch's own workspaces for cuBLAS without its cache
     * (at::cuda::getCUDABlasLtWorkspace, setWorkspaceForHandle) are cuBLAS's. */
    if (starts(fn, "cublas") || starts(mod, "libcublas") || (starts(fn, "at::cuda::") && has(fn, "Blas")) ||
        has(fn, "setWorkspaceForHandle"))
        return CMT_HOLDER_CUBLAS;
    if (starts(fn, "cudnn") || starts(mod, "libcudnn"))
        return CMT_HOLDER_CUDNN;
    /* NCCL's buffers, communicator setup and NVLink/P2P mappings come from
     * libnccl (ncclCommInitRank..., ncclMemAlloc); PyTorch's ProcessGroupNCCL
     * calling the driver itself is NCCL's work too (what it takes from
     * PyTorch's cache was PyTorch's, found first). */
    if (starts(fn, "nccl") || starts(mod, "libnccl") || has(fn, "c10d::ProcessGroupNCCL") ||
        has(fn, "c10d::NCCLComm"))
        return CMT_HOLDER_NCCL;
    return CMT_HOLDER_OTHER;
}

enum cmt_holder cmt_holder_of(struct cmt_frames *f, uint64_t stack)
{
    return cmt_holder_of_frames(cmt_frames_get_unfolded(f, stack));
}

enum cmt_holder cmt_holder_of_frames(const struct cmt_stack_frames *sf)
{
    for (size_t i = 0; i < sf->n; i++) {
        enum cmt_holder h = holder_of_frame(&sf->frames[i]);
        if (h != CMT_HOLDER_OTHER)
            return h;
    }
    return CMT_HOLDER_OTHER;
}

/* The frames of a cache's own growth, not of its pass-through paths:
 * PyTorch's uncached allocations (NativeCachingAllocator::allocate calling
 * cudaMalloc itself) and CuPy's MemoryAsyncPool hold one array each. */
static enum cmt_holder cache_of_frame(const struct cmt_frame *fr)
{
    const char *fn = fr->function;
    if (!fn)
        return CMT_HOLDER_OTHER;
    if (has(fn, "DeviceCachingAllocator::") || has(fn, "ExpandableSegment"))
        return CMT_HOLDER_PYTORCH;
    if (host_cache_frame(fn))
        return CMT_HOLDER_PYTORCH_HOST;
    if (has(fn, "SingleDeviceMemoryPool") || (has(fn, "cupy") && has(fn, "MemoryPool") && !has(fn, "AsyncPool")))
        return CMT_HOLDER_CUPY;
    if (has(fn, "BFCAllocator"))
        return CMT_HOLDER_XLA;
    if (has(fn, "rmm::mr::") && (has(fn, "pool_memory_resource") || has(fn, "arena_memory_resource")))
        return CMT_HOLDER_RMM;
    return CMT_HOLDER_OTHER;
}

/* The CUDA runtime and driver, and the profiler: the frames between the
 * API call and its caller. */
static bool cuda_plumbing(const char *mod)
{
    return !mod || starts(mod, "libcudart") || starts(mod, "libcuda.so") || starts(mod, "libcumemtrace");
}

enum cmt_holder cmt_cache_of(struct cmt_frames *f, uint64_t stack)
{
    return cmt_cache_of_frames(cmt_frames_get_unfolded(f, stack));
}

enum cmt_holder cmt_cache_of_frames(const struct cmt_stack_frames *sf)
{
    for (size_t i = 0; i < sf->n; i++) {
        enum cmt_holder h = cache_of_frame(&sf->frames[i]);
        if (h != CMT_HOLDER_OTHER)
            return h;
    }
    /* Without PyTorch's symbols (a trace read on a machine that lacks its
     * libraries) no frame has a name: the module of the call's own caller
     * says it, as the trace recorded it. libc10_cuda.so calls the CUDA API
     * for its device cache (and, with PYTORCH_NO_CUDA_MEMORY_CACHING=1, for
     * every tensor: only its symbols or the block layer tell that apart);
     * libtorch_cuda.so for its pinned host cache. */
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *fr = &sf->frames[i];
        const char *mod = fr->module && *fr->module ? cmt_basename(fr->module) : NULL;
        if (cuda_plumbing(mod))
            continue;
        if (fr->function)
            break;
        if (starts(mod, "libc10_cuda"))
            return CMT_HOLDER_PYTORCH;
        if (starts(mod, "libtorch_cuda"))
            return CMT_HOLDER_PYTORCH_HOST;
        break;
    }
    return CMT_HOLDER_OTHER;
}

const char *cmt_holder_name(enum cmt_holder h)
{
    static const char *const names[CMT_HOLDER_COUNT] = {"other", "PyTorch", "CuPy",  "XLA",
                                                        "RMM",   "cuBLAS",  "cuDNN", "NCCL",
                                                        "PyTorch's host cache"};
    return h < CMT_HOLDER_COUNT ? names[h] : "other";
}

const char *cmt_holder_key(enum cmt_holder h)
{
    static const char *const keys[CMT_HOLDER_COUNT] = {"other", "pytorch", "cupy",  "xla",
                                                       "rmm",   "cublas",  "cudnn", "nccl",
                                                       "pytorch_host"};
    return h < CMT_HOLDER_COUNT ? keys[h] : "other";
}
