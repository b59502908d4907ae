/* SPDX-License-Identifier: MIT */
/* Stream-ordered pools: 2 MiB segments, release at synchronisation above the
 * threshold, trimming, user pools, and a pool's freed memory starving plain
 * cudaMalloc (run with SIMCUDA_CAPACITY=64MiB). */
#include <stdint.h>

#include "check.h"
#include "simcuda.h"

static uint64_t attribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr)
{
    cuuint64_t value = 0;
    CHECK_RT(cudaMemPoolGetAttribute(pool, attr, &value), cudaSuccess);
    return value;
}

static void set_attribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, uint64_t value)
{
    cuuint64_t v = value;
    CHECK_RT(cudaMemPoolSetAttribute(pool, attr, &v), cudaSuccess);
}

static void default_pool_segments(cudaMemPool_t pool)
{
    void *a, *b, *c;
    CHECK_RT(cudaMallocAsync(&a, 1 * MiB, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 2 * MiB);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemCurrent), 1 * MiB);
    CHECK_EQ(simcuda_device_used_bytes(0), 2 * MiB);
    size_t free_bytes, total;
    CHECK_RT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    CHECK_EQ(free_bytes, 62 * MiB);

    /* The second MiB fits the same segment, right after the first. */
    CHECK_RT(cudaMallocAsync(&b, 1 * MiB, 0), cudaSuccess);
    CHECK_EQ((uintptr_t)b, (uintptr_t)a + 1 * MiB);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 2 * MiB);
    /* The third needs a new segment. */
    CHECK_RT(cudaMallocAsync(&c, 1 * MiB, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 4 * MiB);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemCurrent), 3 * MiB);

    /* Frees return bytes to the pool at once, segments stay until a sync. */
    CHECK_RT(cudaFreeAsync(a, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(b, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(c, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemCurrent), 0);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 4 * MiB);
    CHECK_RT(cudaStreamSynchronize(0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);

    /* High-water marks, and resetting them to the current value. */
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemHigh), 4 * MiB);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemHigh), 3 * MiB);
    set_attribute(pool, cudaMemPoolAttrReservedMemHigh, 0);
    set_attribute(pool, cudaMemPoolAttrUsedMemHigh, 0);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemHigh), 0);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemHigh), 0);
    cuuint64_t nonzero = 5;
    CHECK_RT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &nonzero), cudaErrorInvalidValue);
    CHECK_RT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &nonzero), cudaErrorInvalidValue);
    int reuse = 0;
    CHECK_RT(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &reuse), cudaSuccess);
    CHECK_EQ(reuse, 1);
    CHECK_RT(cudaGetLastError(), cudaErrorInvalidValue);
}

/* Memory a pool keeps above nothing but its threshold is not available to
 * cudaMalloc, and a failing cudaMalloc does not trim pools. */
