/* SPDX-License-Identifier: MIT */
/* A test binary of the recipe projects (docs/check.md): frees what it
 * allocates, so `cumemtrace run --check` passes it. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p;
    if (cudaMalloc(&p, 1u << 20) != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 1;
    printf("test_clean: ok\n");
    return 0;
}
