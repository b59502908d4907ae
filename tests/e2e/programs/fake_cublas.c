/* SPDX-License-Identifier: MIT */
/* A test double of cuBLAS, built as libcublas.so.13: only the shape that the
 * default suppressions rely on (a module named libcublas.so.* that allocates
 * device memory it keeps until exit). It is no cuBLAS: one entry point, one
 * 2 MiB allocation. */
#include <cuda_runtime_api.h>

int cublasCreate_v2(void **handle);

static void *handle_state;

__attribute__((noinline)) static void *allocate_handle_state(void)
{
    void *p = NULL;
    return cudaMalloc(&p, 2u << 20) == cudaSuccess ? p : NULL;
}

__attribute__((visibility("default"))) int cublasCreate_v2(void **handle)
{
    if (!handle_state)
        handle_state = allocate_handle_state();
    *handle = handle_state;
    return handle_state ? 0 : 3; /* CUBLAS_STATUS_ALLOC_FAILED */
}
