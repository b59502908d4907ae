/* SPDX-License-Identifier: MIT */
/* A device's memory budget: what cuMemGetInfo reports and what every
 * device-resident allocation is checked against. */
#include "sim_state.h"
#include "sim_vmm.h"

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
    if (size > sim_device_free(device) || !sim_arena_alloc(&device->memory, size, SIM_ALLOC_GRANULE, addr))
        return CUDA_ERROR_OUT_OF_MEMORY;
    device->used[usage] += size;
    return CUDA_SUCCESS;
}

void sim_device_give_back(struct sim_device *device, enum sim_usage usage, uint64_t addr, uint64_t size)
{
    sim_arena_free(&device->memory, addr, size);
    device->used[usage] -= size;
}

bool sim_is_device_accessible(uint64_t addr, uint64_t length)
{
    for (int d = 0; d < sim.device_count; d++)
        if (sim_arena_contains(&sim.devices[d].memory, addr, length))
            return true;
    if (sim_arena_contains(&sim.managed, addr, length) || sim_arena_contains(&sim.host, addr, length) ||
        sim_ipc_contains(addr, length))
        return true;
    return sim_vmm_is_mapped(addr, length);
}
