/* SPDX-License-Identifier: MIT */
#include "sim_state.h"

#include "sim_pool.h"

struct sim_state sim = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static CUresult setup_result = CUDA_ERROR_NOT_INITIALIZED;
static bool api_initialized; /* cuInit succeeded; read without the lock */
static unsigned long long per_thread_calls;

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
        if (!sim_arena_reserve(&device->memory, SIM_DEVICE_ARENA_BASE + (uint64_t)d * SIM_DEVICE_ARENA_STRIDE, device->capacity))
            return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult result = sim_pool_create_default(d);
        if (result != CUDA_SUCCESS)
            return result;
    }
    if (!sim_arena_reserve(&sim.managed, SIM_MANAGED_ARENA_BASE, SIM_MANAGED_ARENA_SIZE) ||
        !sim_arena_reserve(&sim.host, SIM_HOST_ARENA_BASE, SIM_HOST_ARENA_SIZE))
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

/* fork: the device state is held across fork so a child of a multithreaded
 * program never inherits the lock mid-update; the child keeps a copy of the
 * device (real CUDA does not survive fork at all, but a test double that
 * deadlocks would hide what the tests want to see: the profiler's behaviour). */
static void fork_prepare(void)
{
    pthread_mutex_lock(&sim.lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&sim.lock);
}

__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
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

void sim_count_per_thread_call(void)
{
    __atomic_add_fetch(&per_thread_calls, 1, __ATOMIC_RELAXED);
}

unsigned long long sim_per_thread_calls(void)
{
    return __atomic_load_n(&per_thread_calls, __ATOMIC_RELAXED);
}
