/* SPDX-License-Identifier: MIT */
/* Fragmentation fails allocations as on a GPU: enough free bytes in total,
 * no hole large enough (run with SIMCUDA_CAPACITY=64MiB). */
#include "check.h"
#include "simcuda.h"

#define BASE 0x500000000000ull

int main(void)
{
    void *blocks[8];
    for (int i = 0; i < 8; i++) {
        CHECK_RT(cudaMalloc(&blocks[i], 8 * MiB), cudaSuccess);
        CHECK_EQ((uintptr_t)blocks[i], BASE + (uint64_t)i * 8 * MiB);
    }
    /* Free every other block: 32 MiB free in four 8 MiB holes. */
    for (int i = 0; i < 8; i += 2)
        CHECK_RT(cudaFree(blocks[i]), cudaSuccess);
    size_t free_bytes, total;
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(free_bytes, 32 * MiB);
    struct simcuda_usage usage;
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.largest_hole, 8 * MiB);

    void *wide;
    CHECK_RT(cudaMalloc(&wide, 16 * MiB), cudaErrorMemoryAllocation);
    CHECK_RT(cudaMalloc(&wide, 8 * MiB + 512), cudaErrorMemoryAllocation);
    CHECK_RT(cudaGetLastError(), cudaErrorMemoryAllocation);

    /* An 8 MiB request takes the lowest hole. */
    CHECK_RT(cudaMalloc(&blocks[0], 8 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)blocks[0], BASE);

    /* Freeing block 3 joins holes 2 and 4 into 24 MiB at 16 MiB. */
    CHECK_RT(cudaFree(blocks[3]), cudaSuccess);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.largest_hole, 24 * MiB);
    CHECK_RT(cudaMalloc(&wide, 20 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)wide, BASE + 16 * MiB);

    CHECK_RT(cudaFree(wide), cudaSuccess);
    CHECK_RT(cudaFree(blocks[0]), cudaSuccess);
    for (int i = 1; i < 8; i += 2)
        if (i != 3)
            CHECK_RT(cudaFree(blocks[i]), cudaSuccess);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.largest_hole, 64 * MiB);
    return 0;
}
