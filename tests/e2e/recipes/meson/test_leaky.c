/* SPDX-License-Identifier: MIT */
/* A test binary of the recipe projects (docs/check.md): passes its own
 * checks but forgets one 1 MiB buffer, so `cumemtrace run --check` fails it. */
#include <cuda_runtime_api.h>
#include <stdio.h>

static void *forgotten;

int main(void)
{
    void *p;
    if (cudaMalloc(&p, 1u << 20) != cudaSuccess || cudaMalloc(&forgotten, 1u << 20) != cudaSuccess)
        return 1;
    if (cudaFree(p) != cudaSuccess)
        return 1;
    printf("test_leaky: ok\n");
    return 0;
}
