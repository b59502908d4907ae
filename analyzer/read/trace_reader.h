/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TRACE_READER_H
#define CUMEMTRACE_ANALYZER_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* Reads a trace once, in order: metadata as it is met in the file, events of
 * all threads merged by timestamp (format.h, W1-W3 make a streaming merge
 * possible: memory grows with the number of threads, not with the trace).
 * Damage stops the read with a diagnostic; everything before it has been
 * delivered. */

/* The first 48 bytes are what the analyzer's replay reads of an event, in
 * its packed layout (struct cmt_replay_in, replay.h), kept by the decoding
 * as it goes: the analysis copies them whole instead of packing each event
 * anew (that packing was 42 of the reading thread's instructions per event,
 * callgrind). The packed_ fields are set by the reader only: an event made
 * elsewhere leaves them as it likes (cmt_replay_in_from reads the others). */
struct cmt_event_in {
    uint64_t ts;
    uint64_t addr;
    uint64_t size;
    uint64_t packed_aux;   /* aux[cmt_event_packed_aux_index(api)] */
    uint32_t packed_stack; /* stack when below cmt_reader_set_stack_limit's, else 0 */
    uint32_t tid;
    int32_t result;
    int8_t packed_device; /* device in -1 .. CMT_READER_PACKED_DEVICES - 1, else INT8_MIN */
    uint8_t type;         /* enum cmt_record_type (unknown types are not delivered) */
    uint8_t api;
    uint8_t packed_kind; /* kind, and 0x7f for kinds from 0x80 up */
    uint8_t kind;
    uint32_t mask; /* fields present in the record */
    int32_t device;
    uint64_t stream;
    uint64_t stack;
    uint64_t aux[CMT_AUX_COUNT];
};

/* Devices the packed device holds (the replay's CMT_MAX_DEVICES). */
#define CMT_READER_PACKED_DEVICES 64

/* Pitched and 3D allocations: the bytes asked for are the record's aux1
 * (trace-format.md). */
static inline bool cmt_api_is_pitched(unsigned api)
{
    /* one shift and a test per packed event instead of three compares */
    _Static_assert(CMT_API_CUDA_MALLOC_PITCH < 64 && CMT_API_CUDA_MALLOC_3D < 64 && CMT_API_CU_MEM_ALLOC_PITCH < 64,
                   "the pitched APIs fit a 64-bit mask");
    const uint64_t pitched = 1ull << CMT_API_CUDA_MALLOC_PITCH | 1ull << CMT_API_CUDA_MALLOC_3D |
                             1ull << CMT_API_CU_MEM_ALLOC_PITCH;
    return api < 64 && (pitched >> api & 1);
}

/* The aux word an event's packed form keeps: the bytes asked for of the
 * pitched and 3D allocations (aux1), else aux0. */
static inline unsigned cmt_event_packed_aux_index(unsigned api)
{
    return cmt_api_is_pitched(api) ? 1 : 0;
}

struct cmt_module_in {
    uint32_t id;
    uint32_t path_id;
    uint64_t bias, lo, hi;
    const uint8_t *build_id;
    size_t build_id_len;
    uint64_t ts;
};

struct cmt_process_in {
    uint64_t pid, ppid;
    uint32_t exe_id;
    uint32_t argc;
    const uint32_t *arg_ids;
    uint32_t hostname_id;
    int64_t rank;
    uint32_t cwd_id;
};

struct cmt_config_in {
    uint64_t stack_depth, free_stacks, sample_ms, max_size;
    uint32_t version_id;
};

/* A synthetic frame (a Python function, a frame a generator made up): what
 * a stack frame value with CMT_FRAME_SYNTHETIC_BIT refers to. */
struct cmt_frame_in {
    uint32_t id;
    uint32_t function_id;
    uint32_t file_id;
    uint32_t line;
    uint32_t language;
};

struct cmt_end_in {
    uint64_t ts;
    uint64_t reason;
    uint64_t events_dropped;
    uint64_t flags;       /* the header's final flags */
    uint64_t claimed_end; /* the header's final claimed_end */
    uint64_t chunks;      /* chunks claimed, padding excluded */
    int32_t exit_status;  /* what the process gave exit() (0..255); -1 unknown (not recorded) */
};

struct cmt_note_in {
    uint64_t ts;
    uint64_t source; /* enum cmt_note_source */
    uint32_t text_id;
};

