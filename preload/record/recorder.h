/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_RECORDER_H
#define CUMEMTRACE_PRELOAD_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "event_stream.h"
#include "meta_stream.h"
#include "trace_file.h"

/* The process's recorder: the trace file, the metadata stream, and the
 * per-thread event streams. Started lazily by the first hooked call, so a
 * program that never allocates CUDA memory gets no trace file at all. */

enum cmt_recorder_state {
    CMT_RECORDER_UNSTARTED = 0,
    CMT_RECORDER_ACTIVE = 1,
    CMT_RECORDER_OFF = 2 /* disabled, failed to start, or shut down: pass-through */
};

struct cmt_recorder {
    int state; /* enum cmt_recorder_state, atomic */
    uint32_t generation; /* bumped when a forked child starts over */
    bool forked_child;
    pthread_mutex_t start_lock;
    struct cmt_trace_file tf;
    struct cmt_meta_stream meta;
    uint32_t next_string_id;
    uint32_t next_stack_id;
    uint32_t next_module_id;
};

extern struct cmt_recorder cmt_recorder;

/* The thread's current device as a device query last answered
 * (device/device_cache.h). */
struct cmt_device_memo {
    int32_t device;
    uint32_t epoch;   /* valid while equal to cmt_device_epoch (device_cache.h) */
    void *context;    /* CUMEMTRACE_DEVICE_CACHE=check only: the context current then */
};

/* Which API layer the thread's outermost hook belongs to: a driver hook
 * inside a runtime hook is the runtime's own call (cudaMalloc calling
 * cuMemAlloc_v2) and part of the same user call; any other hook reached
 * while one is in progress is a call of its own that cannot be recorded
 * (a signal handler's), and is counted. */
enum cmt_layer {
    CMT_LAYER_INTERNAL = 0, /* the shim's own code outside any hook (exit, fork handlers) */
    CMT_LAYER_RUNTIME = 1,
    CMT_LAYER_DRIVER = 2,
    CMT_LAYER_MARK = 3, /* NVTX and API marks (phase_record.c): not allocation calls, never counted */
    CMT_LAYER_BLOCK = 4 /* a framework allocator's trace callback (torch_blocks.c) */
};

/* Per-thread state. depth counts hooks on this thread's stack: only the
 * outermost records, so cudaMalloc and the cuMemAlloc it makes inside cudart
 * are one event, and a hook reached from a signal handler that interrupted a
 * hook passes straight through. */
struct cmt_thread {
    uint32_t depth;
    uint32_t generation;
    uint8_t outer_layer; /* enum cmt_layer of the outermost hook (or internal code) in progress */
    struct cmt_event_stream stream;
    /* The current device as cudaGetDevice and cuCtxGetDevice last answered. */
    struct cmt_device_memo device_memo[2];
};

extern __thread struct cmt_thread cmt_thread_state __attribute__((tls_model("initial-exec")));

/* What the shim's lifecycle owner (shim/stages.c) has run when a trace
 * starts and when the process exits: the recorder names no feature. */
struct cmt_recorder_stages {
    /* Under the start lock, before the trace's first record: forget the ids
     * of a previous trace (a forked child's parent's). */
    void (*trace_reset)(void);
    /* Under the metadata lock, after the recorder's own first records
     * (configuration, process, job): the records every trace begins with
     * (the module map's loaded modules). */
    void (*trace_head_locked)(void);
    /* The trace is active; outside every lock. */
    void (*trace_started)(void);
    /* The exit handler, under the start lock while the trace is active (the
     * driver still answers: see recorder.c, take_exit_sample). */
    void (*at_exit)(void);
};
/* At load, before any hook can record. */
void cmt_recorder_set_stages(const struct cmt_recorder_stages *stages);

/* Slow paths, out of line. cmt_recorder_start first makes sure the shim is
 * loaded (shim.h: the one call upward, a hook can come before the
 * constructor). */
bool cmt_recorder_start(void);
bool cmt_recorder_thread_setup(struct cmt_thread *t);
void cmt_recorder_shutdown(void);
/* The process ends with _exit(status) (hooks/exit_hook.c): the trace is
 * closed with that status as at exit, when the trace is this process's (not
 * a vfork child's, which shares its parent's memory) and no hook of this
 * thread is in progress (a signal handler's _exit may have interrupted one
 * holding the recorder's locks); otherwise nothing is done. */
void cmt_recorder_exit_now(int status);
/* The recorder's part of fork (its locks, the child's fresh state), run by
 * the lifecycle owner inside cmt_internal_enter/leave. */
void cmt_recorder_fork_prepare(void);
void cmt_recorder_fork_parent(void);
void cmt_recorder_fork_child(void);

