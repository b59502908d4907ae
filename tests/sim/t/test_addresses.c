/* SPDX-License-Identifier: MIT */
/* Device pointers are deterministic: the documented address map, 512-byte
 * rounding, first fit, and memory that programs can really use. */
#include <string.h>

#include "check.h"
#include "simcuda.h"

int main(void)
{
    void *first, *second, *small_a, *small_b, *zero = (void *)1;
    CHECK_RT(cudaMalloc(&first, 1 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)first, 0x500000000000ull);
    CHECK_RT(cudaMalloc(&second, 1 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)second, 0x500000100000ull);
    CHECK_EQ(simcuda_addresses_are_fixed(), 1);

    /* Sizes round up to 512 bytes. */
    CHECK_RT(cudaMalloc(&small_a, 1), cudaSuccess);
    CHECK_RT(cudaMalloc(&small_b, 513), cudaSuccess);
    CHECK_EQ((uintptr_t)small_a, 0x500000200000ull);
    CHECK_EQ((uintptr_t)small_b, 0x500000200000ull + 512);
    CHECK_EQ(simcuda_device_used_bytes(0), 2 * MiB + 512 + 1024);

    /* Zero bytes: success and NULL, as NVIDIA's runtime does. */
    CHECK_RT(cudaMalloc(&zero, 0), cudaSuccess);
    CHECK(zero == NULL);
    CHECK_RT(cudaFree(NULL), cudaSuccess);

    /* First fit: a freed hole is reused by the next request that fits. */
    CHECK_RT(cudaFree(first), cudaSuccess);
    void *again;
    CHECK_RT(cudaMalloc(&again, 4096), cudaSuccess);
    CHECK_EQ((uintptr_t)again, 0x500000000000ull);

    /* Device memory holds data: copies and memsets work. */
    char host[4096], back[4096];
    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (char)(i * 7);
    CHECK_RT(cudaMemcpy(again, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_RT(cudaMemcpy(second, again, sizeof host, cudaMemcpyDeviceToDevice), cudaSuccess);
    CHECK_RT(cudaMemcpy(back, second, sizeof back, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(memcmp(host, back, sizeof host) == 0);
    CHECK_RT(cudaMemset(second, 0xab, 100), cudaSuccess);
    CHECK_RT(cudaMemcpy(back, second, 101, cudaMemcpyDefault), cudaSuccess);
    CHECK_EQ((unsigned char)back[99], 0xab);
    CHECK_EQ((unsigned char)back[100], (unsigned char)host[100]);
    /* A host pointer is not device memory. */
    CHECK_RT(cudaMemcpy(host, back, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CHECK_RT(cudaGetLastError(), cudaErrorInvalidValue);

    /* Managed and pinned host memory: their own arenas, usable, and not
     * device capacity. */
    size_t used_before = simcuda_device_used_bytes(0);
    int *managed, *pinned, *host_alloc;
    CHECK_RT(cudaMallocManaged((void **)&managed, 1000, cudaMemAttachGlobal), cudaSuccess);
    CHECK_EQ((uintptr_t)managed, 0x680000000000ull);
    CHECK_RT(cudaMallocHost((void **)&pinned, 1000), cudaSuccess);
    CHECK_EQ((uintptr_t)pinned, 0x690000000000ull);
    CHECK_RT(cudaHostAlloc((void **)&host_alloc, 10, cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ((uintptr_t)host_alloc, 0x690000000000ull + 1024);
    managed[249] = 42;
    pinned[249] = 43;
    CHECK_RT(cudaMemcpy(pinned, managed, 1000, cudaMemcpyDefault), cudaSuccess);
    CHECK_EQ(pinned[249], 42);
    CHECK_EQ(simcuda_device_used_bytes(0), used_before);
    CHECK_RT(cudaMallocManaged((void **)&managed, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
    CHECK_RT(cudaFree(pinned), cudaErrorInvalidValue); /* pinned memory is freed with cudaFreeHost */
    CHECK_RT(cudaFreeHost(pinned), cudaSuccess);
    CHECK_RT(cudaFreeHost(host_alloc), cudaSuccess);
    CHECK_RT(cudaFree(managed), cudaSuccess);
    CHECK_RT(cudaFree(managed), cudaErrorInvalidValue); /* double free */

    CHECK_RT(cudaFree(again), cudaSuccess);
    CHECK_RT(cudaFree(second), cudaSuccess);
    CHECK_RT(cudaFree(small_a), cudaSuccess);
    CHECK_RT(cudaFree(small_b), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    return 0;
}
