/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_STATE_H
#define SIMCUDA_STATE_H

/* The simulated driver's process-wide state and the helpers every part of it
 * shares. One mutex guards all of it: the simulator favours obviously correct
 * over concurrent, and an uncontended lock costs tens of nanoseconds. */

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim_arena.h"
#include "sim_config.h"
#include "sim_table.h"

/* Address map (README.md explains it). Fixed so pointers are the same run to
 * run; the memory behind them is ordinary host memory, so copies and memsets
 * into "device" memory simply work. */
#define SIM_DEVICE_ARENA_BASE   0x500000000000ull
#define SIM_DEVICE_ARENA_STRIDE 0x010000000000ull /* 1 TiB per device */
/* Clear of AddressSanitizer's allocator (0x600000000000, 4 TiB) so that
 * sanitizer builds keep deterministic addresses. */
#define SIM_MANAGED_ARENA_BASE  0x680000000000ull
#define SIM_MANAGED_ARENA_SIZE  (64ull << 30)
#define SIM_HOST_ARENA_BASE     0x690000000000ull
#define SIM_HOST_ARENA_SIZE     (64ull << 30)
/* Mappings opened from another process's IPC handle (sim_ipc.c). */
#define SIM_IPC_ARENA_BASE      0x6a0000000000ull
#define SIM_IPC_ARENA_SIZE      (64ull << 30)
#define SIM_VMM_ARENA_BASE      0x700000000000ull
#define SIM_VMM_ARENA_SIZE      (1ull << 40)

#define SIM_DRIVER_VERSION 13000
#define SIM_ALLOC_GRANULE 512ull          /* size rounding and alignment of every allocation */
#define SIM_VMM_GRANULARITY (2ull << 20)  /* cuMemGetAllocationGranularity */

/* What device-resident memory is used for; cuMemGetInfo subtracts all of it. */
enum sim_usage {
    SIM_USE_PLAIN,  /* cuMemAlloc, cuMemAllocPitch */
    SIM_USE_ARRAY,  /* cuArrayCreate, cuArray3DCreate */
    SIM_USE_POOL,   /* segments reserved by stream-ordered pools */
    SIM_USE_VMM,    /* physical memory from cuMemCreate */
    SIM_USE_COUNT
};

/* A device's primary context, the only kind of context the simulator has. */
struct CUctx_st {
    int device;
    unsigned refcount;   /* retains minus releases */
    bool active;         /* created; reset or the last release destroys it */
    unsigned flags;      /* cuDevicePrimaryCtxSetFlags, remembered only */
};

struct sim_device {
    uint64_t capacity;
    uint64_t external_used;     /* "another process": a capacity reduction */
    uint64_t context_charge;    /* SIMCUDA_CONTEXT_BYTES while the primary context is active */
    uint64_t used[SIM_USE_COUNT];
    struct sim_arena memory;    /* plain allocations, arrays and pool segments */
    struct CUctx_st primary;
    struct CUmemPoolHandle_st *default_pool;
    struct CUmemPoolHandle_st *current_pool;
};

struct sim_state {
    pthread_mutex_t lock;
    struct sim_config config;
    int device_count;
    struct sim_device devices[SIM_MAX_DEVICES];
    struct sim_arena managed;   /* cuMemAllocManaged: host memory, not device capacity */
    struct sim_arena host;      /* cuMemAllocHost, cuMemHostAlloc */
    struct sim_table objects;
};

extern struct sim_state sim;

/* Reads the configuration and maps the arenas, once. Control functions use
 * it directly; API functions go through sim_check_initialized. */
CUresult sim_setup(void);

/* CUDA_ERROR_NOT_INITIALIZED until cuInit has succeeded. */
CUresult sim_check_initialized(void);
void sim_mark_initialized(void);

void sim_lock(void);
void sim_unlock(void);

static inline uint64_t sim_round_up(uint64_t value, uint64_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

/* NULL unless 0 <= ordinal < device count. */
struct sim_device *sim_device_at(int ordinal);

/* --- device memory budget (sim_device_memory.c); callers hold the lock --- */

/* Bytes of device memory in use by this process for any purpose. */
uint64_t sim_device_resident(const struct sim_device *device);
/* What cuMemGetInfo reports as free. */
uint64_t sim_device_free(const struct sim_device *device);
/* Takes `size` bytes (a multiple of SIM_ALLOC_GRANULE) for a contiguous use:
 * needs both the budget and a hole. CUDA_ERROR_OUT_OF_MEMORY otherwise. */
CUresult sim_device_take(struct sim_device *device, enum sim_usage usage, uint64_t size, uint64_t *addr);
void sim_device_give_back(struct sim_device *device, enum sim_usage usage, uint64_t addr, uint64_t size);
/* Charges bytes that need no address in the device range (VMM physical memory,
 * the context's own overhead). */
CUresult sim_device_charge(struct sim_device *device, enum sim_usage usage, uint64_t size);
void sim_device_uncharge(struct sim_device *device, enum sim_usage usage, uint64_t size);
/* True when [addr, addr + length) lies in memory a kernel could reach: a
 * device's range, the managed or pinned arenas, or mapped VMM space. */
bool sim_is_device_accessible(uint64_t addr, uint64_t length);
/* True when [addr, addr + length) lies in a mapping opened from an IPC
 * handle (sim_ipc.c). */
bool sim_ipc_contains(uint64_t addr, uint64_t length);
/* cuMemPoolImportPointer's mapping of another process's pool allocation
 * (sim_ipc.c), and its release by cuMemFree or cuMemFreeAsync (true when
 * dptr was one). Callers hold the lock. */
CUresult sim_ipc_map_pool_pointer(uint32_t pid, uint64_t exporter_addr, uint64_t size, CUdeviceptr *out);
bool sim_ipc_free_pool_pointer(CUdeviceptr dptr);

/* --- contexts (sim_context.c); callers hold the lock --- */

/* The device of the calling thread's current context, re-creating a retained
 * primary context that was reset. CUDA_ERROR_INVALID_CONTEXT when there is
 * none, CUDA_ERROR_CONTEXT_IS_DESTROYED when it was released for good. */
CUresult sim_current_device(int *device);
/* The device a stream's work runs on: the current context's for the NULL,
 * legacy and per-thread streams, the stream's own otherwise. */
CUresult sim_stream_device(CUstream stream, int *device);

/* Counts a call of a _ptsz entry point (simcuda_per_thread_stream_calls). */
void sim_count_per_thread_call(void);
unsigned long long sim_per_thread_calls(void);

/* --- object registry helpers --- */

/* Registers an object; CUDA_ERROR_OUT_OF_MEMORY when the table cannot grow. */
CUresult sim_register(enum sim_object_kind kind, uint64_t key, uint64_t size, void *data, int device);

#endif
