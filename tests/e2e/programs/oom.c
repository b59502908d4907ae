/* SPDX-License-Identifier: MIT */
/* Run with SIMCUDA_CAPACITY=64MiB: 48 MiB fits, 32 MiB more does not. The
 * program prints what cudaMalloc returned: the shim must not change it. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#define MiB (1024u * 1024u)

__attribute__((noinline)) static cudaError_t hold_most(void **p)
{
    return cudaMalloc(p, 48 * MiB);
}

__attribute__((noinline)) static cudaError_t try_too_big(void **p)
{
    return cudaMalloc(p, 32 * MiB);
}

int main(void)
{
    void *a = NULL, *b = NULL;
    cudaError_t r1 = hold_most(&a);
    cudaError_t r2 = try_too_big(&b);
    printf("hold_most=%d try_too_big=%d b=%p last=%d\n", r1, r2, b, cudaGetLastError());
    cudaFree(a);
    return r2 == cudaErrorMemoryAllocation ? 0 : 1;
}
