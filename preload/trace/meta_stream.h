/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_META_STREAM_H
#define CUMEMTRACE_PRELOAD_META_STREAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

/* The process-wide metadata stream (strings, modules, stacks, threads...).
 * Rare, so one lock serialises it. Lock order: meta lock, then claim lock. */
struct cmt_meta_stream {
    pthread_mutex_t lock;
    uint8_t *pos;
    uint8_t *end;
    uint8_t *chunk;
    uint32_t chain; /* the record chain's state (format.h, "Integrity") */
    uint32_t chunk_seq;
};

#define CMT_META_CHUNK_FIRST_SIZE (4u << 10)
#define CMT_META_CHUNK_SIZE (64u << 10) /* from the fifth chunk on */
#define CMT_META_RECORD_OVERHEAD 4u /* type byte + 3-byte length */

void cmt_meta_stream_init(struct cmt_meta_stream *m);

/* With m->lock held: room for a record of up to max_payload bytes (at most
 * CMT_MAX_META_RECORD). Returns where the payload goes, or NULL when
 * recording has stopped. */
uint8_t *cmt_meta_begin_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, size_t max_payload);

/* With m->lock held: commits the record begun last; payload_end is one past
 * its last byte. */
void cmt_meta_commit_locked(struct cmt_meta_stream *m, uint8_t type, uint8_t *payload_end);

/* With m->lock held: room for the END record, the last of a trace, taken
 * from what every other record left free (meta_records.c). */
uint8_t *cmt_meta_begin_last_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, size_t max_payload);

/* Ends recording at process exit: cmt_meta_close_trace_locked
 * (meta_records.h, the END record's writer) under m->lock. This and
 * cmt_trace_finish are defined beside it, in meta_records.c. */
void cmt_meta_close_trace(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint64_t end_ts, unsigned reason,
                          int exit_status);
/* For writers without a metadata stream of their own (tests, benchmarks):
 * the same, the END record in a metadata chunk of its own. */
void cmt_trace_finish(struct cmt_trace_file *tf, uint64_t end_ts);

/* Bounds-checked payload builder: for the record writers (meta_records.c),
 * the only part of the shim that builds a metadata payload; the benchmarks'
 * trace builder (bench/trace_builder.c) uses it to make traces by hand. */
struct cmt_payload {
    uint8_t *p;
    uint8_t *end;
    bool overflow;
};

static inline void cmt_payload_varint(struct cmt_payload *b, uint64_t v)
{
    if (b->end - b->p < 10) {
        b->overflow = true;
        return;
    }
    b->p = cmt_varint_put(b->p, v);
}

static inline void cmt_payload_svarint(struct cmt_payload *b, int64_t v)
{
    cmt_payload_varint(b, cmt_zigzag_encode(v));
}

static inline void cmt_payload_bytes(struct cmt_payload *b, const void *data, size_t len)
{
    cmt_payload_varint(b, len);
    if (b->overflow || (size_t)(b->end - b->p) < len) {
        b->overflow = true;
        return;
    }
    memcpy(b->p, data, len);
    b->p += len;
}

#endif
