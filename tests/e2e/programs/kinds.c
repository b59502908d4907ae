/* SPDX-License-Identifier: MIT */
/* Device, managed, pinned host, pitched and 3D memory, stream-ordered pool
 * allocations on streams and from a user pool: each kept in its own place. */
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

__attribute__((noinline)) static void *pinned_buffer(void)
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

__attribute__((noinline)) static void *pitched(size_t *pitch)
{
    void *p;
    /* 1000 bytes wide rounds up to a 1024-byte pitch: 1024 x 100 allocated. */
    CHECK(cudaMallocPitch(&p, pitch, 1000, 100));
    return p;
}

__attribute__((noinline)) static struct cudaPitchedPtr volume(void)
{
    struct cudaPitchedPtr pp;
    struct cudaExtent e = {2000, 10, 4};
    CHECK(cudaMalloc3D(&pp, e));
    return pp;
}

__attribute__((noinline)) static void async_work(cudaStream_t s, cudaMemPool_t pool)
{
    void *a, *b;
    CHECK(cudaMallocAsync(&a, 3 * MiB, s));
    CHECK(cudaMallocFromPoolAsync(&b, 5 * MiB, pool, s));
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaFreeAsync(b, s));
    CHECK(cudaStreamSynchronize(s));
}

int main(void)
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));

    void *d = device_buffer();
    void *m = managed_buffer();
    void *h = pinned_buffer();
    void *h2 = pinned_portable();
    size_t pitch = 0;
    void *p = pitched(&pitch);
    struct cudaPitchedPtr v = volume();
    async_work(s, pool);
    printf("pitch=%zu volume_pitch=%zu\n", pitch, v.pitch);

    CHECK(cudaFree(d));
    CHECK(cudaFree(m));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(p));
    CHECK(cudaFree(v.ptr));
    (void)h2; /* pinned_portable leaks on purpose */
    CHECK(cudaMemPoolDestroy(pool));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
