/* SPDX-License-Identifier: MIT */
/* Stream-ordered pool lifecycle, runtime API: cudaMemPoolCreate,
 * cudaMemPoolDestroy, cudaMemPoolTrimTo. The pools' reserved and used bytes
 * over time come from the sampler; these events say when pools appear, go,
 * and give memory back on request. With the dynamic runtime the driver call
 * underneath passes through (one event per user call). */
#include <cuda_runtime_api.h>

#include "pool_hooks.h"
#include "real_symbols.h"
#include "runtime_exports.h"

CMT_REAL_SLOT(cudaMemPoolCreate);
CMT_REAL_SLOT(cudaMemPoolDestroy);
CMT_REAL_SLOT(cudaMemPoolTrimTo);

CMT_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    __typeof__(cudaMemPoolCreate) *real = CMT_REAL(cudaMemPoolCreate);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(memPool, poolProps);
    if (rec)
        cmt_pool_hook_created(&h, CMT_API_POOL_CREATE, r, r == cudaSuccess && memPool ? (uint64_t)(uintptr_t)*memPool : 0,
                              poolProps ? (int)poolProps->location.type : 0, poolProps ? poolProps->location.id : 0,
                              poolProps ? poolProps->maxSize : 0);
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolCreate)

CMT_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    __typeof__(cudaMemPoolDestroy) *real = CMT_REAL(cudaMemPoolDestroy);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME) && memPool;
    struct cmt_pool_destroy d = rec ? cmt_pool_hook_destroy_begin(&h, (uint64_t)(uintptr_t)memPool) : (struct cmt_pool_destroy){0};
    cudaError_t r = real(memPool);
    if (rec)
        cmt_pool_hook_destroyed(&h, CMT_API_POOL_DESTROY, &d, r, (uint64_t)(uintptr_t)memPool);
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolDestroy)

CMT_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    __typeof__(cudaMemPoolTrimTo) *real = CMT_REAL(cudaMemPoolTrimTo);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME) && memPool;
    cudaError_t r = real(memPool, minBytesToKeep);
    if (rec)
        cmt_pool_hook_trimmed(&h, CMT_API_POOL_TRIM, r, (uint64_t)(uintptr_t)memPool, minBytesToKeep);
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolTrimTo)
