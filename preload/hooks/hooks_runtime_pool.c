/* SPDX-License-Identifier: MIT */
/* Stream-ordered pool lifecycle, runtime API: cudaMemPoolCreate,
 * cudaMemPoolDestroy, cudaMemPoolTrimTo. The pools' reserved and used bytes
 * over time come from the sampler; these events say when pools appear, go,
 * and give memory back on request. With the dynamic runtime the driver call
 * underneath passes through (one event per user call). Each hook is a row
 * of the lists below, expanded by the skeletons of runtime_hooks.h; what it
 * records is its record_NAME (pool_hooks.h, shared with the driver's). */
#include <cuda_runtime_api.h>

#include "hook_record.h"
#include "pool_hooks.h"
#include "real_symbols.h"
#include "runtime_hooks.h"

static inline void record_cudaMemPoolCreate(struct cmt_hook *h, cudaError_t r, const void *real, cudaMemPool_t *memPool,
                                            const struct cudaMemPoolProps *poolProps)
{
    (void)real;
    cmt_pool_hook_created(h, CMT_API_POOL_CREATE, r, r == cudaSuccess && memPool ? (uint64_t)(uintptr_t)*memPool : 0,
                          poolProps ? (int)poolProps->location.type : 0, poolProps ? poolProps->location.id : 0,
                          poolProps ? poolProps->maxSize : 0);
}

static inline void record_cudaMemPoolTrimTo(struct cmt_hook *h, cudaError_t r, const void *real, cudaMemPool_t memPool,
                                            size_t minBytesToKeep)
{
    (void)real;
    cmt_pool_hook_trimmed(h, CMT_API_POOL_TRIM, r, (uint64_t)(uintptr_t)memPool, minBytesToKeep);
}

static inline struct cmt_call_start begin_cudaMemPoolDestroy(struct cmt_hook *h, cudaMemPool_t memPool)
{
    return cmt_pool_hook_destroy_begin(h, (uint64_t)(uintptr_t)memPool);
}

static inline void record_cudaMemPoolDestroy(struct cmt_hook *h, const struct cmt_call_start *start, cudaError_t r,
                                             const void *real, cudaMemPool_t memPool)
{
    (void)real;
    cmt_pool_hook_destroyed(h, CMT_API_POOL_DESTROY, start, r, (uint64_t)(uintptr_t)memPool);
}

/* X(name, recorded when, (parameters), (arguments)): a null pool is no call
 * to record. */
#define CMT_RUNTIME_POOL_CALLS(X)                                                                               \
    X(cudaMemPoolCreate, true, (cudaMemPool_t * memPool, const struct cudaMemPoolProps *poolProps),            \
      (memPool, poolProps))                                                                                     \
    X(cudaMemPoolTrimTo, memPool != NULL, (cudaMemPool_t memPool, size_t minBytesToKeep), (memPool, minBytesToKeep))
#define CMT_RUNTIME_POOL_GIVE_UPS(X) X(cudaMemPoolDestroy, memPool != NULL, (cudaMemPool_t memPool), (memPool))

CMT_RUNTIME_POOL_CALLS(CMT_RUNTIME_CALL_HOOK)
CMT_RUNTIME_POOL_GIVE_UPS(CMT_RUNTIME_GIVE_UP_HOOK)
