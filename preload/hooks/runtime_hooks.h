/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_RUNTIME_HOOKS_H
#define CUMEMTRACE_PRELOAD_RUNTIME_HOOKS_H

/* The skeletons every runtime hook is made of, each row of a list expanded
 * by one: an allocation and a release (hooks_runtime.c,
 * hooks_runtime_async.inc list them), a call recorded after it returns and
 * one that gives a handle up (the pool and IPC calls:
 * hooks_runtime_pool.c, hooks_runtime_ipc.c, hooks_runtime_pool_ipc.c), a
 * call passed through with something to do after it (device selection,
 * hooks_runtime.c). Each finds the real function, enters, calls it once with
 * the caller's arguments, records, leaves and returns what it returned.
 * The real function is passed to the row's describe_NAME or record_NAME,
 * which fills the record (the device is asked of the same libcudart); each
 * hook is registered for dlsym (runtime_exports.h). Include after
 * hook_record.h and torch_blocks.h. */

/* A symbol that cannot be found anywhere fails the call as a runtime that
 * cannot initialise does, rather than crashing the program. */
#define CMT_NO_REAL cudaErrorInitializationError

#include "call_hooks.h"
#include "runtime_exports.h"

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

/* A call recorded after it returns, by the row's record_NAME(&h, result,
 * real, arguments...), when want holds (call_hooks.h). */
#define CMT_RUNTIME_CALL_HOOK(name, want, params, args)                                \
    CMT_REAL_SLOT(name);                                                               \
    CMT_EXPORT cudaError_t name params                                                 \
    {                                                                                  \
        __typeof__(name) *real = CMT_REAL(name);                                       \
        if (!real)                                                                     \
            return CMT_NO_REAL;                                                        \
        CMT_CALL_BODY_AFTER(CMT_LAYER_RUNTIME, cudaError_t, real, want, record_##name, args); \
    }                                                                                  \
    CMT_RUNTIME_EXPORT(name)

/* A call that gives a handle up: begin_NAME before it, record_NAME after
 * (call_hooks.h). */
#define CMT_RUNTIME_GIVE_UP_HOOK(name, want, params, args)                                                 \
    CMT_REAL_SLOT(name);                                                                                   \
    CMT_EXPORT cudaError_t name params                                                                     \
    {                                                                                                      \
        __typeof__(name) *real = CMT_REAL(name);                                                           \
        if (!real)                                                                                         \
            return CMT_NO_REAL;                                                                            \
        CMT_CALL_BODY_AROUND(CMT_LAYER_RUNTIME, cudaError_t, real, want, begin_##name, record_##name, args); \
    }                                                                                                      \
    CMT_RUNTIME_EXPORT(name)

/* Passed through, nothing recorded; then() after the call. */
#define CMT_RUNTIME_PASS_HOOK(name, then, params, args) \
    CMT_REAL_SLOT(name);                                \
    CMT_EXPORT cudaError_t name params                  \
    {                                                   \
        __typeof__(name) *real = CMT_REAL(name);        \
        if (!real)                                      \
            return CMT_NO_REAL;                         \
        cudaError_t r = real args;                      \
        then();                                         \
        return r;                                       \
    }                                                   \
    CMT_RUNTIME_EXPORT(name)

#endif
