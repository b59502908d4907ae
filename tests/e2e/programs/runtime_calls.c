/* SPDX-License-Identifier: MIT */
/* One call of every runtime allocation API, each from its own function, on
 * device 1 of two (SIMCUDA_DEVICES=2): the device comes from the current
 * context whichever layer records it. Built four ways (tests/e2e/meson.build):
 * against the dynamic runtime, the same with CUDA_API_PER_THREAD_DEFAULT_STREAM
 * (cudaMallocAsync is then cudaMallocAsync_ptsz), and both against the static
 * archive libcudart_sim_static.a, where the runtime is inside the executable
 * and only the driver hooks can see the calls.
 *
 * Live at the peak on device 1 (everything below at once):
 *   device_buffer      8 MiB                       cudaMalloc / cuMemAlloc
 *   pitched            1024 x 100 = 102400 B       cudaMallocPitch / cuMemAllocPitch
 *   volume             2048 x 10 x 4 = 81920 B     cudaMalloc3D / cuMemAllocPitch
 *   stream_ordered     3 MiB                       cudaMallocAsync / cuMemAllocAsync
 *   from_pool          5 MiB                       cudaMallocFromPoolAsync / cuMemAllocFromPoolAsync
 *   array_2d           float4, 256 x 128 = 524288 B  cudaMallocArray / cuArrayCreate
 *   array_3d           uchar2, 64 x 32 x 8 = 32768 B cudaMalloc3DArray / cuArray3DCreate
 * managed_buffer 4 MiB (managed, device 1), pinned 2 MiB + 1 MiB (host).
 * Everything is freed except pinned_portable's 1 MiB. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)
#define CHECK(x)                                            \
    do {                                                    \
        cudaError_t r_ = (x);                               \
        if (r_ != cudaSuccess) {                            \
            fprintf(stderr, "%s failed: %d\n", #x, r_);     \
            exit(1);                                        \
        }                                                   \
    } while (0)

__attribute__((noinline)) static void *device_buffer(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 8 * MiB));
    return p;
}

__attribute__((noinline)) static void *managed_buffer(void)
{
    void *p;
    CHECK(cudaMallocManaged(&p, 4 * MiB, cudaMemAttachGlobal));
    return p;
}

__attribute__((noinline)) static void *pinned(void)
{
    void *p;
    CHECK(cudaMallocHost(&p, 2 * MiB));
    return p;
}

__attribute__((noinline)) static void *pinned_portable(void)
{
    void *p;
    CHECK(cudaHostAlloc(&p, 1 * MiB, cudaHostAllocPortable));
    return p;
}

__attribute__((noinline)) static void *pitched(void)
{
    void *p;
    size_t pitch;
    CHECK(cudaMallocPitch(&p, &pitch, 1000, 100));
    return p;
}

__attribute__((noinline)) static void *volume(void)
{
    struct cudaPitchedPtr pp;
    struct cudaExtent e = {2000, 10, 4};
    CHECK(cudaMalloc3D(&pp, e));
    return pp.ptr;
}

__attribute__((noinline)) static void *stream_ordered(cudaStream_t s)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 3 * MiB, s));
    return p;
}

__attribute__((noinline)) static void *from_pool(cudaMemPool_t pool, cudaStream_t s)
{
    void *p;
    CHECK(cudaMallocFromPoolAsync(&p, 5 * MiB, pool, s));
    return p;
}

__attribute__((noinline)) static cudaArray_t array_2d(void)
{
    cudaArray_t a;
    struct cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
    CHECK(cudaMallocArray(&a, &desc, 256, 128, 0));
    return a;
}

__attribute__((noinline)) static cudaArray_t array_3d(void)
{
    cudaArray_t a;
    struct cudaChannelFormatDesc desc = cudaCreateChannelDesc(8, 8, 0, 0, cudaChannelFormatKindUnsigned);
    struct cudaExtent e = {64, 32, 8};
    CHECK(cudaMalloc3DArray(&a, &desc, e, 0));
    return a;
}

int main(void)
{
    CHECK(cudaSetDevice(1));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 1));

    void *d = device_buffer();
    void *m = managed_buffer();
    void *h = pinned();
    void *hp = pinned_portable();
    void *p = pitched();
    void *v = volume();
    void *a = stream_ordered(s);
    void *b = from_pool(pool, s);
    cudaArray_t arr = array_2d();
    cudaArray_t arr3 = array_3d();

    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaFreeAsync(b, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFreeArray(arr));
    CHECK(cudaFreeArray(arr3));
    CHECK(cudaFree(d));
    CHECK(cudaFree(m));
    CHECK(cudaFree(p));
    CHECK(cudaFree(v));
    CHECK(cudaFreeHost(h));
    (void)hp; /* leaks on purpose */
    CHECK(cudaStreamDestroy(s));
    printf("done\n");
    return 0;
}
