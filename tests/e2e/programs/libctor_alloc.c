/* SPDX-License-Identifier: MIT */
/* A library that allocates device memory from its constructor, i.e. while
 * the dynamic loader is in the middle of dlopen, and never frees it: each
 * load leaks 1 MiB at ctor_allocate. */
#include <cuda_runtime_api.h>

static void *buffer;

__attribute__((noinline)) static void ctor_allocate(void)
{
    cudaMalloc(&buffer, 1u << 20);
}

__attribute__((constructor)) static void on_load(void)
{
    ctor_allocate();
}

int ctor_alloc_loaded(void);
int ctor_alloc_loaded(void)
{
    return buffer != 0;
}
