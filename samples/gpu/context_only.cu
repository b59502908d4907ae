// SPDX-License-Identifier: MIT
// Evidence for the default suppressions (docs/check.md): the CUDA context
// alone. Creates the primary context, loads a kernel, allocates and frees one
// buffer. Anything still allocated at exit belongs to the runtime or the
// driver, not to the program.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void touch(int *p)
{
    *p = 1;
}

int main()
{
    if (cudaFree(nullptr) != cudaSuccess) // creates the context
        return 1;
    int *p;
    if (cudaMalloc(&p, sizeof *p) != cudaSuccess)
        return 1;
    touch<<<1, 1>>>(p);
    if (cudaDeviceSynchronize() != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 1;
    std::printf("context_only: done\n");
    return 0;
}
