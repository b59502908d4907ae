/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_POOL_REGISTRY_H
#define CUMEMTRACE_PRELOAD_POOL_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The stream-ordered memory pools this process created through a hooked
 * call (cudaMemPoolCreate, cuMemPoolCreate) and has not destroyed: the
 * sampler reports their reserved and used bytes next to each device sample.
 * Devices' default and current pools are not listed here; the sampler asks
 * the driver for those. Rare calls only (pool creation and destruction,
 * samples): one mutex guards it. */

#define CMT_POOL_REGISTRY_MAX 256

struct cmt_known_pool {
    uint64_t handle;
    int32_t device; /* the pool's location (a device ordinal) */
};

/* Adds a pool; false when the registry is full (the pool is then not
 * sampled; its lifecycle events are still recorded). */
bool cmt_pool_registry_add(uint64_t handle, int32_t device);
void cmt_pool_registry_remove(uint64_t handle);
/* The device of a known pool, or -1. */
int32_t cmt_pool_registry_device(uint64_t handle);
/* Copies up to max known pools into out; returns how many. */
size_t cmt_pool_registry_list(struct cmt_known_pool *out, size_t max);
/* fork: the lock is held across it so the child never inherits the list
 * mid-update. Pools stay listed in the child (it inherits the parent's
 * state; the simulated device keeps them usable there). */
void cmt_pool_registry_fork_prepare(void);
void cmt_pool_registry_fork_parent(void);
void cmt_pool_registry_fork_child(void);

#endif
