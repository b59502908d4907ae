/* SPDX-License-Identifier: MIT */
/* Built with CUDA_API_PER_THREAD_DEFAULT_STREAM, as nvcc's
 * --default-stream per-thread does: the runtime's _ptsz functions must reach
 * the driver's _ptsz twins. */
#include "check.h"
#include "simcuda.h"

#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "build this test with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

int main(void)
{
    void *p;
    CHECK_RT(cudaFree(NULL), cudaSuccess); /* initialise */
    unsigned long long before = simcuda_per_thread_stream_calls();
    CHECK_RT(cudaMallocAsync(&p, 4096, 0), cudaSuccess); /* cudaMallocAsync_ptsz */
    CHECK_EQ((uintptr_t)p, 0x500000000000ull);
    CHECK_EQ(simcuda_per_thread_stream_calls(), before + 1);
    CHECK_RT(cudaMemsetAsync(p, 1, 4096, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(p, 0), cudaSuccess);
    CHECK_RT(cudaStreamSynchronize(0), cudaSuccess);
    CHECK_EQ(simcuda_per_thread_stream_calls(), before + 4);

    cudaMemPool_t pool;
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    CHECK_RT(cudaMallocFromPoolAsync(&p, 4096, pool, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(p, 0), cudaSuccess);
    CHECK_EQ(simcuda_per_thread_stream_calls(), before + 6);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    return 0;
}
