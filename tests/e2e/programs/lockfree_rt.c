/* SPDX-License-Identifier: MIT */
/* A minimal CUDA runtime for one test: cudaMalloc/cudaFree/cudaGetDevice with
 * no locks at all (a bump allocator over atomics), so a signal handler can
 * call them at any instant. What is under test is that the profiler's hooks
 * neither deadlock nor corrupt the trace when re-entered from a handler. */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdint.h>

static uint64_t next_address = 0x7e0000000000ull;
static int raise_signal;
static size_t raise_size;

/* From now on every cudaMalloc of size bytes raises sig inside the call,
 * before it returns: its handler then runs inside the profiler's hook
 * (signal_in_call.c). */
void lockfree_rt_raise_in_malloc(int sig, size_t size);

void lockfree_rt_raise_in_malloc(int sig, size_t size)
{
    raise_size = size;
    raise_signal = sig;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    uint64_t a = __atomic_fetch_add(&next_address, (size + 511) & ~(size_t)511, __ATOMIC_RELAXED);
    *p = (void *)(uintptr_t)a;
    if (raise_signal && size == raise_size)
        raise(raise_signal);
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    (void)p;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
