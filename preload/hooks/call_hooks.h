/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_CALL_HOOKS_H
#define CUMEMTRACE_PRELOAD_CALL_HOOKS_H

/* The bodies of the hooks that record something other than an allocation
 * or a release (pools, IPC), runtime and driver alike: enter, call the real
 * function once with the caller's arguments, record, leave, return what it
 * returned. What differs from hook to hook is only the record, written by
 * the row's functions from the call's arguments and result; the lists that
 * name the rows are beside those functions (hooks_runtime_pool.c,
 * hooks_runtime_ipc.c, hooks_runtime_pool_ipc.c, hooks_driver.c). Include
 * after hook_record.h. */

#define CMT_UNPAREN(...) __VA_ARGS__

/* Recorded after the call: record(&h, result, real, arguments...) when the
 * hook is the outermost and want holds (a null pool is no call to record). */
#define CMT_CALL_BODY_AFTER(layer, result_type, real, want, record, args) \
    struct cmt_hook h;                                                    \
    bool rec = cmt_hook_enter(&h, layer) && (want);                       \
    result_type r = (real)args;                                           \
    if (rec)                                                              \
        record(&h, r, (const void *)(real), CMT_UNPAREN args);            \
    cmt_hook_leave(&h);                                                   \
    return r

/* A handle given up (an IPC mapping closed, a pool destroyed): begin(&h,
 * arguments...) runs before the call, while the handle still means what it
 * did, and returns what the record needs of that moment (its time at
 * least); record(&h, &start, result, real, arguments...) after it. */
#define CMT_CALL_BODY_AROUND(layer, result_type, real, want, begin, record, args) \
    struct cmt_hook h;                                                            \
    bool rec = cmt_hook_enter(&h, layer) && (want);                               \
    struct cmt_call_start start = {0};                                            \
    if (rec)                                                                      \
        start = begin(&h, CMT_UNPAREN args);                                      \
    result_type r = (real)args;                                                   \
    if (rec)                                                                      \
        record(&h, &start, r, (const void *)(real), CMT_UNPAREN args);            \
    cmt_hook_leave(&h);                                                           \
    return r

/* What a release-like call's record needs of the moment before it. */
struct cmt_call_start {
    uint64_t ts;
    int32_t device;
};

#endif
