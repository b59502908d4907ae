// SPDX-License-Identifier: MIT
// A kernel that writes one float past the end of its buffer, for the
// comparison of docs/comparison.md (run_guide_validation.sh): the kind of bug
// compute-sanitizer's memcheck finds and an allocation profiler cannot see.
// The buffer is freed: there is no leak. Exit status 0 (the write lands in
// the allocation's rounding and goes unnoticed without a checker).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void off_by_one(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) // should be i < n
        p[i] = 1.0f;
}

int main()
{
    const int n = 1000; // 4000 bytes; the allocation is rounded up, so the write does not fault
    float *p;
    if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess)
        return 1;
    off_by_one<<<(n + 256) / 256, 256>>>(p, n);
    cudaError_t err = cudaDeviceSynchronize();
    cudaFree(p);
    std::printf("oob_write: %s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
}
