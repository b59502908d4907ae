/* SPDX-License-Identifier: MIT */
/* What a device sample costs (docs/fragmentation.md, "Cost"): the driver
 * queries one sample makes, timed directly, and allocation pairs, to be run
 * natively and under the shim with different CUMEMTRACE_SAMPLE_MS
 * (bench/sample_cost.sh does both). Builds against the simulated device and
 * against NVIDIA's libraries alike (plain C, dynamic cudart, -lcuda).
 *
 *   sample_cost [PAIRS]     default 200000 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CHECK(call)                                                                 \
    do {                                                                            \
        int rc_ = (int)(call);                                                      \
        if (rc_ != 0) {                                                             \
            fprintf(stderr, "sample_cost: %s failed with %d\n", #call, rc_);        \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 200000;
    void *p;
    CHECK(cudaFree(0)); /* the context, before anything is timed */

    /* The queries of one device sample (preload/sampler/sampler.c). */
    enum { QUERIES = 20000 };
    CUdevice dev;
    size_t free_bytes, total_bytes;
    uint64_t t0 = now_ns();
    for (int i = 0; i < QUERIES; i++) {
        CHECK(cuCtxGetDevice(&dev));
        CHECK(cuMemGetInfo(&free_bytes, &total_bytes));
    }
    uint64_t t1 = now_ns();
    CUmemoryPool pool;
    cuuint64_t v;
    for (int i = 0; i < QUERIES; i++) {
        CHECK(cuDeviceGetDefaultMemPool(&pool, dev));
        CHECK(cuDeviceGetMemPool(&pool, dev));
        CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
        CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
        CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
    }
    uint64_t t2 = now_ns();
    printf("sample queries: cuCtxGetDevice + cuMemGetInfo %.0f ns; default and current pool + 3 attributes %.0f ns\n",
           (double)(t1 - t0) / QUERIES, (double)(t2 - t1) / QUERIES);

    uint64_t t3 = now_ns();
    for (long i = 0; i < pairs; i++) {
        CHECK(cudaMalloc(&p, 1 << 20));
        CHECK(cudaFree(p));
    }
    uint64_t t4 = now_ns();
    for (long i = 0; i < pairs; i++) {
        CHECK(cudaMallocAsync(&p, 1 << 20, 0));
        CHECK(cudaFreeAsync(p, 0));
    }
    CHECK(cudaStreamSynchronize(0));
    uint64_t t5 = now_ns();
    printf("pairs of 1 MiB: cudaMalloc + cudaFree %.0f ns, cudaMallocAsync + cudaFreeAsync %.0f ns (%ld each)\n",
           (double)(t4 - t3) / (double)pairs, (double)(t5 - t4) / (double)pairs, pairs);
    return 0;
}
