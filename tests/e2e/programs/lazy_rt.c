/* SPDX-License-Identifier: MIT */
/* A CUDA runtime stand-in whose device selection is lazy, as a runtime may
 * be: cudaSetDevice and cudaSetValidDevices only note the choice, no driver
 * call, no context switch. Only the shim's hooks of those two functions can
 * then tell that the thread's device changed (test_devices.py). */
#include <cuda_runtime_api.h>
#include <stdint.h>

static uint64_t next_address = 0x7d0000000000ull;
static __thread int selected = -1;
static int valid_first = 0;

cudaError_t cudaSetDevice(int device)
{
    selected = device;
    return cudaSuccess;
}

cudaError_t cudaSetValidDevices(int *devices, int len)
{
    if (!devices || len < 1)
        return cudaErrorInvalidValue;
    __atomic_store_n(&valid_first, devices[0], __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = selected >= 0 ? selected : __atomic_load_n(&valid_first, __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = (void *)(uintptr_t)__atomic_fetch_add(&next_address, (size + 511) & ~(size_t)511, __ATOMIC_RELAXED);
    return cudaSuccess;
}
