/* SPDX-License-Identifier: MIT */
/* Stream-ordered allocation (cuMemAllocAsync and friends) and memory pools.
 *
 * A pool reserves device memory in segments of SIMCUDA_POOL_GRANULARITY
 * (2 MiB by default) and sub-allocates inside them. Frees return bytes to the
 * pool at once (every stream operation has completed by the time its call
 * returns); the segments themselves go back to the device only when a
 * synchronisation finds the pool above its release threshold, or on
 * cuMemPoolTrimTo. A failing plain cuMemAlloc does not trim pools, exactly as
 * on a real driver, so a pool with a high threshold can starve cuMemAlloc. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim_memory.h"
#include "sim_pool.h"
#include "sim_work.h"

struct sim_pool_segment {
    struct CUmemPoolHandle_st *pool;
    struct sim_range range; /* the segment's bytes; range.used is what is handed out */
};

struct CUmemPoolHandle_st {
    int device;
    bool is_default;
    bool destroyed;      /* cuMemPoolDestroy ran while allocations were outstanding */
    uint64_t max_size;   /* 0: bounded only by the device */
    uint64_t release_threshold;
    uint64_t reserved, reserved_high;
    uint64_t used, used_high;
    int reuse_follow_event_dependencies;
    int reuse_allow_opportunistic;
    int reuse_allow_internal_dependencies;
    unsigned handle_types;  /* CUmemPoolProps.handleTypes: how it may be shared */
    bool imported;          /* cuMemPoolImportFromShareableHandle: another process's pool */
    uint32_t exporter_pid;  /* of an imported pool */
    uint64_t exporter_pool; /* the pool's handle in the exporting process */
    struct sim_pool_segment **segments; /* in creation order */
    size_t segment_count;
    size_t segment_capacity;
    struct CUmemPoolHandle_st *next;
};

static struct CUmemPoolHandle_st *all_pools;

static struct CUmemPoolHandle_st *new_pool(int device, uint64_t max_size)
{
    struct CUmemPoolHandle_st *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->device = device;
    pool->max_size = max_size;
    /* The real driver's defaults. */
    pool->reuse_follow_event_dependencies = 1;
    pool->reuse_allow_opportunistic = 1;
    pool->reuse_allow_internal_dependencies = 1;
    if (sim_register(SIM_OBJ_POOL, (uint64_t)(uintptr_t)pool, 0, pool, device) != CUDA_SUCCESS) {
        free(pool);
        return NULL;
    }
    pool->next = all_pools;
    all_pools = pool;
    return pool;
}

static void unlink_and_free(struct CUmemPoolHandle_st *pool)
{
    for (struct CUmemPoolHandle_st **link = &all_pools; *link; link = &(*link)->next) {
        if (*link == pool) {
            *link = pool->next;
            break;
        }
    }
    free(pool->segments);
    free(pool);
}

CUresult sim_pool_create_default(int device)
{
    struct CUmemPoolHandle_st *pool = new_pool(device, 0);
    if (!pool)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool->is_default = true;
    sim.devices[device].default_pool = pool;
    sim.devices[device].current_pool = pool;
    return CUDA_SUCCESS;
}

/* Gives wholly free segments back, newest first, until at most `keep` bytes
 * stay reserved. */
static void release_free_segments(struct CUmemPoolHandle_st *pool, uint64_t keep)
{
    for (size_t i = pool->segment_count; i-- > 0 && pool->reserved > keep;) {
        struct sim_pool_segment *segment = pool->segments[i];
        if (segment->range.used != 0)
            continue;
        uint64_t size = segment->range.size;
        sim_device_give_back(&sim.devices[pool->device], SIM_USE_POOL, segment->range.base, size);
        sim_range_destroy(&segment->range);
        free(segment);
        memmove(&pool->segments[i], &pool->segments[i + 1], (pool->segment_count - i - 1) * sizeof *pool->segments);
        pool->segment_count--;
        pool->reserved -= size;
    }
}

void sim_pools_release_above_threshold(void)
{
    for (struct CUmemPoolHandle_st *pool = all_pools; pool; pool = pool->next)
        release_free_segments(pool, pool->release_threshold);
}