/* Interns a string in the metadata stream; returns its id (0 on failure).
 * Caller holds cmt_recorder.meta.lock. */
uint32_t cmt_recorder_intern_string_locked(const char *s, size_t len);

/* Writes a NOTE record (format.h): something the report should say once,
 * such as an interpreter version the shim does not know. Takes the metadata
 * lock itself, counting as inside a hook meanwhile; does nothing until the
 * recorder is active. Not for the hot path. */
void cmt_recorder_note(enum cmt_note_source source, const char *text);

/* A DEVICE record: what the driver says of a device ordinal (its name,
 * total bytes and UUID; uuid NULL: not known). Like cmt_recorder_note. */
void cmt_recorder_write_device(int32_t ordinal, const char *name, uint64_t total, const uint8_t *uuid);

/* Writes the ALLOCATOR record (format.h): whether the block layer of a
 * framework's allocator is recorded, and the allocator's settings as the
 * process's environment gave them (alloc_conf: PYTORCH_ALLOC_CONF,
 * cuda_alloc_conf: PYTORCH_CUDA_ALLOC_CONF; NULL when unset). Like
 * cmt_recorder_note. */
void cmt_recorder_write_allocator(enum cmt_framework framework, const char *version, enum cmt_blocks_state state,
                                  const char *backend, const char *alloc_conf, const char *cuda_alloc_conf);

/* A hooked call in flight. */
struct cmt_hook {
    struct cmt_thread *thread;
    bool record;
};

static inline bool cmt_recorder_ready(struct cmt_thread *t)
{
    if (__builtin_expect(__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) != CMT_RECORDER_ACTIVE, 0)) {
        if (!cmt_recorder_start())
            return false;
    }
    if (__builtin_expect(t->generation != cmt_recorder.generation, 0)) {
        if (!cmt_recorder_thread_setup(t))
            return false;
    }
    if (__builtin_expect(!cmt_trace_is_active(&cmt_recorder.tf), 0) ||
        __builtin_expect(!cmt_event_stream_reserve(&cmt_recorder.tf, &t->stream), 0)) {
        cmt_trace_count_dropped(&cmt_recorder.tf);
        return false;
    }
    return true;
}

/* Counts a call that re-entered the shim (cmt_layer): lock-free, safe in a
 * signal handler. Out of line: rare. */
void cmt_recorder_count_nested(void);

/* Enters a hook. Returns whether this call is recorded; the hook must call
 * cmt_hook_leave on every path either way. Room for the record is reserved
 * here, before any timestamp is taken (format.h, W1). */
static inline bool cmt_hook_enter(struct cmt_hook *h, enum cmt_layer layer)
{
    struct cmt_thread *t = &cmt_thread_state;
    h->thread = t;
    h->record = false;
    uint32_t depth = t->depth++;
    /* The increment must be in place before anything below touches the
     * thread's stream: a signal handler that calls a hook in between must see
     * us inside one and pass straight through. A compiler fence suffices
     * (same thread); it costs no instruction. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (depth != 0) {
        if (__builtin_expect(layer != CMT_LAYER_MARK &&
                                 (layer != CMT_LAYER_DRIVER || t->outer_layer != CMT_LAYER_RUNTIME), 0))
            cmt_recorder_count_nested();
        return false;
    }
    t->outer_layer = (uint8_t)layer;
    h->record = cmt_recorder_ready(t);
    return h->record;
}

static inline void cmt_hook_leave(struct cmt_hook *h)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    h->thread->depth--;
}

/* The shim's own code outside any hook that takes the metadata lock or
 * the recorder's (exit, fork, a thread's end, an unload) counts as being
 * inside one, so that a signal handler interrupting it and calling a hook
 * passes straight through instead of waiting for a lock this very thread
 * holds. */
static inline void cmt_internal_enter(void)
{
    if (cmt_thread_state.depth++ == 0) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        cmt_thread_state.outer_layer = CMT_LAYER_INTERNAL;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void cmt_internal_leave(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    cmt_thread_state.depth--;
}

/* The timestamp of the thread's next record: CLOCK_MONOTONIC ns from the
 * event clock, never below the stream's previous timestamp (or its chunk's
 * claim time), so a thread's records never go back in time (format.h, W1 and
 * W3) whatever the re-anchoring does. Call it after the reserve. */
static CMT_ALWAYS_INLINE uint64_t cmt_event_ts(struct cmt_thread *t)
{
    return cmt_clock_ns(t->stream.prev_ts);
}

/* Appends a finished event. ts must be set by the caller: before the real call
 * for releases, after it for allocations (format.h). */
static CMT_ALWAYS_INLINE void cmt_hook_commit(struct cmt_hook *h, const struct cmt_event *e)
{
    cmt_event_stream_append(&h->thread->stream, e);
}

#endif
