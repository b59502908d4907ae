/* SPDX-License-Identifier: MIT */
#include "sim_state.h"

#include <stdio.h>
#include <sys/mman.h>

#include "sim_pool.h"

struct sim_state sim = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static CUresult setup_result = CUDA_ERROR_NOT_INITIALIZED;
static bool api_initialized; /* cuInit succeeded; read without the lock */

/* Reserves [base, base + size) of host address space, at `base` when it is
 * free so pointers are deterministic, anywhere otherwise (a sanitizer or
 * another mapping may already sit there). MAP_NORESERVE: untouched pages cost
 * nothing, so a 16 GiB device is cheap. */
static void *map_arena(uint64_t base, uint64_t size, int protection, bool *at_fixed)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void *p = mmap((void *)base, size, protection, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && (uint64_t)p == base) {
        *at_fixed = true;
        return p;
    }
    if (p != MAP_FAILED) /* old kernels treat the flag as a hint */
        munmap(p, size);
    *at_fixed = false;
    p = mmap(NULL, size, protection, flags, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "simcuda: cannot reserve %llu bytes of address space\n", (unsigned long long)size);
        return NULL;
    }
    fprintf(stderr, "simcuda: address 0x%llx is taken; using 0x%llx, pointers will not be deterministic\n",
            (unsigned long long)base, (unsigned long long)(uintptr_t)p);
    return p;
}

void *sim_map_arena(uint64_t base, uint64_t size, int protection)
{
    bool fixed;
    return map_arena(base, size, protection, &fixed);
}

static bool map_host_arena(struct sim_range *range, uint64_t base, uint64_t size)
{
    void *p = sim_map_arena(base, size, PROT_READ | PROT_WRITE);
    return p && sim_range_init(range, (uint64_t)(uintptr_t)p, size);
}

static CUresult setup_devices(void)
{
    if (!sim_config_read(&sim.config))
        return CUDA_ERROR_INVALID_VALUE;
    sim.device_count = sim.config.device_count;
    for (int d = 0; d < sim.device_count; d++) {
        struct sim_device *device = &sim.devices[d];
        device->capacity = sim.config.capacity[d];
        device->external_used = sim.config.external_used[d];
        device->primary.device = d;
        void *p = sim_map_arena(SIM_DEVICE_ARENA_BASE + (uint64_t)d * SIM_DEVICE_ARENA_STRIDE, device->capacity,
                                PROT_READ | PROT_WRITE);
        if (!p || !sim_range_init(&device->memory, (uint64_t)(uintptr_t)p, device->capacity))
            return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult result = sim_pool_create_default(d);
        if (result != CUDA_SUCCESS)
            return result;
    }
    if (!map_host_arena(&sim.managed, SIM_MANAGED_ARENA_BASE, SIM_MANAGED_ARENA_SIZE) ||
        !map_host_arena(&sim.host, SIM_HOST_ARENA_BASE, SIM_HOST_ARENA_SIZE))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

static void setup_once_body(void)
{
    sim_lock();
    setup_result = setup_devices();
    sim_unlock();
}

CUresult sim_setup(void)
{
    pthread_once(&setup_once, setup_once_body);
    return setup_result;
}

CUresult sim_check_initialized(void)
{
    return __atomic_load_n(&api_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

void sim_mark_initialized(void)
{
    __atomic_store_n(&api_initialized, true, __ATOMIC_RELEASE);
}

void sim_lock(void)
{
    pthread_mutex_lock(&sim.lock);
}

void sim_unlock(void)
{
    pthread_mutex_unlock(&sim.lock);
}

struct sim_device *sim_device_at(int ordinal)
{
    if (ordinal < 0 || ordinal >= sim.device_count)
        return NULL;
    return &sim.devices[ordinal];
}

CUresult sim_register(enum sim_object_kind kind, uint64_t key, uint64_t size, void *data, int device)
{
    struct sim_object object = {.key = key, .size = size, .data = data, .kind = (uint16_t)kind, .device = (int16_t)device};
    return sim_table_insert(&sim.objects, &object) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
