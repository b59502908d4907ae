/* SPDX-License-Identifier: MIT */
/* libcmt_vendor.so: stands for a third-party library that allocates a
 * workspace once and keeps it until the process exits. The allocation is
 * made one call below the library's entry point, so suppressions that name
 * the entry point match a frame other than the innermost. */
#include <cuda_runtime_api.h>
#include <stddef.h>

void *vendor_init_workspace(void);

static void *workspace;

__attribute__((noinline)) static void *vendor_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

__attribute__((visibility("default"), noinline)) void *vendor_init_workspace(void)
{
    if (!workspace)
        workspace = vendor_alloc(4u << 20);
    return workspace;
}