/* An ALLOCATOR record (format 2.1): whether a framework's block layer was
 * recorded. */
struct cmt_allocator_in {
    uint64_t ts;
    uint64_t framework; /* enum cmt_framework */
    uint32_t version_id;
    uint64_t state;     /* enum cmt_blocks_state */
    uint32_t backend_id;
    /* Since 2.4: the allocator's settings from the environment (string ids,
     * 0 unset or empty): PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF. */
    uint32_t alloc_conf_id, cuda_alloc_conf_id;
    bool settings_known; /* the record had them (2.4 and later) */
};

/* A JOB record (format.h): who the process is in a job of several. */
struct cmt_job_var_in {
    uint32_t name_id, value_id;
};
struct cmt_job_in {
    uint64_t ts;
    uint64_t source; /* enum cmt_job_source (a newer writer's value is kept as is) */
    int64_t rank, local_rank, world_size, local_world_size; /* -1 unknown */
    uint32_t job_id;                                        /* string id, 0 none */
    uint32_t nvars;                                         /* the first CMT_JOB_MAX_VARS are kept */
    struct cmt_job_var_in vars[CMT_JOB_MAX_VARS];
};

/* A DEVICE record: what the writer found out about a device ordinal of
 * its process (the shim writes one at the first allocation on a device). */
struct cmt_device_in {
    uint32_t ordinal;
    uint32_t name_id; /* string id, 0 unknown */
    uint64_t total;   /* bytes, 0 unknown */
    bool has_uuid;    /* uuid holds the device's 16-byte UUID (cuDeviceGetUuid) */
    uint8_t uuid[16];
};

/* Every callback may be NULL. Returning nonzero from on_event stops the read
 * early (the read then reports success). */
struct cmt_reader_callbacks {
    void (*on_string)(void *ctx, uint32_t id, const char *text, size_t len);
    void (*on_module)(void *ctx, const struct cmt_module_in *m);
    void (*on_stack)(void *ctx, uint32_t id, uint32_t modules_known, const uint64_t *frames, uint32_t n);
    void (*on_process)(void *ctx, const struct cmt_process_in *p);
    void (*on_thread)(void *ctx, uint32_t tid, uint32_t name_id);
    void (*on_config)(void *ctx, const struct cmt_config_in *c);
    void (*on_device)(void *ctx, const struct cmt_device_in *d);
    void (*on_end)(void *ctx, const struct cmt_end_in *e);
    void (*on_frame)(void *ctx, const struct cmt_frame_in *f);
    void (*on_note)(void *ctx, const struct cmt_note_in *n);
    void (*on_allocator)(void *ctx, const struct cmt_allocator_in *a);
    void (*on_job)(void *ctx, const struct cmt_job_in *j);
    int (*on_event)(void *ctx, const struct cmt_event_in *e);
};

struct cmt_trace_info {
    uint16_t version_major, version_minor;
    uint32_t flags;
    uint32_t pid;
    uint64_t start_monotonic_ns;
    uint64_t start_realtime_ns;
    uint64_t events_dropped;
    /* Calls the writer could not record because they were made inside
     * another call of the same thread (a signal handler): the header's
     * reserved[CMT_HEADER_UNRECORDED_NESTED]. */
    uint64_t unrecorded_nested;
    uint64_t file_size;
    uint64_t claimed_end; /* where the header says the claimed chunks end */
};

#define CMT_READER_MESSAGE_MAX 512
#define CMT_READER_MAX_WARNINGS 16

struct cmt_reader;

/* Opens and validates path. On failure returns a negative errno-style value
 * and writes a one-line reason (without the file name) into err: -EBADMSG
 * when the file is a trace whose header is damaged or cut, -EPROTONOSUPPORT
 * for another format version, -EINVAL when it is no trace. */
int cmt_reader_open(const char *path, struct cmt_reader **out, char *err, size_t errlen);

