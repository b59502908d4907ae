/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_HOOK_RECORD_H
#define CUMEMTRACE_PRELOAD_HOOK_RECORD_H

#include "config.h"
#include "recorder.h"

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
        .ts = cmt_now_ns(),
        .addr = a->result == 0 ? a->addr : 0,
        .size = a->size,
        .stream = a->stream,
    };
    for (unsigned i = 0; i < CMT_AUX_COUNT; i++)
        e.aux[i] = a->aux[i];
    e.stack = cmt_config.stack_depth ? cmt_stack_capture() : 0;
    cmt_hook_commit(h, &e);
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

#endif
