/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_EVENT_STREAM_H
#define CUMEMTRACE_PRELOAD_EVENT_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_file.h"

/* One event as a hook reports it, before encoding. */
struct cmt_event {
    uint8_t type; /* enum cmt_record_type */
    uint8_t api;  /* enum cmt_api */
    uint8_t kind; /* enum cmt_kind */
    bool has_device;
    int32_t device;
    int32_t result;
    uint64_t ts;
    uint64_t addr;
    uint64_t size;
    uint64_t stream;
    uint64_t stack;
    uint64_t aux[CMT_AUX_COUNT];
};

/* A thread's event stream: the chunk it is filling and the delta state of
 * the encoding. Lives in thread-local storage; no locks on the append path. */
struct cmt_event_stream {
    uint8_t *pos;
    uint8_t *end;
    uint64_t prev_ts;
    uint64_t prev_addr;
    int64_t prev_device;
    uint32_t tid;
    uint32_t chunk_seq;
    uint32_t next_chunk_size;
};

#define CMT_EVENT_CHUNK_FIRST_SIZE 4096u
#define CMT_EVENT_CHUNK_MAX_SIZE (256u << 10)

/* Claims the stream's next chunk (the slow path of cmt_event_stream_reserve). */
bool cmt_event_stream_claim(struct cmt_trace_file *tf, struct cmt_event_stream *s);

/* Makes sure the stream has room for one more record, claiming a new chunk if
 * needed. Call it BEFORE taking the event's timestamp: a new chunk's claim
 * time must not be later than the events in it (format.h, W1). Returns false
 * when recording has stopped. Inline: on every recorded call. */
static inline bool cmt_event_stream_reserve(struct cmt_trace_file *tf, struct cmt_event_stream *s)
{
    if (__builtin_expect(s->pos && (size_t)(s->end - s->pos) >= CMT_MAX_EVENT_RECORD, 1))
        return true;
    return cmt_event_stream_claim(tf, s);
}

/* Encodes and commits one record; requires a successful reserve. */
void cmt_event_stream_append(struct cmt_event_stream *s, const struct cmt_event *e);

/* Encodes e into buf (at least CMT_MAX_EVENT_RECORD bytes) with the given
 * delta state, updating it; returns the record length. The first byte, the
 * record type, is left 0: the caller stores e->type there last, to commit.
 * Exposed for tests. */
size_t cmt_event_encode(uint8_t *buf, const struct cmt_event *e, uint64_t *prev_ts, uint64_t *prev_addr,
                        int64_t *prev_device);

#endif