/* How a trace whose writer may still be appending to it is read.
 *   CMT_READ_WHOLE      as a finished file (killed or exited): anything past
 *                       the header's claimed end, a chunk beyond it, more
 *                       than the one record a killed writer leaves past a
 *                       chunk's commit word, is damage.
 *   CMT_READ_COMMITTED  what was committed when it was opened, and nothing
 *                       after: the chunks below the header's claimed end as
 *                       read at the open, each chunk's records up to its
 *                       commit word as read when the chunk is opened. What
 *                       a writer still appending leaves past them is not
 *                       looked at. Events of the last instant may be missing
 *                       (a record committed after its chunk's word was read),
 *                       never half read. To follow a growing trace (a live
 *                       view), open it again: each open is a new snapshot,
 *                       mapped at the file's size then.
 *   CMT_READ_AUTO       committed when the trace's writer still runs on this
 *                       machine (a process with the trace's pid holds the
 *                       file open), else whole: what the analyzer's
 *                       commands use. cmt_reader_in_progress says which.
 * A trace whose header says the process exited is always read whole. */
enum cmt_read_mode { CMT_READ_WHOLE, CMT_READ_COMMITTED, CMT_READ_AUTO };
int cmt_reader_open_mode(const char *path, enum cmt_read_mode mode, struct cmt_reader **out, char *err,
                         size_t errlen);
/* True when the trace is read as committed so far: its writer had not
 * finished it (docs/report.md, "A trace still being written"). */
bool cmt_reader_in_progress(const struct cmt_reader *r);

/* Same, over bytes in memory (tests, fuzzing). The buffer must outlive the
 * reader. */
int cmt_reader_open_memory(const void *data, size_t size, struct cmt_reader **out, char *err, size_t errlen);

const struct cmt_trace_info *cmt_reader_info(const struct cmt_reader *r);

/* Stack ids from limit up are packed as 0 (struct cmt_event_in's
 * packed_stack): the replay's stack_id_limit. UINT32_MAX until set. */
void cmt_reader_set_stack_limit(struct cmt_reader *r, uint32_t limit);

/* Reads the whole trace. Returns 0 when the trace was read to its end (even
 * if it is truncated: see the warnings), -1 when damage stopped the read
 * (cmt_reader_error says where and what). */
int cmt_reader_run(struct cmt_reader *r, const struct cmt_reader_callbacks *cb, void *ctx);

const char *cmt_reader_error(const struct cmt_reader *r);
/* True when the file ends before the last chunk it starts (a partial copy, a
 * full disk): the events before the cut were delivered. */
bool cmt_reader_truncated(const struct cmt_reader *r);
size_t cmt_reader_warning_count(const struct cmt_reader *r);
const char *cmt_reader_warning(const struct cmt_reader *r, size_t i);

/* Counters of what the read met. */
struct cmt_reader_stats {
    uint64_t event_chunks, meta_chunks, events, meta_records, bytes_of_records;
    uint64_t max_open_chunks;
    /* Event records decoded on the general path rather than the fast one
     * (the last ones of a chunk, fields longer than 8 bytes, a body
     * shorter than 4 bytes, anything unusual): what tests of the fast path
     * check. */
    uint64_t slow_records;
};
const struct cmt_reader_stats *cmt_reader_stats(const struct cmt_reader *r);

void cmt_reader_close(struct cmt_reader *r);

/* For tests: decode r without the CPU's optional instructions (crc32,
 * pext), on the paths any CPU takes. The events and errors are the same. */
void cmt_reader_portable_decode(struct cmt_reader *r);

/* Follow mode: a trace its process is still writing (the pytest plugin,
 * docs/python.md). The file is mapped once with room to grow; each poll
 * delivers what was committed since the last one: new metadata first, then
 * the events, merged by time as far as each thread's chunk is committed.
 * An event committed after a later one of another thread was delivered
 * comes at the next poll with the latest time delivered
 * (cmt_reader_late_events counts them), so times never go back. Damage
 * stops it like cmt_reader_run. */
int cmt_reader_open_follow(const char *path, struct cmt_reader **out, char *err, size_t errlen);
/* Returns 0 (nothing more committed now), -1 on damage (cmt_reader_error).
 * on_event's return value is ignored. */
int cmt_reader_poll(struct cmt_reader *r, const struct cmt_reader_callbacks *cb, void *ctx);
/* True once the END record and every chunk were read: the process exited. */
bool cmt_reader_follow_ended(const struct cmt_reader *r);
uint64_t cmt_reader_late_events(const struct cmt_reader *r);
/* Whether the process writing a followed trace still runs on this machine
 * (the test of CMT_READ_AUTO: it holds the file open). False for a reader
 * not in follow mode. A writer gone without an END record was killed or
 * crashed: poll once more after this says false, and what it wrote is all
 * there is. */
bool cmt_reader_writer_running(const struct cmt_reader *r);

#endif