static struct sim_pool_segment *reserve_segment(struct CUmemPoolHandle_st *pool, uint64_t size, CUresult *result)
{
    uint64_t segment_size = sim_round_up(size, sim.config.pool_granularity);
    *result = CUDA_ERROR_OUT_OF_MEMORY;
    if (segment_size < size || (pool->max_size && pool->reserved + segment_size > pool->max_size))
        return NULL;
    if (pool->segment_count == pool->segment_capacity) {
        size_t capacity = pool->segment_capacity ? pool->segment_capacity * 2 : 8;
        struct sim_pool_segment **segments = realloc(pool->segments, capacity * sizeof *segments);
        if (!segments)
            return NULL;
        pool->segments = segments;
        pool->segment_capacity = capacity;
    }
    struct sim_pool_segment *segment = calloc(1, sizeof *segment);
    if (!segment)
        return NULL;
    uint64_t base;
    *result = sim_device_take(&sim.devices[pool->device], SIM_USE_POOL, segment_size, &base);
    if (*result != CUDA_SUCCESS) {
        free(segment);
        return NULL;
    }
    if (!sim_range_init(&segment->range, base, segment_size)) {
        sim_device_give_back(&sim.devices[pool->device], SIM_USE_POOL, base, segment_size);
        free(segment);
        *result = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    segment->pool = pool;
    pool->segments[pool->segment_count++] = segment;
    pool->reserved += segment_size;
    if (pool->reserved > pool->reserved_high)
        pool->reserved_high = pool->reserved;
    return segment;
}

static CUresult pool_allocate(struct CUmemPoolHandle_st *pool, size_t bytesize, CUdeviceptr *dptr)
{
    if (bytesize > UINT64_MAX - SIM_ALLOC_GRANULE)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t size = sim_round_up(bytesize, SIM_ALLOC_GRANULE);
    uint64_t addr = 0;
    struct sim_pool_segment *segment = NULL;
    for (size_t i = 0; i < pool->segment_count; i++) {
        struct sim_pool_segment *candidate = pool->segments[i];
        sim_work(1);
        if (candidate->range.size - candidate->range.used >= size &&
            sim_range_alloc(&candidate->range, size, SIM_ALLOC_GRANULE, &addr)) {
            segment = candidate;
            break;
        }
    }
    if (!segment) {
        CUresult result;
        segment = reserve_segment(pool, size, &result);
        if (!segment)
            return result;
        if (!sim_range_alloc(&segment->range, size, SIM_ALLOC_GRANULE, &addr))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (sim_register(SIM_OBJ_POOL_MEMORY, addr, size, segment, pool->device) != CUDA_SUCCESS) {
        sim_range_free(&segment->range, addr, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pool->used += size;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    *dptr = addr;
    return CUDA_SUCCESS;
}

void sim_pool_free(struct sim_object *object)
{
    struct sim_pool_segment *segment = object->data;
    struct CUmemPoolHandle_st *pool = segment->pool;
    sim_range_free(&segment->range, object->key, object->size);
    pool->used -= object->size;
    sim_table_remove(&sim.objects, object);
    if (pool->destroyed) {
        release_free_segments(pool, 0);
        if (pool->segment_count == 0)
            unlink_and_free(pool);
    }
}

static struct CUmemPoolHandle_st *find_pool(CUmemoryPool handle)
{
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)handle, SIM_OBJ_POOL);
    return object ? object->data : NULL;
}

/* --- stream-ordered allocation --- */

static CUresult allocate_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool handle, CUstream stream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_stream_device(stream, &device);
    if (result == CUDA_SUCCESS) {
        struct CUmemPoolHandle_st *pool = handle ? find_pool(handle) : sim.devices[device].current_pool;
        /* An imported pool hands out nothing: its memory is the exporter's. */
        result = pool && !pool->imported ? pool_allocate(pool, bytesize, dptr) : CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    return result;
}

static CUresult free_async(CUdeviceptr dptr, CUstream stream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_stream_device(stream, &device);
    if (result == CUDA_SUCCESS)
        result = sim_memory_free(dptr);
    sim_unlock();
    return result;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return allocate_async(dptr, bytesize, NULL, hStream);
}

/* The per-thread-default-stream twins are distinct entry points, as in the
 * real driver; the simulator has no stream ordering, so they behave alike. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    sim_count_per_thread_call();
    return allocate_async(dptr, bytesize, NULL, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    return pool ? allocate_async(dptr, bytesize, pool, hStream) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    sim_count_per_thread_call();
    return pool ? allocate_async(dptr, bytesize, pool, hStream) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    sim_count_per_thread_call();
    return free_async(dptr, hStream);
}

/* --- pools --- */

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool || !poolProps)
        return CUDA_ERROR_INVALID_VALUE;
    /* Managed and host-resident pools exist on real drivers; the simulator
     * pools device memory only and says so rather than pretending. */
    if (poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->location.type == CU_MEM_LOCATION_TYPE_HOST || poolProps->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
        poolProps->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    if (!sim_device_at(poolProps->location.id)) {
        result = CUDA_ERROR_INVALID_DEVICE;
    } else {
        struct CUmemPoolHandle_st *created = new_pool(poolProps->location.id, poolProps->maxSize);
        if (created) {
            created->handle_types = (unsigned)poolProps->handleTypes;
            *pool = created;
        }
        else
            result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_unlock();
    return result;
}

/* Outstanding allocations keep a destroyed pool's memory until they are
 * freed, as documented for the real driver. */
CUresult cuMemPoolDestroy(CUmemoryPool handle)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)handle, SIM_OBJ_POOL);
    struct CUmemPoolHandle_st *pool = object ? object->data : NULL;
    if (!pool || pool->is_default) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim_table_remove(&sim.objects, object);
        struct sim_device *device = &sim.devices[pool->device];
        if (device->current_pool == pool)
            device->current_pool = device->default_pool;
        pool->destroyed = true;
        release_free_segments(pool, 0);
        if (pool->segment_count == 0)
            unlink_and_free(pool);
    }
    sim_unlock();
    return result;
}

