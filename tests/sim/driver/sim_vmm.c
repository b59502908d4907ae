/* SPDX-License-Identifier: MIT */
/* Virtual memory management: cuMemCreate's physical allocations, address
 * reservations and the mappings between them.
 *
 * Physical memory counts against device capacity but has no address in the
 * device range (physical pages need not be contiguous, so fragmentation of
 * that range does not affect it). Reservations come from their own address
 * region, kept PROT_NONE; cuMemMap makes a span readable and writable and
 * cuMemUnmap discards its contents again. Two mappings of one allocation do
 * not alias: the simulator tracks bytes, not page tables. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim_state.h"
#include "sim_vmm.h"

/* Handle values are non-canonical addresses so they can never collide with a
 * registry key that is a pointer; the sequence keeps them deterministic. */
#define HANDLE_BASE 0xc0de000000000000ull

struct sim_vmm_allocation {
    int device;          /* -1: host-located (pinned system memory) */
    uint64_t size;
    unsigned mapping_count;
    bool released;       /* cuMemRelease ran while mappings remained */
    bool imported;       /* cuMemImportFromShareableHandle: another process's memory, charged nothing here */
    unsigned handle_types; /* CUmemAllocationProp.requestedHandleTypes: what it may be exported as */
};

struct reservation {
    uint64_t base;
    uint64_t size;
};

struct mapping {
    uint64_t va;
    uint64_t size;
    struct sim_vmm_allocation *allocation;
};

static struct sim_range address_space;
static bool address_space_ready;
static uint64_t handles_issued;
static struct reservation *reservations;
static size_t reservation_count, reservation_capacity;
static struct mapping *mappings;
static size_t mapping_count, mapping_capacity;

/* Grows *array so one more element fits. */
static bool make_room(void **array, size_t count, size_t *capacity, size_t element_size)
{
    if (count < *capacity)
        return true;
    size_t grown = *capacity ? *capacity * 2 : 16;
    void *bigger = realloc(*array, grown * element_size);
    if (!bigger)
        return false;
    *array = bigger;
    *capacity = grown;
    return true;
}

static bool is_granular(uint64_t value)
{
    return value % SIM_VMM_GRANULARITY == 0;
}

static bool is_host_location(CUmemLocationType type)
{
    return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/* The allocation properties the simulator can honour: pinned memory on a
 * device, or pinned host memory (CUDA 12.2's host-located allocations; the
 * NUMA node is not modelled). Host memory takes no device capacity. */
static CUresult check_properties(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (is_host_location(prop->location.type))
        return prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop->location.id < 0 ? CUDA_ERROR_INVALID_VALUE
                                                                                               : CUDA_SUCCESS;
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_device_at(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    result = check_properties(prop);
    if (result == CUDA_SUCCESS)
        *granularity = SIM_VMM_GRANULARITY;
    return result;
}

static void free_physical(struct sim_vmm_allocation *allocation)
{
    if (allocation->device >= 0 && !allocation->imported)
        sim_device_uncharge(&sim.devices[allocation->device], SIM_USE_VMM, allocation->size);
    free(allocation);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle || size == 0 || !is_granular(size) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    result = check_properties(prop);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_vmm_allocation *allocation = calloc(1, sizeof *allocation);
    if (!allocation)
        return CUDA_ERROR_OUT_OF_MEMORY;
    allocation->device = is_host_location(prop->location.type) ? -1 : prop->location.id;
    allocation->size = size;
    allocation->handle_types = (unsigned)prop->requestedHandleTypes;
    sim_lock();
    struct sim_device *device = allocation->device >= 0 ? &sim.devices[allocation->device] : NULL;
    result = device ? sim_device_charge(device, SIM_USE_VMM, size) : CUDA_SUCCESS;
    uint64_t value = HANDLE_BASE + handles_issued + 1;
    if (result == CUDA_SUCCESS) {
        result = sim_register(SIM_OBJ_VMM_ALLOCATION, value, size, allocation, allocation->device);
        if (result != CUDA_SUCCESS && device)
            sim_device_uncharge(device, SIM_USE_VMM, size);
    }
    if (result == CUDA_SUCCESS) {
        handles_issued++;
        *handle = value;
    } else {
        free(allocation);
    }
    sim_unlock();
    return result;
}

/* The handle dies now; the physical memory once its last mapping goes, as on
 * a real driver. */
CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, handle, SIM_OBJ_VMM_ALLOCATION);
    if (!object) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        struct sim_vmm_allocation *allocation = object->data;
        sim_table_remove(&sim.objects, object);
        if (allocation->mapping_count == 0)
            free_physical(allocation);
        else
            allocation->released = true;
    }
    sim_unlock();
    return result;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ptr || size == 0 || !is_granular(size) || flags != 0 || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < SIM_VMM_GRANULARITY)
        alignment = SIM_VMM_GRANULARITY;
    sim_lock();
    if (!address_space_ready) {
        void *region = sim_reserve_address_space(SIM_VMM_ARENA_BASE, SIM_VMM_ARENA_SIZE);
        address_space_ready = region && sim_range_init(&address_space, (uint64_t)(uintptr_t)region, SIM_VMM_ARENA_SIZE);
    }
    uint64_t base = 0;
    bool placed = false;
    if (!address_space_ready || !make_room((void **)&reservations, reservation_count, &reservation_capacity, sizeof *reservations)) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        /* The address is a hint: honoured when free, ignored otherwise. */
        if (addr && addr % alignment == 0 && sim_range_alloc_at(&address_space, addr, size)) {
            base = addr;
            placed = true;
        } else {
            placed = sim_range_alloc(&address_space, size, alignment, &base);
        }
        if (placed) {
            reservations[reservation_count++] = (struct reservation){base, size};
            *ptr = base;
        } else {
            result = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    sim_unlock();
    return result;
}

