/* SPDX-License-Identifier: MIT */
/* Exhaustion at capacity (run with SIMCUDA_CAPACITY=64MiB), the sticky
 * per-thread last error, and the driver's own zero-size rule. */
#include <string.h>

#include "check.h"
#include "simcuda.h"

int main(void)
{
    size_t free_bytes, total;
    void *big, *rest, *extra;
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(total, 64 * MiB);
    CHECK_EQ(free_bytes, 64 * MiB);

    CHECK_RT(cudaMalloc(&big, 48 * MiB), cudaSuccess);
    CHECK_RT(cudaMalloc(&extra, 32 * MiB), cudaErrorMemoryAllocation);
    /* The last error sticks until read, then clears. */
    CHECK_RT(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    CHECK_RT(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    CHECK_RT(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_RT(cudaGetLastError(), cudaSuccess);
    /* Successful calls do not clear it either. */
    CHECK_RT(cudaMalloc(&extra, 32 * MiB), cudaErrorMemoryAllocation);
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_RT(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(free_bytes, 16 * MiB);

    /* Exactly the remainder fits; then not one more granule. */
    CHECK_RT(cudaMalloc(&rest, 16 * MiB), cudaSuccess);
    CHECK_RT(cudaMalloc(&extra, 1), cudaErrorMemoryAllocation);
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(free_bytes, 0);
    CHECK_EQ(simcuda_device_used_bytes(0), 64 * MiB);
    CHECK(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
    CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);

    /* The driver: zero bytes is an error there, and OOM is its own code. */
    CUdeviceptr dptr;
    CHECK_CU(cuMemAlloc_v2(&dptr, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemAlloc_v2(&dptr, 512), CUDA_ERROR_OUT_OF_MEMORY);

    CHECK_RT(cudaFree(big), cudaSuccess);
    CHECK_RT(cudaFree(rest), cudaSuccess);
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(free_bytes, 64 * MiB);
    /* The whole device in one piece again: frees coalesced. */
    CHECK_RT(cudaMalloc(&big, 64 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)big, 0x500000000000ull);
    CHECK_RT(cudaFree(big), cudaSuccess);
    return 0;
}
