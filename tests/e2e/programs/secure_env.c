/* SPDX-License-Identifier: MIT */
/* Linked directly against the profiler (a setuid program ignores LD_PRELOAD
 * paths): allocates once, so the shim decides where its trace goes. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p;
    int device = -1;
    /* cudaGetDevice is not hooked: the reference keeps the runtime behind
     * the shim a needed library of this program. */
    cudaGetDevice(&device);
    cudaError_t r = cudaMalloc(&p, 1u << 20);
    printf("cudaMalloc %d device %d\n", r, device);
    return 0;
}
