/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_TRACE_FILE_H
#define CUMEMTRACE_PRELOAD_TRACE_FILE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* The trace file: creation, the MAP_SHARED segments it is written through,
 * and chunk claiming. Everything a process writes lands in chunks claimed
 * here; what is stored in the mapping is in the page cache at once, so it
 * survives SIGKILL of the writer. */

#define CMT_MAX_SEGMENTS 4096u
#define CMT_FIRST_SEGMENT_SIZE (1u << 20)
#define CMT_MAX_SEGMENT_SIZE (64u << 20)
#define CMT_SMALL_SEGMENT_SIZE (64u << 10) /* tried when the disk is nearly full */
/* How far past the last claimed byte the pages are made writable ahead of
 * use (trace_file.c, populate_ahead_locked; page_populate.h). */
#define CMT_POPULATE_AHEAD (512u << 10)

enum cmt_trace_state {
    CMT_TRACE_UNOPENED = 0,
    CMT_TRACE_ACTIVE = 1,
    CMT_TRACE_STOPPED = 2, /* size limit or write error: no new chunks */
    CMT_TRACE_CLOSED = 3   /* process exit: file trimmed, no new chunks */
};

struct cmt_segment {
    uint8_t *base;
    uint64_t offset;
    uint64_t size;
};

struct cmt_trace_file {
    int fd;
    int state; /* enum cmt_trace_state, read with atomics */
    pthread_mutex_t claim_lock;
    struct cmt_file_header *header;
    struct cmt_segment segments[CMT_MAX_SEGMENTS];
    unsigned n_segments;
    uint64_t segment_used; /* bytes used in the last segment */
    uint64_t file_size;    /* bytes reserved on disk (fallocated) */
    uint64_t max_size;     /* 0 = unlimited */
    uint64_t next_segment_size;
    uint64_t last_claim_ns; /* the latest chunk's claim_ns (claim lock) */
    uint64_t chunks;        /* chunks claimed, padding excluded (claim lock; the END record says it) */
    uint64_t populated;     /* bytes of the last segment asked to be made writable ahead of use */
    unsigned populate_mode; /* enum cmt_populate_mode (page_populate.h) */
    int stop_error;         /* errno that stopped recording (CMT_FILE_FLAG_WRITE_ERROR), 0: none */
    char path[PATH_MAX];
};

struct cmt_trace_create_options {
    uint64_t max_size; /* 0 = unlimited */
    uint32_t pid;
    uint32_t extra_flags; /* e.g. CMT_FILE_FLAG_FORKED_CHILD */
    unsigned populate;    /* enum cmt_populate_mode: who makes pages writable ahead (0: a helper thread) */
};

/* Creates a new trace at path (mode 0600, O_EXCL|O_NOFOLLOW: an existing file
 * or a symlink is never written; ".1", ".2", ... are tried instead), reserves
 * and maps its first segment and writes the header. Returns 0, or a negative
 * errno value with nothing left open. tf->path holds the path used. */
int cmt_trace_create(struct cmt_trace_file *tf, const char *path, const struct cmt_trace_create_options *opt);

/* Claims a chunk of size bytes (a multiple of CMT_CHUNK_ALIGN, at most
 * CMT_CHUNK_MAX_SIZE) and commits its header. Returns the chunk, or NULL when
 * recording has stopped or stops now (limit reached, disk full); *claim_ns
 * receives the chunk's claim time: clock_gettime, raised when needed to
 * not_before (the claiming thread's last timestamp) and to the previous
 * claim, so that claims never decrease (W2) and a thread's new chunk never
 * starts before its previous one ended. Thread-safe; takes the claim lock. */
uint8_t *cmt_trace_claim_chunk(struct cmt_trace_file *tf, uint32_t magic, uint32_t size, uint32_t tid,
                               uint32_t thread_seq, uint64_t not_before, uint64_t *claim_ns);

/* The same, but near the size limit a chunk smaller than size (at least
 * min_size, a multiple of CMT_CHUNK_ALIGN) is handed out rather than none:
 * a limit records what fits. *got_size (when not NULL) receives the size
 * claimed. */
uint8_t *cmt_trace_claim_chunk_fit(struct cmt_trace_file *tf, uint32_t magic, uint32_t size, uint32_t min_size,
                                   uint32_t tid, uint32_t thread_seq, uint64_t not_before, uint64_t *claim_ns,
                                   uint32_t *got_size);

/* Why path cannot hold a trace: it is a directory, a device, a fifo or a
 * socket, or lies in /proc, /sys or another kernel file system (writing
 * there would make files such as /dev/null.1 or fail oddly). NULL: it can. */
const char *cmt_trace_special_path(const char *path);

/* The latest claim time handed out (the trace's start before any claim). */
uint64_t cmt_trace_last_claim_ns(struct cmt_trace_file *tf);

static inline bool cmt_trace_is_active(const struct cmt_trace_file *tf)
{
    return __atomic_load_n(&tf->state, __ATOMIC_ACQUIRE) == CMT_TRACE_ACTIVE;
}

/* The header's counters and flags, without their checks (format.h). */
uint64_t cmt_trace_events_dropped(const struct cmt_trace_file *tf);
uint32_t cmt_trace_flags(const struct cmt_trace_file *tf);

/* Counts an event that could not be recorded because recording stopped. */
void cmt_trace_count_dropped(struct cmt_trace_file *tf);

/* What the END record repeats of the header once recording ended. */
struct cmt_trace_seal {
    uint32_t flags;
    uint64_t claimed_end;
    uint64_t events_dropped;
    uint64_t chunks;
};

/* Marks the end of recording at process exit: sets the clean-exit flag and
 * hands out no new chunk from now on (threads still inside a claimed chunk
 * may finish their record). Fills out with the final header fields for the
 * END record. Returns false when the trace was not open. Use
 * cmt_meta_close_trace (meta_stream.h), which writes the END record too. */
bool cmt_trace_seal(struct cmt_trace_file *tf, struct cmt_trace_seal *out);

/* After the seal: trims the file to its claimed chunks. */
void cmt_trace_trim(struct cmt_trace_file *tf);

/* In a forked child: forgets the parent's trace without touching the file
 * (the parent keeps writing it). */
void cmt_trace_abandon(struct cmt_trace_file *tf);

/* Reason recording stopped, as enum cmt_end_reason, or -1 when it did not. */
int cmt_trace_stop_reason(const struct cmt_trace_file *tf);

#endif
