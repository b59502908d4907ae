/* SPDX-License-Identifier: MIT */
/* A device's memory budget: what cuMemGetInfo reports and what every
 * device-resident allocation is checked against. */
#include <sys/mman.h>

#include "sim_state.h"
#include "sim_vmm.h"

/* Freed blocks at least this large give their pages back to the OS, so a long
 * benchmark that touches big buffers does not grow without bound. */
#define RETURN_PAGES_FROM (4ull << 20)

uint64_t sim_device_resident(const struct sim_device *device)
{
    uint64_t total = 0;
    for (int u = 0; u < SIM_USE_COUNT; u++)
        total += device->used[u];
    return total;
}

/* Bytes this process may still place on the device: capacity less what other
 * processes hold (external use is modelled as a capacity reduction), less the
 * context's overhead, less everything this process already uses. */
uint64_t sim_device_free(const struct sim_device *device)
{
    uint64_t taken = sim_device_resident(device) + device->external_used + device->context_charge;
    return taken >= device->capacity ? 0 : device->capacity - taken;
}

CUresult sim_device_charge(struct sim_device *device, enum sim_usage usage, uint64_t size)
{
    if (size > sim_device_free(device))
        return CUDA_ERROR_OUT_OF_MEMORY;
    device->used[usage] += size;
    return CUDA_SUCCESS;
}

void sim_device_uncharge(struct sim_device *device, enum sim_usage usage, uint64_t size)
{
    device->used[usage] -= size;
}

CUresult sim_device_take(struct sim_device *device, enum sim_usage usage, uint64_t size, uint64_t *addr)
{
    /* Enough bytes in total is not enough: like a GPU, a request needs one
     * hole that holds it, so fragmentation fails allocations too. */
    if (size > sim_device_free(device) || !sim_range_alloc(&device->memory, size, SIM_ALLOC_GRANULE, addr))
        return CUDA_ERROR_OUT_OF_MEMORY;
    device->used[usage] += size;
    return CUDA_SUCCESS;
}

void sim_device_give_back(struct sim_device *device, enum sim_usage usage, uint64_t addr, uint64_t size)
{
    sim_range_free(&device->memory, addr, size);
    device->used[usage] -= size;
    if (size >= RETURN_PAGES_FROM)
        madvise((void *)(uintptr_t)addr, size, MADV_DONTNEED);
}

static bool within(uint64_t addr, uint64_t length, uint64_t base, uint64_t size)
{
    return addr >= base && addr - base <= size && size - (addr - base) >= length;
}

bool sim_is_device_accessible(uint64_t addr, uint64_t length)
{
    for (int d = 0; d < sim.device_count; d++)
        if (within(addr, length, sim.devices[d].memory.base, sim.devices[d].memory.size))
            return true;
    if (within(addr, length, sim.managed.base, sim.managed.size) || within(addr, length, sim.host.base, sim.host.size))
        return true;
    return sim_vmm_is_mapped(addr, length);
}
