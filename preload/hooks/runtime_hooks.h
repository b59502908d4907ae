/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_RUNTIME_HOOKS_H
#define CUMEMTRACE_PRELOAD_RUNTIME_HOOKS_H

/* The two skeletons every runtime allocation and release hook is made of
 * (hooks_runtime.c, hooks_runtime_async.inc list them): find the real
 * function, enter, call it once with the caller's arguments, record, leave,
 * return what it returned. The real function is passed to the row's
 * describe_NAME, which fills the record (the device is asked of the same
 * libcudart); each is registered for dlsym (runtime_exports.h). Include
 * after hook_record.h and torch_blocks.h. */

#include "runtime_exports.h"

#define CMT_UNPAREN(...) __VA_ARGS__

/* segment: a call that may make a PyTorch segment (torch_blocks.h). */
#define CMT_RUNTIME_ALLOCATION_HOOK(name, no_real, segment, params, args)                 \
    CMT_REAL_SLOT(name);                                                                  \
    CMT_EXPORT cudaError_t name params                                                    \
    {                                                                                     \
        __typeof__(name) *real = CMT_REAL(name);                                          \
        if (!real)                                                                        \
            return no_real;                                                               \
        struct cmt_hook h;                                                                \
        bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);                                 \
        cudaError_t r = real args;                                                        \
        if (rec) {                                                                        \
            struct cmt_alloc_record a;                                                    \
            describe_##name(&a, r, (const void *)real, CMT_UNPAREN args);                 \
            cmt_record_alloc(&h, &a);                                                     \
            if ((segment) && r == cudaSuccess)                                            \
                cmt_torch_blocks_after_segment_call(__builtin_return_address(0));         \
        }                                                                                 \
        cmt_hook_leave(&h);                                                               \
        return r;                                                                         \
    }                                                                                     \
    CMT_RUNTIME_EXPORT(name)

/* A release of NULL releases nothing (programs call cudaFree(NULL) to create
 * the context): not an event. The timestamp is taken before the real call,
 * so an allocation the release made room for sorts after it. */
#define CMT_RUNTIME_RELEASE_HOOK(name, no_real, api, params, args, released, stream)             \
    CMT_REAL_SLOT(name);                                                                         \
    CMT_EXPORT cudaError_t name params                                                           \
    {                                                                                            \
        __typeof__(name) *real = CMT_REAL(name);                                                 \
        if (!real)                                                                               \
            return no_real;                                                                      \
        struct cmt_hook h;                                                                       \
        bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME) && (released);                          \
        uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;                                          \
        cudaError_t r = real args;                                                               \
        if (rec)                                                                                 \
            cmt_record_free(&h, api, ts, r, (uint64_t)(uintptr_t)(released), (uint64_t)(stream)); \
        cmt_hook_leave(&h);                                                                      \
        return r;                                                                                \
    }                                                                                            \
    CMT_RUNTIME_EXPORT(name)

#endif
