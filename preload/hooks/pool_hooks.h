/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_POOL_HOOKS_H
#define CUMEMTRACE_PRELOAD_POOL_HOOKS_H

/* What the pool lifecycle hooks record, shared by the runtime's
 * (cudaMemPoolCreate/Destroy/TrimTo) and the driver's (cuMemPool*). The
 * runtime's pool structures mirror the driver's value for value, so both
 * pass the same figures. */

#include "call_hooks.h"
#include "hook_record.h"
#include "pool_registry.h"
#include "sampler.h"

/* CU_MEM_LOCATION_TYPE_DEVICE and cudaMemLocationTypeDevice. */
#define CMT_POOL_LOCATION_DEVICE 1

/* The device a pool lives on: as created, or (a pool made before tracing,
 * or a device's default pool) the calling thread's current device. */
static inline int32_t cmt_pool_device(uint64_t pool)
{
    int32_t device = cmt_pool_registry_device(pool);
    return device >= 0 ? device : cmt_sampler_current_device();
}

/* After cudaMemPoolCreate/cuMemPoolCreate returned. aux0 = maxSize (0: no
 * limit), aux1 = location type. Host-located pools get device -1. */
static inline void cmt_pool_hook_created(struct cmt_hook *h, uint8_t api, int32_t result, uint64_t pool,
                                         int location_type, int location_id, uint64_t max_size)
{
    int32_t device = location_type == CMT_POOL_LOCATION_DEVICE ? location_id : -1;
    struct cmt_pool_record p = {
        .api = api,
        .result = result,
        .device = device,
        .ts = cmt_event_ts(h->thread),
        .pool = result == 0 ? pool : 0,
        .aux = {max_size, (uint64_t)location_type},
        .with_stack = true,
    };
    cmt_record_pool(h, &p);
    if (result == 0)
        cmt_pool_registry_add(pool, device);
}

/* Before cudaMemPoolDestroy/cuMemPoolDestroy runs: its time and the pool's
 * device, while the handle still means this pool. */
static inline struct cmt_call_start cmt_pool_hook_destroy_begin(struct cmt_hook *h, uint64_t pool)
{
    struct cmt_call_start d = {.device = cmt_pool_device(pool)};
    d.ts = cmt_event_ts(h->thread);
    return d;
}

static inline void cmt_pool_hook_destroyed(struct cmt_hook *h, uint8_t api, const struct cmt_call_start *d,
                                           int32_t result, uint64_t pool)
{
    struct cmt_pool_record p = {
        .api = api,
        .result = result,
        .device = d->device,
        .ts = d->ts,
        .pool = pool,
        .with_stack = cmt_config.free_stacks,
    };
    cmt_record_pool(h, &p);
    if (result == 0)
        cmt_pool_registry_remove(pool);
}

/* After cudaMemPoolTrimTo/cuMemPoolTrimTo returned: the call (size =
 * minBytesToKeep), then the pool's state after it. */
static inline void cmt_pool_hook_trimmed(struct cmt_hook *h, uint8_t api, int32_t result, uint64_t pool,
                                         uint64_t min_bytes_to_keep)
{
    int32_t device = cmt_pool_device(pool);
    struct cmt_pool_record p = {
        .api = api,
        .result = result,
        .device = device,
        .ts = cmt_event_ts(h->thread),
        .pool = pool,
        .size = min_bytes_to_keep,
        .with_stack = true,
    };
    cmt_record_pool(h, &p);
    if (result == 0)
        cmt_sampler_pool_state(h, pool, device);
}

#endif
