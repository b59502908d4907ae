/* SPDX-License-Identifier: MIT */
/* Memory held by "another process" and by the context itself (run with
 * SIMCUDA_CAPACITY=64MiB SIMCUDA_EXTERNAL_USED=16MiB SIMCUDA_CONTEXT_BYTES=4MiB):
 * both lower what cuMemGetInfo reports and what can be allocated, neither is
 * this process's device-resident use. */
#include "check.h"
#include "simcuda.h"

int main(void)
{
    size_t free_bytes, total;
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(total, 64 * MiB);
    CHECK_EQ(free_bytes, 44 * MiB);
    struct simcuda_usage usage;
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.external, 16 * MiB);
    CHECK_EQ(usage.context, 4 * MiB);

    void *p, *q;
    CHECK_RT(cudaMalloc(&p, 44 * MiB + 512), cudaErrorMemoryAllocation);
    CHECK_RT(cudaMalloc(&p, 40 * MiB), cudaSuccess);
    CHECK_EQ(simcuda_device_used_bytes(0), 40 * MiB);

    /* The other process grows: nothing is left, even for a pool. */
    simcuda_set_external_used(0, 24 * MiB);
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(free_bytes, 0);
    CHECK_RT(cudaMalloc(&q, 512), cudaErrorMemoryAllocation);
    CHECK_RT(cudaMallocAsync(&q, 512, 0), cudaErrorMemoryAllocation);

    /* ... and shrinks again. */
    simcuda_set_external_used(0, 0);
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(free_bytes, 20 * MiB);
    CHECK_RT(cudaMalloc(&q, 20 * MiB), cudaSuccess);
    CHECK_RT(cudaFree(q), cudaSuccess);

    /* A device reset destroys the context and what it owns, and with it the
     * context's overhead; the next call brings the context back. */
    void *managed, *host;
    CHECK_RT(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
    CHECK_RT(cudaMallocHost(&host, 4096), cudaSuccess);
    CHECK_RT(cudaMallocAsync(&q, 1 * MiB, 0), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(0), 4);
    CHECK_RT(cudaDeviceReset(), cudaSuccess);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.context, 0);
    CHECK_EQ(usage.plain, 0);
    /* Stream-ordered allocations belong to no context and survive. */
    CHECK_EQ(usage.pool_reserved, 2 * MiB);
    CHECK_EQ(simcuda_live_allocations(0), 1);
    CHECK_RT(cudaFree(p), cudaErrorInvalidValue);

    CHECK_RT(cudaMalloc(&p, 1 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)p, 0x500000000000ull);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.context, 4 * MiB);
    CHECK_RT(cudaFree(p), cudaSuccess);
    CHECK_RT(cudaFreeAsync(q, 0), cudaSuccess);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    return 0;
}
