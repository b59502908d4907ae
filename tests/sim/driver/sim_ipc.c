/* SPDX-License-Identifier: MIT */
/* CUDA IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle, and
 * cuMemGetAddressRange (which a profiler asks for an opened mapping's size).
 *
 * A handle names the exporting process and its allocation: "simipc1", the
 * exporter's pid, device, address and size. Opening it in another process
 * maps a range of the same size at an address of the importer's own (the
 * IPC arena), charging nothing: the memory is the exporter's. The mapping
 * does not alias the exporter's bytes (the simulator tracks bytes, not
 * page tables). Opening a handle in the process that exported it fails with
 * CUDA_ERROR_INVALID_CONTEXT, as NVIDIA's driver does (the runtime says
 * cudaErrorDeviceUninitialized); opening one handle twice returns the same
 * address and counts the opens, which cuIpcCloseMemHandle counts down. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_state.h"

#define SIM_IPC_MAGIC "simipc1"

struct sim_ipc_handle {
    char magic[8];
    uint32_t pid;
    int32_t device;
    uint64_t addr;
    uint64_t size;
    char unused[CU_IPC_HANDLE_SIZE - 32];
};
_Static_assert(sizeof(struct sim_ipc_handle) == CU_IPC_HANDLE_SIZE, "an IPC handle is 64 bytes");

/* What this process has open, found by the exporter's (pid, address). */
struct sim_ipc_open {
    uint32_t pid;
    uint64_t exporter_addr;
    uint64_t addr;
    uint64_t size;
    unsigned opens;
    bool pool_pointer; /* cuMemPoolImportPointer's: freed with cuMemFree(Async) */
};

#define SIM_IPC_MAX_OPEN 256
static struct sim_ipc_open opened[SIM_IPC_MAX_OPEN];
static struct sim_arena ipc_arena;
static bool ipc_arena_ready;

/* The allocation that holds dptr, at its start or inside it: CUDA's handle
 * of a pointer inside an allocation names the whole allocation (the
 * importer maps it all, at its own address of the allocation's start).
 * Called locked. */
static struct sim_object *allocation_holding(CUdeviceptr dptr)
{
    struct sim_object *object = sim_table_find(&sim.objects, dptr, SIM_OBJ_DEVICE_MEMORY);
    if (object)
        return object;
    size_t n = 0;
    uint64_t *keys = sim_table_collect_keys(&sim.objects, SIM_OBJ_DEVICE_MEMORY, -1, &n);
    for (size_t i = 0; i < n && !object; i++) {
        struct sim_object *o = sim_table_find(&sim.objects, keys[i], SIM_OBJ_DEVICE_MEMORY);
        if (o && dptr > o->key && dptr < o->key + o->size)
            object = o;
    }
    free(keys);
    return object;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    struct sim_object *object = result == CUDA_SUCCESS ? allocation_holding(dptr) : NULL;
    if (result == CUDA_SUCCESS && !object)
        result = CUDA_ERROR_INVALID_VALUE; /* in no cuMemAlloc allocation */
    if (result == CUDA_SUCCESS) {
        struct sim_ipc_handle h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, SIM_IPC_MAGIC, sizeof h.magic);
        h.pid = (uint32_t)getpid();
        h.device = object->device;
        h.addr = object->key;
        h.size = object->size;
        memcpy(pHandle, &h, sizeof h);
    }
    sim_unlock();
    return result;
}

static struct sim_ipc_open *find_open(uint32_t pid, uint64_t exporter_addr, uint64_t addr)
{
    for (size_t i = 0; i < SIM_IPC_MAX_OPEN; i++) {
        struct sim_ipc_open *o = &opened[i];
        if (o->opens && (addr ? o->addr == addr : o->pid == pid && o->exporter_addr == exporter_addr))
            return o;
    }
    return NULL;
}

