/* SPDX-License-Identifier: MIT */
/* Plain device allocations, managed memory and pinned host memory. */
#include "sim_memory.h"
#include "sim_pool.h"
#include "sim_release.h"

/* The sizes the real driver rejects up front, before looking for memory. */
static bool too_large(size_t bytesize)
{
    return bytesize > UINT64_MAX - SIM_ALLOC_GRANULE;
}

/* Plain device memory on the current context's device. Caller holds the lock. */
static CUresult allocate_plain(size_t bytesize, CUdeviceptr *dptr)
{
    int device;
    CUresult result = sim_current_device(&device);
    if (result != CUDA_SUCCESS)
        return result;
    if (too_large(bytesize))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t size = sim_round_up(bytesize, SIM_ALLOC_GRANULE);
    uint64_t addr;
    struct sim_device *owner = &sim.devices[device];
    result = sim_device_take(owner, SIM_USE_PLAIN, size, &addr);
    if (result != CUDA_SUCCESS)
        return result;
    result = sim_register(SIM_OBJ_DEVICE_MEMORY, addr, size, NULL, device);
    if (result != CUDA_SUCCESS) {
        sim_device_give_back(owner, SIM_USE_PLAIN, addr, size);
        return result;
    }
    *dptr = addr;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    /* Zero bytes is an error for the driver (cudaMalloc turns it into NULL). */
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    result = allocate_plain(bytesize, dptr);
    sim_unlock();
    return result;
}

/* Rows are padded to 512 bytes, the texture pitch alignment the simulated
 * device reports. */
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (too_large(WidthInBytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t pitch = sim_round_up(WidthInBytes, SIM_ALLOC_GRANULE);
    if (Height > UINT64_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    result = allocate_plain(pitch * Height, dptr);
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *pPitch = pitch;
    return result;
}

CUresult sim_memory_free(CUdeviceptr dptr)
{
    struct sim_object *object = sim_table_find(&sim.objects, dptr, SIM_OBJ_DEVICE_MEMORY);
    if (!object)
        object = sim_table_find(&sim.objects, dptr, SIM_OBJ_MANAGED_MEMORY);
    if (object) {
        sim_memory_release(object);
        return CUDA_SUCCESS;
    }
    object = sim_table_find(&sim.objects, dptr, SIM_OBJ_POOL_MEMORY);
    if (object) {
        sim_pool_free(object);
        return CUDA_SUCCESS;
    }
    if (sim_ipc_free_pool_pointer(dptr))
        return CUDA_SUCCESS;
    return CUDA_ERROR_INVALID_VALUE;
}

void sim_memory_release(struct sim_object *object)
{
    switch (object->kind) {
    case SIM_OBJ_DEVICE_MEMORY:
        sim_device_give_back(&sim.devices[object->device], SIM_USE_PLAIN, object->key, object->size);
        break;
    case SIM_OBJ_MANAGED_MEMORY:
        sim_arena_free(&sim.managed, object->key, object->size);
        break;
    case SIM_OBJ_HOST_MEMORY:
        sim_arena_free(&sim.host, object->key, object->size);
        break;
    default:
        return;
    }
    sim_table_remove(&sim.objects, object);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS)
        result = sim_memory_free(dptr);
    sim_unlock();
    return result;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS) {
        *free = sim_device_free(&sim.devices[device]);
        *total = sim.devices[device].capacity;
    }
    sim_unlock();
    return result;
}

/* Managed and pinned memory live in host arenas of their own: they do not
 * count against device capacity, but the current context owns them. */
static CUresult allocate_host_side(struct sim_arena *arena, enum sim_object_kind kind, size_t bytesize, uint64_t *addr)
{
    int device;
    CUresult result = sim_current_device(&device);
    if (result != CUDA_SUCCESS)
        return result;
    if (too_large(bytesize))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t size = sim_round_up(bytesize, SIM_ALLOC_GRANULE);
    if (!sim_arena_alloc(arena, size, SIM_ALLOC_GRANULE, addr))
        return CUDA_ERROR_OUT_OF_MEMORY;
    result = sim_register(kind, *addr, size, NULL, device);
    if (result != CUDA_SUCCESS)
        sim_arena_free(arena, *addr, size);
    return result;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t addr;
    sim_lock();
    result = allocate_host_side(&sim.managed, SIM_OBJ_MANAGED_MEMORY, bytesize, &addr);
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *dptr = addr;
    return result;
}

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp || bytesize == 0 || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t addr;
    sim_lock();
    result = allocate_host_side(&sim.host, SIM_OBJ_HOST_MEMORY, bytesize, &addr);
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *pp = (void *)(uintptr_t)addr;
    return result;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc(pp, bytesize, Flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS) {
        struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)p, SIM_OBJ_HOST_MEMORY);
        if (object)
            sim_memory_release(object);
        else
            result = CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    return result;
}