static void pool_starves_plain_allocations(cudaMemPool_t pool)
{
    set_attribute(pool, cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
    void *held;
    CHECK_RT(cudaMallocAsync(&held, 40 * MiB, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(held, 0), cudaSuccess);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 40 * MiB);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemCurrent), 0);

    void *plain;
    CHECK_RT(cudaMalloc(&plain, 32 * MiB), cudaErrorMemoryAllocation);
    CHECK_RT(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 40 * MiB);

    /* The pool reuses its own free memory without growing. */
    CHECK_RT(cudaMallocAsync(&held, 30 * MiB, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 40 * MiB);
    CHECK_RT(cudaFreeAsync(held, 0), cudaSuccess);

    CHECK_RT(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    CHECK_RT(cudaMalloc(&plain, 32 * MiB), cudaSuccess);
    CHECK_RT(cudaFree(plain), cudaSuccess);
    set_attribute(pool, cudaMemPoolAttrReleaseThreshold, 0);
}

/* Trimming keeps at least minBytesToKeep, releasing newest segments first,
 * and a threshold between segments keeps what it covers. */
static void trim_and_threshold(cudaMemPool_t pool)
{
    void *p[3];
    for (int i = 0; i < 3; i++)
        CHECK_RT(cudaMallocAsync(&p[i], 2 * MiB, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 6 * MiB);
    for (int i = 0; i < 3; i++)
        CHECK_RT(cudaFreeAsync(p[i], 0), cudaSuccess);
    CHECK_RT(cudaMemPoolTrimTo(pool, 3 * MiB), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 2 * MiB);

    set_attribute(pool, cudaMemPoolAttrReleaseThreshold, 4 * MiB);
    for (int i = 0; i < 3; i++)
        CHECK_RT(cudaMallocAsync(&p[i], 2 * MiB, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(p[0], 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(p[1], 0), cudaSuccess);
    /* 6 MiB reserved, 2 in use: a sync releases free segments down to 4. */
    cudaEvent_t event;
    CHECK_RT(cudaEventCreate(&event), cudaSuccess);
    CHECK_RT(cudaEventRecord(event, 0), cudaSuccess);
    CHECK_RT(cudaEventSynchronize(event), cudaSuccess);
    CHECK_RT(cudaEventDestroy(event), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 4 * MiB);
    CHECK_RT(cudaFreeAsync(p[2], 0), cudaSuccess);
    set_attribute(pool, cudaMemPoolAttrReleaseThreshold, 0);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 0);
}

static void user_pool(cudaMemPool_t default_pool)
{
    struct cudaMemPoolProps props = {
        .allocType = cudaMemAllocationTypePinned,
        .location = {.type = cudaMemLocationTypeDevice, .id = 0},
    };
    cudaMemPool_t pool;
    /* Only device-memory pools are simulated. */
    struct cudaMemPoolProps host_props = props;
    host_props.location.type = cudaMemLocationTypeHost;
    CHECK_RT(cudaMemPoolCreate(&pool, &host_props), cudaErrorNotSupported);
    CHECK_RT(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    CHECK(pool != default_pool);
    cudaStream_t stream;
    CHECK_RT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    void *p, *q;
    CHECK_RT(cudaMallocFromPoolAsync(&p, 3 * MiB, pool, stream), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReservedMemCurrent), 4 * MiB);
    CHECK_EQ(attribute(default_pool, cudaMemPoolAttrReservedMemCurrent), 0);

    /* The device's current pool serves cudaMallocAsync. */
    CHECK_RT(cudaDeviceSetMemPool(0, pool), cudaSuccess);
    cudaMemPool_t current;
    CHECK_RT(cudaDeviceGetMemPool(&current, 0), cudaSuccess);
    CHECK(current == pool);
    CHECK_RT(cudaMallocAsync(&q, 512 * 1024, stream), cudaSuccess);
    CHECK_EQ((uintptr_t)q, (uintptr_t)p + 3 * MiB);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrUsedMemCurrent), 3 * MiB + 512 * 1024);
    CHECK_RT(cudaFreeAsync(q, stream), cudaSuccess);

    /* A pool with a maximum size refuses to grow beyond it. */
    struct cudaMemPoolProps small_props = props;
    small_props.maxSize = 4 * MiB;
    cudaMemPool_t small;
    CHECK_RT(cudaMemPoolCreate(&small, &small_props), cudaSuccess);
    void *s1, *s2;
    CHECK_RT(cudaMallocFromPoolAsync(&s1, 3 * MiB, small, stream), cudaSuccess);
    CHECK_RT(cudaMallocFromPoolAsync(&s2, 2 * MiB, small, stream), cudaErrorMemoryAllocation);
    CHECK_RT(cudaFreeAsync(s1, stream), cudaSuccess);
    CHECK_RT(cudaMemPoolDestroy(small), cudaSuccess);

    /* Destroying a pool with an outstanding allocation defers the release. */
    CHECK_RT(cudaMemPoolDestroy(pool), cudaSuccess);
    CHECK_RT(cudaDeviceGetMemPool(&current, 0), cudaSuccess);
    CHECK(current == default_pool);
    CHECK_EQ(simcuda_device_used_bytes(0), 4 * MiB);
    cuuint64_t value;
    CHECK_RT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &value), cudaErrorInvalidValue);
    CHECK_RT(cudaFreeAsync(p, stream), cudaSuccess);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    CHECK_RT(cudaMemPoolDestroy(default_pool), cudaErrorInvalidValue);
    CHECK_RT(cudaStreamSynchronize(stream), cudaSuccess);
    CHECK_RT(cudaStreamDestroy(stream), cudaSuccess);
    CHECK_RT(cudaGetLastError(), cudaErrorInvalidValue);
}

int main(void)
{
    cudaMemPool_t pool;
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    CHECK_EQ(attribute(pool, cudaMemPoolAttrReleaseThreshold), 0);
    void *nothing = (void *)1;
    CHECK_RT(cudaMallocAsync(&nothing, 0, 0), cudaSuccess);
    CHECK(nothing == NULL);

    default_pool_segments(pool);
    pool_starves_plain_allocations(pool);
    trim_and_threshold(pool);
    user_pool(pool);

    /* cudaFree also accepts stream-ordered allocations. */
    void *p;
    CHECK_RT(cudaMallocAsync(&p, 1000, 0), cudaSuccess);
    CHECK_RT(cudaFree(p), cudaSuccess);
    CHECK_RT(cudaFreeAsync(p, 0), cudaErrorInvalidValue);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    return 0;
}