CUresult cuMemPoolTrimTo(CUmemoryPool handle, size_t minBytesToKeep)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct CUmemPoolHandle_st *pool = find_pool(handle);
    if (pool)
        release_free_segments(pool, minBytesToKeep);
    else
        result = CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

static CUresult get_attribute(struct CUmemPoolHandle_st *pool, CUmemPool_attribute attr, void *value)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        *(int *)value = pool->reuse_follow_event_dependencies;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        *(int *)value = pool->reuse_allow_opportunistic;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = pool->reuse_allow_internal_dependencies;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = pool->release_threshold;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        *(cuuint64_t *)value = pool->reserved;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        *(cuuint64_t *)value = pool->reserved_high;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = pool->used;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = pool->used_high;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult set_attribute(struct CUmemPoolHandle_st *pool, CUmemPool_attribute attr, const void *value)
{
    switch (attr) {
    /* Reuse policies only matter with real stream ordering: kept, not used. */
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        pool->reuse_follow_event_dependencies = *(const int *)value;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        pool->reuse_allow_opportunistic = *(const int *)value;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        pool->reuse_allow_internal_dependencies = *(const int *)value;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        pool->release_threshold = *(const cuuint64_t *)value;
        return CUDA_SUCCESS;
    /* High-water marks may only be reset, to the current value. */
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        if (*(const cuuint64_t *)value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        pool->reserved_high = pool->reserved;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(const cuuint64_t *)value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        pool->used_high = pool->used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemPoolGetAttribute(CUmemoryPool handle, CUmemPool_attribute attr, void *value)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct CUmemPoolHandle_st *pool = find_pool(handle);
    result = pool ? get_attribute(pool, attr, value) : CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool handle, CUmemPool_attribute attr, void *value)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct CUmemPoolHandle_st *pool = find_pool(handle);
    result = pool ? set_attribute(pool, attr, value) : CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (device)
        *pool_out = device->default_pool;
    else
        result = CUDA_ERROR_INVALID_DEVICE;
    sim_unlock();
    return result;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (device)
        *pool = device->current_pool;
    else
        result = CUDA_ERROR_INVALID_DEVICE;
    sim_unlock();
    return result;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool handle)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    struct CUmemPoolHandle_st *pool = find_pool(handle);
    if (!device)
        result = CUDA_ERROR_INVALID_DEVICE;
    else if (!pool || pool->device != dev)
        result = CUDA_ERROR_INVALID_VALUE;
    else
        device->current_pool = pool;
    sim_unlock();
    return result;
}

/* --- sharing a pool between processes -------------------------------------
 * cuMemPoolExportToShareableHandle writes a 64-byte descriptor naming the
 * exporting process and its pool ("simpool1", pid, device, pool): as the
 * bytes of a fabric handle, or in a memfd whose descriptor is the POSIX
 * handle (the importer reads it back, also when it came over a Unix socket
 * with SCM_RIGHTS). The pool must have been created with that handle type
 * (CUmemPoolProps.handleTypes), as on CUDA; the default pool has none.
 * cuMemPoolImportFromShareableHandle makes a pool of the importer's that
 * stands for the exporter's (nothing can be allocated from it).
 * cuMemPoolExportPointer writes "simpptr1", pid, device, pool, address and
 * size of one of the pool's allocations; cuMemPoolImportPointer maps that
 * many bytes in the importer's IPC region (sim_ipc.c), charging nothing;
 * cuMemFree or cuMemFreeAsync of the pointer there unmaps it. */

