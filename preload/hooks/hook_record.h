/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_HOOK_RECORD_H
#define CUMEMTRACE_PRELOAD_HOOK_RECORD_H

#include "config.h"
#include "recorder.h"
#include "stacks.h"
#include "sampler.h"

/* What every allocation or release hook records, in one place. Inlined
 * into each hook with the event's encoding (event_stream.h): the fields a
 * hook fixes are constants there, and the encoder's tests of them vanish
 * (about a fifth of the instructions an event costs). */

struct cmt_alloc_record {
    uint8_t api;
    uint8_t kind;
    int32_t result;
    int32_t device; /* -1 for host memory */
    uint64_t addr;  /* pointer or handle; 0 when the call failed */
    uint64_t size;  /* bytes as the API defines them (pitch x height...) */
    uint64_t stream;
    uint64_t aux[CMT_AUX_COUNT];
};

/* Call right after the real allocation returned: the timestamp is taken
 * here, after the call, so a later free of the same address sorts after it
 * and a release that made room for it sorts before it. */
static CMT_ALWAYS_INLINE void cmt_record_alloc(struct cmt_hook *h, const struct cmt_alloc_record *a)
{
    struct cmt_event e = {
        .type = CMT_REC_ALLOC,
        .api = a->api,
        .kind = a->kind,
        .has_device = true,
        .device = a->device,
        .result = a->result,
        .ts = cmt_event_ts(h->thread),
        .addr = a->result == 0 ? a->addr : 0,
        .size = a->size,
        .stream = a->stream,
    };
    for (unsigned i = 0; i < CMT_AUX_COUNT; i++)
        e.aux[i] = a->aux[i];
    e.stack = cmt_config.stack_depth ? cmt_stack_capture() : 0;
    cmt_hook_commit(h, &e);
    cmt_sampler_after_alloc(h, &e);
}

/* ts was taken BEFORE the real release ran. size: the span released when
 * the API takes one (cuMemUnmap, cuMemAddressFree), else 0. */
static CMT_ALWAYS_INLINE void cmt_record_free_sized(struct cmt_hook *h, uint8_t api, uint64_t ts, int32_t result,
                                                    uint64_t addr, uint64_t size, uint64_t stream)
{
    struct cmt_event e = {
        .type = CMT_REC_FREE,
        .api = api,
        .kind = cmt_api_default_kind(api),
        .result = result,
        .ts = ts,
        .addr = addr,
        .size = size,
        .stream = stream,
    };
    if (cmt_config.free_stacks)
        e.stack = cmt_stack_capture();
    cmt_hook_commit(h, &e);
}

static CMT_ALWAYS_INLINE void cmt_record_free(struct cmt_hook *h, uint8_t api, uint64_t ts, int32_t result,
                                              uint64_t addr, uint64_t stream)
{
    cmt_record_free_sized(h, api, ts, result, addr, 0, stream);
}

/* A pool lifecycle call (docs/trace-format.md, "Pools"). ts: after the call
 * for creation and trimming, before it for destruction (the pool's handle
 * may be reused once it returns). The creating and trimming call sites are
 * recorded; destruction's only with CUMEMTRACE_FREE_STACKS. */
struct cmt_pool_record {
    uint8_t api;
    int32_t result;
    int32_t device; /* the pool's device */
    uint64_t ts;
    uint64_t pool;  /* the handle; 0 when creation failed */
    uint64_t size;  /* cudaMemPoolTrimTo: minBytesToKeep */
    uint64_t aux[CMT_AUX_COUNT];
    bool with_stack;
};

static inline void cmt_record_pool(struct cmt_hook *h, const struct cmt_pool_record *p)
{
    struct cmt_event e = {
        .type = CMT_REC_POOL,
        .api = p->api,
        .kind = CMT_KIND_ASYNC,
        .has_device = true,
        .device = p->device,
        .result = p->result,
        .ts = p->ts,
        .addr = p->pool,
        .size = p->size,
    };
    for (unsigned i = 0; i < CMT_AUX_COUNT; i++)
        e.aux[i] = p->aux[i];
    if (p->with_stack)
        e.stack = cmt_stack_capture();
    cmt_hook_commit(h, &e);
}

/* A record of memory shared between processes (docs/trace-format.md,
 * "IPC"). ts: after the call for exports, opens and imports, before it
 * for closes (the address may be mapped again once it returns). */
struct cmt_ipc_record {
    uint8_t api;
    int32_t result;
    int32_t device;
    uint64_t ts;
    uint64_t addr;
    uint64_t size;
    uint64_t aux[CMT_AUX_COUNT];
    bool with_stack;
};

static inline void cmt_record_ipc(struct cmt_hook *h, const struct cmt_ipc_record *p)
{
    struct cmt_event e = {
        .type = CMT_REC_IPC,
        .api = p->api,
        .kind = cmt_api_default_kind(p->api),
        .has_device = true,
        .device = p->device,
        .result = p->result,
        .ts = p->ts,
        .addr = p->addr,
        .size = p->size,
    };
    for (unsigned i = 0; i < CMT_AUX_COUNT; i++)
        e.aux[i] = p->aux[i];
    if (p->with_stack)
        e.stack = cmt_stack_capture();
    cmt_hook_commit(h, &e);
}

/* The IPC record of a hooked call, runtime or driver alike: ts 0 takes the
 * time now (after the call: exports and imports); a release passes the
 * time it took before the call. */
static inline void cmt_record_ipc_call(struct cmt_hook *h, uint8_t api, int32_t result, int32_t device, uint64_t ts,
                                       uint64_t addr, uint64_t size, uint64_t aux0, uint64_t aux1, uint64_t aux2,
                                       bool with_stack)
{
    struct cmt_ipc_record p = {
        .api = api,
        .result = result,
        .device = device,
        .ts = ts ? ts : cmt_event_ts(h->thread),
        .addr = addr,
        .size = size,
        .aux = {aux0, aux1, aux2},
        .with_stack = with_stack,
    };
    cmt_record_ipc(h, &p);
}

#endif