static bool overlaps(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size)
{
    return a < b + b_size && b < a + a_size;
}

/* Refuses to free a range that is still mapped: the real driver leaves that
 * undefined, and a test double should make the mistake visible. */
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    size_t index = reservation_count;
    for (size_t i = 0; i < reservation_count; i++)
        if (reservations[i].base == ptr && reservations[i].size == size)
            index = i;
    for (size_t i = 0; index < reservation_count && i < mapping_count; i++)
        if (overlaps(mappings[i].va, mappings[i].size, ptr, size))
            index = reservation_count;
    if (index == reservation_count) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim_range_free(&address_space, ptr, size);
        reservations[index] = reservations[--reservation_count];
    }
    sim_unlock();
    return result;
}

static bool inside_one_reservation(uint64_t va, uint64_t size)
{
    for (size_t i = 0; i < reservation_count; i++)
        if (va >= reservations[i].base && va - reservations[i].base <= reservations[i].size &&
            reservations[i].size - (va - reservations[i].base) >= size)
            return true;
    return false;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || flags != 0 || !is_granular(ptr) || !is_granular(size) || !is_granular(offset))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, handle, SIM_OBJ_VMM_ALLOCATION);
    struct sim_vmm_allocation *allocation = object ? object->data : NULL;
    bool free_span = inside_one_reservation(ptr, size);
    for (size_t i = 0; free_span && i < mapping_count; i++)
        if (overlaps(mappings[i].va, mappings[i].size, ptr, size))
            free_span = false;
    if (!allocation || offset > allocation->size || allocation->size - offset < size || !free_span) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else if (!make_room((void **)&mappings, mapping_count, &mapping_capacity, sizeof *mappings) ||
               mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) != 0) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        mappings[mapping_count++] = (struct mapping){ptr, size, allocation};
        allocation->mapping_count++;
    }
    sim_unlock();
    return result;
}

