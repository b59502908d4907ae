/* SPDX-License-Identifier: MIT */
/* Linked against the runtime and the driver: 3 cudaMalloc and 2 cuMemAlloc_v2
 * by name, all freed, for the interposer chain test. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)

__attribute__((noinline)) static void runtime_side(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++)
        if (cudaMalloc(&p[i], (size_t)(i + 1) * MiB) != cudaSuccess)
            exit(1);
    for (int i = 0; i < 3; i++)
        cudaFree(p[i]);
}

__attribute__((noinline)) static void driver_side(void)
{
    CUdeviceptr p[2];
    for (int i = 0; i < 2; i++)
        if (cuMemAlloc(&p[i], (size_t)(i + 4) * MiB) != CUDA_SUCCESS)
            exit(1);
    for (int i = 0; i < 2; i++)
        cuMemFree(p[i]);
}

int main(void)
{
    runtime_side(); /* makes device 0's primary context current */
    driver_side();
    printf("done\n");
    return 0;
}