struct sim_pool_share {
    char magic[8];
    uint32_t pid;
    int32_t device;
    uint64_t pool;
    char unused[40];
};
_Static_assert(sizeof(struct sim_pool_share) == sizeof(CUmemFabricHandle), "a pool's descriptor fills a fabric handle");

struct sim_pool_ptr {
    char magic[8];
    uint32_t pid;
    int32_t device;
    uint64_t pool;
    uint64_t addr;
    uint64_t size;
    char unused[24];
};
_Static_assert(sizeof(struct sim_pool_ptr) == sizeof(CUmemPoolPtrExportData), "pointer export data is 64 bytes");

CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool handle, CUmemAllocationHandleType handleType,
                                          unsigned long long flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle_out || flags ||
        (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && handleType != CU_MEM_HANDLE_TYPE_FABRIC))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct CUmemPoolHandle_st *pool = find_pool(handle);
    if (!pool || pool->imported || !(pool->handle_types & (unsigned)handleType))
        result = CUDA_ERROR_INVALID_VALUE;
    struct sim_pool_share d;
    memset(&d, 0, sizeof d);
    if (result == CUDA_SUCCESS) {
        memcpy(d.magic, "simpool1", sizeof d.magic);
        d.pid = (uint32_t)getpid();
        d.device = pool->device;
        d.pool = (uint64_t)(uintptr_t)pool;
    }
    sim_unlock();
    if (result != CUDA_SUCCESS)
        return result;
    if (handleType == CU_MEM_HANDLE_TYPE_FABRIC) {
        memcpy(handle_out, &d, sizeof d);
        return CUDA_SUCCESS;
    }
    int fd = memfd_create("simcuda-pool", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (pwrite(fd, &d, sizeof d, 0) != (ssize_t)sizeof d) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(handle_out, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle, CUmemAllocationHandleType handleType,
                                            unsigned long long flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_pool_share d;
    if (!pool_out || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType == CU_MEM_HANDLE_TYPE_FABRIC) {
        if (!handle)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(&d, handle, sizeof d);
    } else if (handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        if (pread((int)(intptr_t)handle, &d, sizeof d, 0) != (ssize_t)sizeof d)
            return CUDA_ERROR_INVALID_VALUE;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (memcmp(d.magic, "simpool1", sizeof d.magic) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    if (!sim_device_at(d.device)) {
        result = CUDA_ERROR_INVALID_DEVICE;
    } else {
        struct CUmemPoolHandle_st *pool = new_pool(d.device, 0);
        if (pool) {
            pool->imported = true;
            pool->exporter_pid = d.pid;
            pool->exporter_pool = d.pool;
            *pool_out = pool;
        } else {
            result = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    sim_unlock();
    return result;
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!shareData_out)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, ptr, SIM_OBJ_POOL_MEMORY);
    struct CUmemPoolHandle_st *pool = object ? ((struct sim_pool_segment *)object->data)->pool : NULL;
    if (!pool || !pool->handle_types) {
        result = CUDA_ERROR_INVALID_VALUE; /* no allocation of a pool that may be shared */
    } else {
        struct sim_pool_ptr d;
        memset(&d, 0, sizeof d);
        memcpy(d.magic, "simpptr1", sizeof d.magic);
        d.pid = (uint32_t)getpid();
        d.device = pool->device;
        d.pool = (uint64_t)(uintptr_t)pool;
        d.addr = object->key;
        d.size = object->size;
        memcpy(shareData_out, &d, sizeof d);
    }
    sim_unlock();
    return result;
}

CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool handle, CUmemPoolPtrExportData *shareData)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ptr_out || !shareData)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_pool_ptr d;
    memcpy(&d, shareData, sizeof d);
    sim_lock();
    struct CUmemPoolHandle_st *pool = find_pool(handle);
    if (!pool || !pool->imported || memcmp(d.magic, "simpptr1", sizeof d.magic) != 0 ||
        d.pid != pool->exporter_pid || d.pool != pool->exporter_pool || !d.size)
        result = CUDA_ERROR_INVALID_VALUE; /* not data of the pool imported */
    else
        result = sim_ipc_map_pool_pointer(d.pid, d.addr, d.size, ptr_out);
    sim_unlock();
    return result;
}
