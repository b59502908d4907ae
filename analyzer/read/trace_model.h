/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TRACE_MODEL_H
#define CUMEMTRACE_ANALYZER_TRACE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

/* What a trace says about the process, as opposed to its events: strings,
 * stacks, modules, threads, the command line. Grows with unique stacks and
 * modules only. Filled by the reader's metadata callbacks. */

struct cmt_stack_def {
    uint32_t n;
    uint32_t modules_known;
    uint64_t *frames; /* return addresses, innermost first */
};

struct cmt_module_def {
    uint32_t path_id;
    uint64_t bias, lo, hi;
    uint8_t build_id[64];
    size_t build_id_len;
};

struct cmt_synthetic_frame {
    uint32_t function_id, file_id, line, language;
};

/* A NOTE record: something the writer wants said once. */
struct cmt_note_def {
    uint64_t ts;
    uint64_t source;
    uint32_t text_id;
};
#define CMT_MODEL_MAX_NOTES 32
#define CMT_MODEL_MAX_DEVICES 64 /* DEVICE records kept, by ordinal */

struct cmt_thread_def {
    uint32_t tid;
    uint32_t name_id;
};

/* Where the model's strings and stack frames live: large blocks, each
 * string or frame array carved from them and never moved or freed alone
 * (a malloc each cost a third as much again, and scattered them: issue
 * 32). */
struct cmt_model_arena {
    void **blocks;
    size_t n_blocks, cap_blocks;
    char *next;  /* free space of the last block */
    size_t left;
};

struct cmt_trace_model {
    struct cmt_model_arena arena;
    char **strings; /* by id; [0] unused */
    size_t *string_lens;
    uint32_t n_strings;
    struct cmt_stack_def *stacks; /* by id; [0] = "no stack" */
    uint32_t n_stacks;
    struct cmt_module_def *modules; /* by id; [0] unused */
    uint32_t n_modules;
    struct cmt_synthetic_frame *frames; /* by FRAME id; [0] unused */
    uint32_t n_frames;
    struct cmt_thread_def *threads;
    size_t n_threads;
    bool has_process;
    uint64_t pid, ppid;
    uint32_t exe_id, hostname_id, cwd_id;
    int64_t rank;
    uint32_t *arg_ids;
    uint32_t argc;
    bool has_config;
    struct cmt_config_in config;
    bool has_end;
    struct cmt_end_in end;
    bool has_job; /* the first JOB record (a writer writes one) */
    struct cmt_job_in job;
    struct cmt_note_def notes[CMT_MODEL_MAX_NOTES]; /* the first ones, in file order */
    uint32_t n_notes;
    /* The last ALLOCATOR record (format 2.1): PyTorch's block layer. */
    bool has_allocator;
    struct cmt_allocator_in allocator;
    /* DEVICE records by ordinal (the first of each; below CMT_MODEL_MAX_DEVICES). */
    bool has_device[CMT_MODEL_MAX_DEVICES];
    struct cmt_device_in device[CMT_MODEL_MAX_DEVICES];
    uint64_t notes_dropped; /* NOTE records past CMT_MODEL_MAX_NOTES */
    uint64_t rejected_records; /* metadata records with ids out of sequence */
};

void cmt_model_init(struct cmt_trace_model *m);
void cmt_model_free(struct cmt_trace_model *m);

/* Fills the metadata callbacks of cb with ctx = the model. */
void cmt_model_callbacks(struct cmt_reader_callbacks *cb);
void cmt_model_on_string(void *ctx, uint32_t id, const char *text, size_t len);
void cmt_model_on_module(void *ctx, const struct cmt_module_in *m);
void cmt_model_on_stack(void *ctx, uint32_t id, uint32_t modules_known, const uint64_t *frames, uint32_t n);
void cmt_model_on_process(void *ctx, const struct cmt_process_in *p);
void cmt_model_on_thread(void *ctx, uint32_t tid, uint32_t name_id);
void cmt_model_on_config(void *ctx, const struct cmt_config_in *c);
void cmt_model_on_end(void *ctx, const struct cmt_end_in *e);
void cmt_model_on_frame(void *ctx, const struct cmt_frame_in *f);
void cmt_model_on_note(void *ctx, const struct cmt_note_in *n);
void cmt_model_on_allocator(void *ctx, const struct cmt_allocator_in *a);
void cmt_model_on_job(void *ctx, const struct cmt_job_in *j);
void cmt_model_on_device(void *ctx, const struct cmt_device_in *d);

/* "python", "nvtx" or "shim": who wrote a note (enum cmt_note_source). */
const char *cmt_note_source_name(uint64_t source);

/* The string with this id, or "" when unknown. */
const char *cmt_model_string(const struct cmt_trace_model *m, uint32_t id);
const struct cmt_stack_def *cmt_model_stack(const struct cmt_trace_model *m, uint64_t id);
/* The synthetic frame a stack frame value refers to (CMT_FRAME_SYNTHETIC_BIT
 * set), or NULL when it is not one or was never defined. */
const struct cmt_synthetic_frame *cmt_model_synthetic_frame(const struct cmt_trace_model *m, uint64_t value);

#endif
