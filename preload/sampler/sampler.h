/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_SAMPLER_H
#define CUMEMTRACE_PRELOAD_SAMPLER_H

#include <stdint.h>

#include "event_stream.h"
#include "recorder.h"

/* Device context samples (docs/trace-format.md, "Samples"): what the driver
 * says about a device's memory (cuMemGetInfo: free and total) and about its
 * stream-ordered pools (reserved, used, release threshold), written into the
 * trace so the analyzer can tell why an allocation failed.
 *
 * When: at the first allocation on each device (start), at every failed
 * allocation, at most every CUMEMTRACE_SAMPLE_MS while allocations succeed
 * (periodic), and at exit. The cost on the allocation path is one relaxed
 * load and a compare against the timestamp the event already took; only the
 * thread that wins the due sample pays for the driver queries.
 *
 * The driver functions are libcuda's own, found with dlsym on libcuda's
 * handle, never through the shim's hooks; they run inside the hook that
 * triggered the sample (the thread's depth is above zero), so nothing they
 * might call could record. */

#define CMT_SAMPLER_MAX_DEVICES 64
/* Pools reported per device sample: the device's default pool, its current
 * pool when another one was set, and pools created through hooked calls. */
#define CMT_SAMPLER_MAX_POOLS 64

/* Per device ordinal: when the next periodic sample is due (monotonic ns);
 * 0: no sample yet, the next one is the start sample. */
extern uint64_t cmt_sampler_next_ns[CMT_SAMPLER_MAX_DEVICES];

/* The bytes of the allocation or mapping ptr lies in, as libcuda's own
 * cuMemGetAddressRange_v2 says (never through a hook); 0 when it cannot
 * be asked or does not know ptr. */
uint64_t cmt_sampler_range_size(uint64_t ptr);

void cmt_sampler_take_failure(struct cmt_hook *h, const struct cmt_event *failed);
void cmt_sampler_take_due(struct cmt_hook *h, int32_t device, uint64_t now);

/* Called by every allocation hook right after its event was committed. */
static inline void cmt_sampler_after_alloc(struct cmt_hook *h, const struct cmt_event *e)
{
    if (__builtin_expect(e->result != 0, 0)) {
        cmt_sampler_take_failure(h, e);
        return;
    }
    if ((uint32_t)e->device < CMT_SAMPLER_MAX_DEVICES &&
        __builtin_expect(e->ts >= __atomic_load_n(&cmt_sampler_next_ns[e->device], __ATOMIC_RELAXED), 0))
        cmt_sampler_take_due(h, e->device, e->ts);
}

/* One pool's state after a pool call (cudaMemPoolTrimTo...): a POOL_STATE
 * record on the calling thread. device: the pool's, or -1 when unknown. */
void cmt_sampler_pool_state(struct cmt_hook *h, uint64_t pool, int32_t device);

/* The device of the calling thread's current context; -1 without one. */
int32_t cmt_sampler_current_device(void);

/* The exit sample, from the recorder's exit handler (start lock held,
 * recorder active, the calling thread counted as inside a hook). */
void cmt_sampler_exit(void);

/* fork: the child's trace starts over, with start samples of its own. */
void cmt_sampler_fork_prepare(void);
void cmt_sampler_fork_parent(void);
void cmt_sampler_fork_child(void);

#endif
