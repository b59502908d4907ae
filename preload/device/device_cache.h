/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_DEVICE_CACHE_H
#define CUMEMTRACE_PRELOAD_DEVICE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "recorder.h"

/* The calling thread's current device, remembered between the calls that can
 * change it, so an allocation hook does not ask the runtime (cudaGetDevice)
 * or the driver (cuCtxGetDevice) every time.
 *
 * A thread's current device is the device of its current context, or, for
 * the runtime before it has one, the device cudaSetDevice selected. Both
 * change only through calls the shim hooks and passes through, recording
 * nothing (the context hooks of hooks/hooks_driver.c, cudaSetDevice and
 * cudaSetValidDevices in hooks/hooks_runtime.c):
 *   - on the calling thread: cudaSetDevice, cudaSetValidDevices,
 *     cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent, cuCtxCreate (every
 *     ABI of each); the thread's memory is forgotten;
 *   - on any thread: cuCtxDestroy, cuDevicePrimaryCtxRelease and
 *     cuDevicePrimaryCtxReset (a context current elsewhere may be gone);
 *     every thread's memory is forgotten (cmt_device_epoch moves on).
 * The runtime reaches the driver through cuGetProcAddress, so its own
 * context switches (cudaSetDevice, the first call on a new thread,
 * cudaDeviceReset) pass through those hooks as well, static runtime included.
 * A hook that misses one of them would record a wrong device:
 * CUMEMTRACE_DEVICE_CACHE=check asks the real function every time and counts
 * the answers that differ from the remembered ones. */

enum cmt_device_query {
    CMT_DEVICE_RUNTIME = 0, /* cudaGetDevice of the runtime that served the call */
    CMT_DEVICE_DRIVER = 1   /* cuCtxGetDevice */
};

/* 0 is never current: a memo with epoch 0 is empty. */
extern uint32_t cmt_device_epoch;

/* The remembered answer of query on this thread, if still valid. */
static inline bool cmt_device_cache_get(enum cmt_device_query q, int32_t *device)
{
    const struct cmt_device_memo *m = &cmt_thread_state.device_memo[q];
    if (m->epoch != __atomic_load_n(&cmt_device_epoch, __ATOMIC_RELAXED) ||
        cmt_config.device_cache != CMT_DEVICE_CACHE_ON)
        return false;
    *device = m->device;
    return true;
}

/* The epoch to store with an answer: read BEFORE asking, so that an answer
 * overtaken by a context destroyed meanwhile is stale at once. */
static inline uint32_t cmt_device_cache_epoch(void)
{
    return __atomic_load_n(&cmt_device_epoch, __ATOMIC_ACQUIRE);
}

/* CUMEMTRACE_DEVICE_CACHE=check: compares a still-valid memo with the real
 * answer (device), and the context current when it was stored with the one
 * current now: on a machine with one GPU every device is 0, but a context
 * switch the hooks did not see still shows. */
void cmt_device_cache_check(struct cmt_device_memo *m, int32_t device, uint32_t epoch);

/* Remembers a real answer; in check mode, first compares it with what was
 * remembered. */
static inline void cmt_device_cache_put(enum cmt_device_query q, int32_t device, uint32_t epoch)
{
    struct cmt_device_memo *m = &cmt_thread_state.device_memo[q];
    if (__builtin_expect(cmt_config.device_cache == CMT_DEVICE_CACHE_CHECK, 0))
        cmt_device_cache_check(m, device, epoch);
    m->device = device;
    m->epoch = epoch;
}

/* This thread's current context or selected device may have changed. */
static inline void cmt_device_cache_forget_thread(void)
{
    cmt_thread_state.device_memo[CMT_DEVICE_RUNTIME].epoch = 0;
    cmt_thread_state.device_memo[CMT_DEVICE_DRIVER].epoch = 0;
}

/* Any thread's current context may be gone. */
void cmt_device_cache_forget_all(void);

struct cmt_device_cache_stats {
    uint64_t checked;       /* memos that were still valid, compared */
    uint64_t wrong_device;  /* ... whose device differed from the real answer */
    uint64_t unseen_switch; /* ... whose context was no longer the current one */
};
void cmt_device_cache_stats(struct cmt_device_cache_stats *out);

#endif
