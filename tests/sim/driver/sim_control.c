/* SPDX-License-Identifier: MIT */
/* The simcuda_* test-control functions (simcuda.h). They set up the
 * simulator if nothing has yet, but do not count as cuInit. */
#include "sim_state.h"
#include "simcuda.h"

void simcuda_set_external_used(int device, size_t bytes)
{
    if (sim_setup() != CUDA_SUCCESS)
        return;
    sim_lock();
    struct sim_device *target = sim_device_at(device);
    if (target)
        target->external_used = bytes;
    sim_unlock();
}

size_t simcuda_device_used_bytes(int device)
{
    if (sim_setup() != CUDA_SUCCESS)
        return 0;
    sim_lock();
    struct sim_device *target = sim_device_at(device);
    size_t used = target ? sim_device_resident(target) : 0;
    sim_unlock();
    return used;
}

int simcuda_device_usage(int device, struct simcuda_usage *usage)
{
    if (sim_setup() != CUDA_SUCCESS || !usage)
        return -1;
    sim_lock();
    struct sim_device *target = sim_device_at(device);
    if (target) {
        *usage = (struct simcuda_usage){
            .capacity = target->capacity,
            .external = target->external_used,
            .context = target->context_charge,
            .plain = target->used[SIM_USE_PLAIN],
            .arrays = target->used[SIM_USE_ARRAY],
            .pool_reserved = target->used[SIM_USE_POOL],
            .vmm = target->used[SIM_USE_VMM],
            .free = sim_device_free(target),
            .largest_hole = sim_range_largest_hole(&target->memory.range),
        };
    }
    sim_unlock();
    return target ? 0 : -1;
}

unsigned long long sim_work_steps;

unsigned long long simcuda_work_steps(void)
{
    return __atomic_load_n(&sim_work_steps, __ATOMIC_RELAXED);
}

size_t simcuda_live_allocations(int device)
{
    static const enum sim_object_kind memory_kinds[] = {
        SIM_OBJ_DEVICE_MEMORY, SIM_OBJ_POOL_MEMORY, SIM_OBJ_MANAGED_MEMORY,
        SIM_OBJ_HOST_MEMORY,   SIM_OBJ_ARRAY,       SIM_OBJ_VMM_ALLOCATION,
    };
    if (sim_setup() != CUDA_SUCCESS)
        return 0;
    size_t live = 0;
    sim_lock();
    for (size_t i = 0; i < sim.objects.capacity; i++) {
        const struct sim_object *object = &sim.objects.slots[i];
        if (device >= 0 && object->device != device)
            continue;
        for (size_t k = 0; k < sizeof memory_kinds / sizeof memory_kinds[0]; k++)
            if (object->kind == memory_kinds[k])
                live++;
    }
    sim_unlock();
    return live;
}

int simcuda_addresses_are_fixed(void)
{
    if (sim_setup() != CUDA_SUCCESS)
        return 0;
    for (int d = 0; d < sim.device_count; d++)
        if (sim.devices[d].memory.range.base != SIM_DEVICE_ARENA_BASE + (uint64_t)d * SIM_DEVICE_ARENA_STRIDE)
            return 0;
    return sim.managed.range.base == SIM_MANAGED_ARENA_BASE && sim.host.range.base == SIM_HOST_ARENA_BASE;
}

unsigned long long simcuda_per_thread_stream_calls(void)
{
    return sim_per_thread_calls();
}
