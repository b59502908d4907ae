/* SPDX-License-Identifier: MIT */
/* Two devices (run with SIMCUDA_DEVICES=2 SIMCUDA_CAPACITY=16GiB,1GiB): each
 * has its own address range, capacity and default pool; the current device
 * is per thread. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "simcuda.h"

static void *allocate_on_new_thread(void *result)
{
    /* A new thread starts on device 0. */
    int device = -1;
    CHECK_RT(cudaGetDevice(&device), cudaSuccess);
    CHECK_EQ(device, 0);
    CHECK_RT(cudaMalloc((void **)result, 4096), cudaSuccess);
    return NULL;
}

int main(void)
{
    int count = 0, device = -1;
    CHECK_RT(cudaGetDeviceCount(&count), cudaSuccess);
    CHECK_EQ(count, 2);
    CHECK_RT(cudaGetDevice(&device), cudaSuccess);
    CHECK_EQ(device, 0);

    struct cudaDeviceProp prop;
    CHECK_RT(cudaGetDeviceProperties(&prop, 1), cudaSuccess);
    CHECK_EQ(prop.totalGlobalMem, 1024 * MiB);
    CHECK(strcmp(prop.name, "cumemtrace Simulated GPU") == 0);
    CHECK_EQ(prop.major, 9);
    CHECK_EQ(prop.minor, 0);
    CHECK_EQ(prop.warpSize, 32);
    CHECK_EQ(prop.memoryPoolsSupported, 1);
    CHECK_EQ(prop.pciBusID, 2);
    CHECK(memcmp(prop.uuid.bytes, "simcuda-device-1", 16) == 0);
    CHECK_RT(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    CHECK_EQ(prop.totalGlobalMem, 16384 * MiB);
    CHECK_RT(cudaGetDeviceProperties(&prop, 2), cudaErrorInvalidDevice);

    void *on0, *on1, *async1, *from_thread;
    CHECK_RT(cudaMalloc(&on0, 1 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)on0, 0x500000000000ull);
    CHECK_RT(cudaSetDevice(1), cudaSuccess);
    CHECK_RT(cudaGetDevice(&device), cudaSuccess);
    CHECK_EQ(device, 1);
    CHECK_RT(cudaMalloc(&on1, 1 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)on1, 0x510000000000ull);
    CHECK_RT(cudaMallocAsync(&async1, 1 * MiB, 0), cudaSuccess);
    CHECK_EQ((uintptr_t)async1, 0x510000100000ull);
    CHECK_EQ(simcuda_device_used_bytes(0), 1 * MiB);
    CHECK_EQ(simcuda_device_used_bytes(1), 3 * MiB);
    size_t free_bytes, total;
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(total, 1024 * MiB);
    CHECK_EQ(free_bytes, 1021 * MiB);
    CHECK_RT(cudaSetDevice(2), cudaErrorInvalidDevice);
    CHECK_RT(cudaGetDevice(&device), cudaSuccess);
    CHECK_EQ(device, 1);

    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, allocate_on_new_thread, &from_thread) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_EQ((uintptr_t)from_thread, 0x500000100000ull);

    /* Copies between devices work through unified addressing. */
    CHECK_RT(cudaMemset(on1, 7, 64), cudaSuccess);
    CHECK_RT(cudaMemcpy(on0, on1, 64, cudaMemcpyDeviceToDevice), cudaSuccess);
    unsigned char byte = 0;
    CHECK_RT(cudaMemcpy(&byte, (char *)on0 + 63, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(byte, 7);

    /* Each device has its own default pool. */
    cudaMemPool_t pool0, pool1;
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool0, 0), cudaSuccess);
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool1, 1), cudaSuccess);
    CHECK(pool0 != pool1);
    CHECK_RT(cudaDeviceSetMemPool(0, pool1), cudaErrorInvalidValue);

    CHECK_RT(cudaFree(on0), cudaSuccess); /* any device's memory, from here */
    CHECK_RT(cudaFree(on1), cudaSuccess);
    CHECK_RT(cudaFree(from_thread), cudaSuccess);
    CHECK_RT(cudaFreeAsync(async1, 0), cudaSuccess);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    CHECK_EQ(simcuda_device_used_bytes(1), 0);
    CHECK_RT(cudaGetLastError(), cudaErrorInvalidValue);
    return 0;
}
