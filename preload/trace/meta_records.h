/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_META_RECORDS_H
#define CUMEMTRACE_PRELOAD_META_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta_stream.h"

/* The writer of every metadata record (format.h, enum cmt_meta_type): one
 * function per record type, in the order of the enum and of the reader's
 * switch (analyzer/read/trace_reader.c). Callers pass plain values: ids they
 * allocated, string ids they interned; no caller builds a payload.
 *
 * Each is called with m->lock held and returns whether the record was
 * written: false when recording has stopped (no room can be had), in which
 * case the caller must not count the id it passed as used. A record's room
 * is the bound named beside it, fixed per type: where the next chunk starts
 * follows from it, so it is part of what a trace holds byte for byte. */

/* STRING: a text of len bytes under id. */
bool cmt_meta_write_string_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id, const char *text,
                                  size_t len);

struct cmt_meta_process {
    uint64_t pid, ppid;
    uint32_t exe_id;
    uint32_t argc;
    const uint32_t *arg_ids; /* argc string ids */
    uint32_t host_id;
    int64_t rank; /* -1 unknown */
    uint32_t cwd_id;
};
/* PROCESS. */
bool cmt_meta_write_process_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                   const struct cmt_meta_process *p);

struct cmt_meta_module {
    uint32_t id;
    uint32_t path_id;
    uint64_t bias;    /* l_addr */
    uint64_t lo, hi;  /* the lowest and one past the highest mapped address */
    const uint8_t *build_id;
    size_t build_id_len;
    uint64_t ts;
};
/* MODULE. */
bool cmt_meta_write_module_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                  const struct cmt_meta_module *mod);

/* STACK: n frame values, innermost first, written as deltas. */
bool cmt_meta_write_stack_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id,
                                 uint32_t modules_known, const uint64_t *frames, unsigned n);

/* THREAD. */
bool cmt_meta_write_thread_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t tid,
                                  uint32_t name_id);

/* FRAME: a synthetic frame (language 1: Python). */
bool cmt_meta_write_frame_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id,
                                 uint32_t function_id, uint32_t file_id, uint32_t line, uint32_t language);

struct cmt_meta_config {
    uint64_t stack_depth;
    uint64_t free_stacks;
    uint64_t sample_ms;
    uint64_t max_size;
    uint32_t version_id;
};
/* CONFIG. */
bool cmt_meta_write_config_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                  const struct cmt_meta_config *c);

/* DEVICE: uuid NULL when not known (written as 0 bytes). */
bool cmt_meta_write_device_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, int32_t ordinal,
                                  uint32_t name_id, uint64_t total, const uint8_t *uuid);

/* END: ends recording at process exit. Seals the trace (cmt_trace_seal),
 * then writes the END record (time end_ts, reason an enum cmt_end_reason,
 * the exit status the program gave exit(), -1 when unknown) with the seal's
 * final header figures, and trims the file. Its room is taken before the
 * seal from what every other record left free (CMT_META_END_RESERVE): no
 * chunk can be had after it. cmt_meta_close_trace (meta_stream.h) takes the
 * lock around it. */
void cmt_meta_close_trace_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint64_t end_ts,
                                 unsigned reason, int exit_status);

/* NOTE. */
bool cmt_meta_write_note_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint64_t ts,
                                uint32_t source, uint32_t text_id);

struct cmt_meta_job_var {
    uint32_t name_id, value_id;
};
struct cmt_meta_job {
    uint64_t ts;
    uint32_t source; /* enum cmt_job_source */
    int64_t rank, local_rank, world_size, local_world_size; /* -1 unknown */
    uint32_t job_id; /* string id, 0: none */
    size_t nvars;     /* at most CMT_JOB_MAX_VARS (format.h) */
    const struct cmt_meta_job_var *vars; /* a pair with a 0 id is left out */
};
/* JOB. */
bool cmt_meta_write_job_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, const struct cmt_meta_job *j);

struct cmt_meta_allocator {
    uint64_t ts;
    uint32_t framework; /* enum cmt_framework */
    uint32_t version_id;
    uint32_t state; /* enum cmt_blocks_state */
    uint32_t backend_id;
    uint32_t alloc_conf_id;      /* 0: unset */
    uint32_t cuda_alloc_conf_id; /* 0: unset */
};
/* ALLOCATOR. */
bool cmt_meta_write_allocator_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                     const struct cmt_meta_allocator *a);

#endif