/* Unmaps every mapping inside [ptr, ptr + size); a mapping only partly inside
 * makes the call fail without changing anything. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    size_t inside = 0;
    for (size_t i = 0; i < mapping_count; i++) {
        if (!overlaps(mappings[i].va, mappings[i].size, ptr, size))
            continue;
        if (mappings[i].va < ptr || mappings[i].va + mappings[i].size > ptr + size)
            inside = SIZE_MAX;
        else if (inside != SIZE_MAX)
            inside++;
    }
    if (inside == 0 || inside == SIZE_MAX) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t i = 0; i < mapping_count;) {
            struct mapping m = mappings[i];
            if (!overlaps(m.va, m.size, ptr, size)) {
                i++;
                continue;
            }
            madvise((void *)(uintptr_t)m.va, m.size, MADV_DONTNEED);
            mprotect((void *)(uintptr_t)m.va, m.size, PROT_NONE);
            mappings[i] = mappings[--mapping_count];
            if (--m.allocation->mapping_count == 0 && m.allocation->released)
                free_physical(m.allocation);
        }
    }
    sim_unlock();
    return result;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        if (!sim_device_at(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
    }
    sim_lock();
    if (!sim_vmm_is_mapped(ptr, size))
        result = CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

bool sim_vmm_is_mapped(uint64_t addr, uint64_t length)
{
    if (length == 0)
        return false;
    uint64_t end = addr + length;
    while (addr < end) {
        size_t i = 0;
        while (i < mapping_count && !(mappings[i].va <= addr && addr < mappings[i].va + mappings[i].size))
            i++;
        if (i == mapping_count)
            return false;
        addr = mappings[i].va + mappings[i].size;
    }
    return true;
}

/* --- shareable handles: cuMemExportToShareableHandle, cuMemImportFromShareableHandle
 * A fabric handle holds "simfab1", the exporter's pid, its handle value,
 * device and size; a POSIX file descriptor is a memfd holding the same
 * bytes, which another process receives as it would a real one (SCM_RIGHTS,
 * pidfd_getfd) or inherits. Importing makes a handle of this process's own
 * for the exporter's memory, charging nothing: it is mapped with cuMemMap
 * and released with cuMemRelease like any other. Only handle types asked
 * for in the allocation's requestedHandleTypes can be exported, as on a real
 * driver (CUDA_ERROR_INVALID_VALUE otherwise). */

#define SIM_FABRIC_MAGIC "simfab1"

struct sim_shareable {
    char magic[8];
    uint32_t pid;
    int32_t device;
    uint64_t handle;
    uint64_t size;
    char unused[sizeof(CUmemFabricHandle) - 32];
};
_Static_assert(sizeof(struct sim_shareable) == sizeof(CUmemFabricHandle), "a fabric handle is 64 bytes");

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!shareableHandle || flags != 0 ||
        (handleType != CU_MEM_HANDLE_TYPE_FABRIC && handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, handle, SIM_OBJ_VMM_ALLOCATION);
    struct sim_vmm_allocation *allocation = object ? object->data : NULL;
    struct sim_shareable sh;
    memset(&sh, 0, sizeof sh);
    if (!allocation || allocation->imported || !(allocation->handle_types & (unsigned)handleType)) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        memcpy(sh.magic, SIM_FABRIC_MAGIC, sizeof sh.magic);
        sh.pid = (uint32_t)getpid();
        sh.device = allocation->device;
        sh.handle = handle;
        sh.size = allocation->size;
    }
    sim_unlock();
    if (result != CUDA_SUCCESS)
        return result;
    if (handleType == CU_MEM_HANDLE_TYPE_FABRIC) {
        memcpy(shareableHandle, &sh, sizeof sh);
        return CUDA_SUCCESS;
    }
    int fd = memfd_create("simcuda-shareable", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (pwrite(fd, &sh, sizeof sh, 0) != (ssize_t)sizeof sh) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(shareableHandle, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_shareable sh;
    if (!handle || !osHandle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType == CU_MEM_HANDLE_TYPE_FABRIC) {
        memcpy(&sh, osHandle, sizeof sh);
    } else if (shHandleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        int fd = (int)(intptr_t)osHandle;
        if (pread(fd, &sh, sizeof sh, 0) != (ssize_t)sizeof sh)
            return CUDA_ERROR_INVALID_VALUE;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (memcmp(sh.magic, SIM_FABRIC_MAGIC, sizeof sh.magic) != 0 || sh.size == 0 || !is_granular(sh.size))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_vmm_allocation *allocation = calloc(1, sizeof *allocation);
    if (!allocation)
        return CUDA_ERROR_OUT_OF_MEMORY;
    allocation->device = sh.device;
    allocation->size = sh.size;
    allocation->imported = true;
    sim_lock();
    uint64_t value = HANDLE_BASE + handles_issued + 1;
    result = sim_register(SIM_OBJ_VMM_ALLOCATION, value, sh.size, allocation, allocation->device);
    if (result == CUDA_SUCCESS) {
        handles_issued++;
        *handle = value;
    } else {
        free(allocation);
    }
    sim_unlock();
    return result;
}
