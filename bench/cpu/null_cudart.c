/* SPDX-License-Identifier: MIT */
/* A CUDA runtime that does nothing and takes no lock, for the CPU benchmark's
 * scaling runs: on the simulated device every call takes its one mutex, so
 * threads mostly measure that mutex; here a call costs a few nanoseconds and
 * what grows with threads is the shim's own cost, if anything. Each thread
 * hands out addresses from its own range; release is a no-op. */
#include <cuda_runtime_api.h>
#include <stdint.h>

static uint64_t next_range = 0x7c0000000000ull;
static __thread uint64_t next_address, range_end;

static void *take(size_t size)
{
    size = (size + 511) & ~(size_t)511;
    if (next_address + size > range_end) {
        next_address = __atomic_fetch_add(&next_range, 1ull << 32, __ATOMIC_RELAXED);
        range_end = next_address + (1ull << 32);
    }
    void *p = (void *)(uintptr_t)next_address;
    next_address += size;
    return p;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = take(size);
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    (void)p;
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t stream)
{
    (void)stream;
    *p = take(size);
    return cudaSuccess;
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t stream)
{
    (void)p, (void)stream;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