static CUresult open_mapping(const struct sim_ipc_handle *h, CUdeviceptr *pdptr)
{
    struct sim_ipc_open *o = find_open(h->pid, h->addr, 0);
    if (o) {
        o->opens++;
        *pdptr = o->addr;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < SIM_IPC_MAX_OPEN && !o; i++)
        if (!opened[i].opens)
            o = &opened[i];
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!ipc_arena_ready) {
        if (!sim_arena_reserve(&ipc_arena, SIM_IPC_ARENA_BASE, SIM_IPC_ARENA_SIZE))
            return CUDA_ERROR_OUT_OF_MEMORY;
        ipc_arena_ready = true;
    }
    uint64_t addr;
    if (!sim_arena_alloc(&ipc_arena, h->size, SIM_ALLOC_GRANULE, &addr))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *o = (struct sim_ipc_open){.pid = h->pid, .exporter_addr = h->addr, .addr = addr, .size = h->size, .opens = 1};
    *pdptr = addr;
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_ipc_handle h;
    memcpy(&h, &handle, sizeof h);
    if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
        memcmp(h.magic, SIM_IPC_MAGIC, sizeof h.magic) != 0 || h.size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS && h.pid == (uint32_t)getpid())
        result = CUDA_ERROR_INVALID_CONTEXT; /* a process cannot open its own handle */
    if (result == CUDA_SUCCESS && !sim_device_at(h.device))
        result = CUDA_ERROR_INVALID_DEVICE;
    if (result == CUDA_SUCCESS)
        result = open_mapping(&h, pdptr);
    sim_unlock();
    return result;
}

/* The 4.1 ABI: the same function (its prototype did not change). */
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    struct sim_ipc_open *o = result == CUDA_SUCCESS && dptr ? find_open(0, 0, dptr) : NULL;
    if (result == CUDA_SUCCESS && !o)
        result = CUDA_ERROR_INVALID_VALUE;
    if (o && --o->opens == 0)
        sim_arena_free(&ipc_arena, o->addr, o->size);
    sim_unlock();
    return result;
}

/* Plain device memory (any address inside an allocation) and opened IPC
 * mappings; other memory is CUDA_ERROR_NOT_FOUND here, and so is a pool
 * pointer imported with cuMemPoolImportPointer: NVIDIA's driver 580 gives
 * no range for one either (measured on an H200, docs/report.md). */
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    uint64_t base = 0, size = 0;
    sim_lock();
    struct sim_ipc_open *o = NULL;
    for (size_t i = 0; i < SIM_IPC_MAX_OPEN && !o; i++)
        if (opened[i].opens && dptr >= opened[i].addr && dptr < opened[i].addr + opened[i].size)
            o = &opened[i];
    if (o && o->pool_pointer) {
        sim_unlock();
        return CUDA_ERROR_NOT_FOUND;
    }
    if (o) {
        base = o->addr;
        size = o->size;
    } else {
        size_t n = 0;
        uint64_t *keys = sim_table_collect_keys(&sim.objects, SIM_OBJ_DEVICE_MEMORY, -1, &n);
        for (size_t i = 0; i < n; i++) {
            struct sim_object *obj = sim_table_find(&sim.objects, keys[i], SIM_OBJ_DEVICE_MEMORY);
            if (obj && dptr >= obj->key && dptr < obj->key + obj->size) {
                base = obj->key;
                size = obj->size;
                break;
            }
        }
        free(keys);
    }
    sim_unlock();
    if (!size)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

bool sim_ipc_contains(uint64_t addr, uint64_t length)
{
    return ipc_arena_ready && sim_arena_contains(&ipc_arena, addr, length);
}

CUresult sim_ipc_map_pool_pointer(uint32_t pid, uint64_t exporter_addr, uint64_t size, CUdeviceptr *out)
{
    struct sim_ipc_handle h = {.pid = pid, .addr = exporter_addr, .size = size};
    CUresult r = open_mapping(&h, out);
    if (r == CUDA_SUCCESS)
        find_open(0, 0, *out)->pool_pointer = true;
    return r;
}

bool sim_ipc_free_pool_pointer(CUdeviceptr dptr)
{
    struct sim_ipc_open *o = dptr ? find_open(0, 0, dptr) : NULL;
    if (!o || !o->pool_pointer)
        return false;
    o->opens = 0; /* one free unmaps it, however often it was imported */
    sim_arena_free(&ipc_arena, o->addr, o->size);
    return true;
}
