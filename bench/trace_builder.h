/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_BENCH_TRACE_BUILDER_H
#define CUMEMTRACE_BENCH_TRACE_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event_stream.h" /* struct cmt_event and the writer's own encoder */

/* Writes trace files whose every byte the caller decides: fixed start
 * times, pids, thread ids, timestamps and addresses. Golden tests need
 * traces that are identical on every run; the benchmark needs traces of any
 * length without running a program for hours.
 *
 * Events are encoded by the shim's own encoder (cmt_event_encode) into
 * per-thread chunks laid out as the shim lays them out: a thread claims a
 * chunk when its current one is full (4 KiB first, doubling to 256 KiB), at
 * the file's end, with the claim time of the event that needed it. Events
 * must be added in non-decreasing time order across all threads; the
 * ordering guarantees W1-W3 of format.h then hold by construction.
 * Metadata goes to 64 KiB metadata chunks claimed the same way. Memory use:
 * one chunk buffer per thread, whatever the trace length. */

struct cmt_trace_builder;

struct cmt_trace_builder_options {
    uint32_t pid;
    uint64_t start_monotonic_ns;
    uint64_t start_realtime_ns;
    bool clean_exit; /* set CMT_FILE_FLAG_CLEAN_EXIT when closing */
    /* Zero bytes left after the last chunk, as a killed process leaves the
     * space reserved ahead of use (0: the file is trimmed, as at exit). */
    uint64_t zero_tail;
};

/* Creates path (truncating it). Returns NULL with errno set on failure. */
struct cmt_trace_builder *cmt_tb_create(const char *path, const struct cmt_trace_builder_options *opt);

/* Metadata. Ids are handed out in sequence from 1, as the shim does; strings
 * are interned (the same text gets the same id). */
uint32_t cmt_tb_string(struct cmt_trace_builder *b, const char *text);
void cmt_tb_process(struct cmt_trace_builder *b, uint64_t pid, uint64_t ppid, const char *exe, int argc,
                    const char *const *argv, const char *hostname, int64_t rank, const char *cwd);
/* A synthetic frame (FRAME record); returns the frame value to put in a
 * stack (CMT_FRAME_SYNTHETIC_BIT | id). */
uint64_t cmt_tb_frame(struct cmt_trace_builder *b, const char *function, const char *file, uint32_t line);
/* The same with a language (the FRAME record's: 1 = Python). */
uint64_t cmt_tb_frame_language(struct cmt_trace_builder *b, const char *function, const char *file, uint32_t line,
                               uint32_t language);
/* frames innermost first; returns the stack id. */
uint32_t cmt_tb_stack(struct cmt_trace_builder *b, const uint64_t *frames, uint32_t n);
/* build_id may be NULL (none recorded). */
uint32_t cmt_tb_module(struct cmt_trace_builder *b, const char *path, uint64_t bias, uint64_t lo, uint64_t hi,
                       const uint8_t *build_id, size_t build_id_len);
void cmt_tb_thread(struct cmt_trace_builder *b, uint32_t tid, const char *name);
/* A NOTE record (source: enum cmt_note_source). */
void cmt_tb_note(struct cmt_trace_builder *b, uint64_t ts, unsigned source, const char *text);
/* An ALLOCATOR record (format 2.1; the settings since 2.4): framework enum
 * cmt_framework, state enum cmt_blocks_state; version, backend and the
 * settings (PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF) may be NULL. */
void cmt_tb_allocator(struct cmt_trace_builder *b, uint64_t ts, unsigned framework, const char *version,
                      unsigned state, const char *backend, const char *alloc_conf, const char *cuda_alloc_conf);
/* A JOB record (format.h): who the process is in a job. */
struct cmt_tb_job_desc {
    uint64_t ts;
    unsigned source; /* enum cmt_job_source */
    int64_t rank, local_rank, world_size, local_world_size;
    const char *job_id; /* NULL or "": none */
    size_t nvars;
    const char *const *names, *const *values;
};
void cmt_tb_job(struct cmt_trace_builder *b, const struct cmt_tb_job_desc *j);
void cmt_tb_device(struct cmt_trace_builder *b, uint32_t ordinal, const char *name, uint64_t total);
void cmt_tb_end(struct cmt_trace_builder *b, uint64_t ts, uint64_t reason);
/* The exit status the END record gives (0..255), as the shim writes it;
 * without this call none is written (a trace of an older shim). */
void cmt_tb_exit_status(struct cmt_trace_builder *b, int status);

/* One event of thread tid. e->ts must not be earlier than the previous
 * event's (any thread). Returns 0, or -1 (out of order, I/O error). */
int cmt_tb_event(struct cmt_trace_builder *b, uint32_t tid, const struct cmt_event *e);

/* What a writer killed in the middle of appending e leaves (format.h,
 * "Integrity"): CMT_TB_KILLED_BEFORE_TYPE the record's bytes without its
 * type byte; CMT_TB_KILLED_BEFORE_COMMIT the whole record, its chunk's
 * commit word not yet advanced. Nothing may be added to that thread after
 * it. Returns 0 or -1. */
enum cmt_tb_kill_point { CMT_TB_KILLED_BEFORE_TYPE, CMT_TB_KILLED_BEFORE_COMMIT };
int cmt_tb_event_killed(struct cmt_trace_builder *b, uint32_t tid, const struct cmt_event *e,
                        enum cmt_tb_kill_point at);
/* Bytes claimed so far (the file size after close). */
uint64_t cmt_tb_size(const struct cmt_trace_builder *b);

/* Writes every pending chunk and the header, trims the file. Returns 0 or
 * -1 (errno set); frees b either way. */
int cmt_tb_close(struct cmt_trace_builder *b);

#endif
