/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_EVENT_STREAM_H
#define CUMEMTRACE_PRELOAD_EVENT_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "record_commit.h"
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
    uint8_t *chunk;   /* the chunk being filled (its header holds the commit word) */
    uint32_t chain;   /* the record chain's state (format.h, "Integrity") */
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

/* Encodes e into buf (at least CMT_MAX_EVENT_RECORD bytes) with the given
 * delta state, updating it; returns the record length. The first byte, the
 * record type, is left 0: the caller stores e->type there last, to commit. */
_Static_assert(CMT_AUX_COUNT == 4, "cmt_event_encode writes the aux fields out one by one");

static CMT_ALWAYS_INLINE size_t cmt_event_encode(uint8_t *buf, const struct cmt_event *e, uint64_t *prev_ts,
                                                 uint64_t *prev_addr, int64_t *prev_device)
{
    /* Inline, so that in each hook the fields its API fixes (api, kind, the
     * aux fields most APIs never set) are known and their tests vanish. */
    bool device_changed = e->has_device && (int64_t)e->device != *prev_device;
    bool any_aux = (e->aux[0] | e->aux[1] | e->aux[2] | e->aux[3]) != 0;
    uint32_t mask = 0;
    if (e->ts != *prev_ts)
        mask |= CMT_F_TS;
    if (device_changed)
        mask |= CMT_F_DEVICE;
    if (e->addr != *prev_addr)
        mask |= CMT_F_ADDR;
    if (e->size)
        mask |= CMT_F_SIZE;
    if (e->stream)
        mask |= CMT_F_STREAM;
    if (e->result)
        mask |= CMT_F_RESULT;
    if (e->stack)
        mask |= CMT_F_STACK;
    if (e->kind != cmt_api_default_kind(e->api))
        mask |= CMT_F_KIND;
    if (__builtin_expect(any_aux, 0)) {
        if (e->aux[0])
            mask |= CMT_F_AUX0;
        if (e->aux[1])
            mask |= CMT_F_AUX1;
        if (e->aux[2])
            mask |= CMT_F_AUX2;
        if (e->aux[3])
            mask |= CMT_F_AUX3;
    }

    uint8_t *p = buf;
    *p++ = 0; /* the type byte is stored last, by the committer */
    *p++ = e->api;
    p = cmt_varint_put(p, mask);
    if (mask & CMT_F_TS)
        p = cmt_varint_put(p, cmt_zigzag_encode((int64_t)(e->ts - *prev_ts)));
    if (mask & CMT_F_DEVICE)
        p = cmt_varint_put(p, cmt_zigzag_encode(e->device));
    if (mask & CMT_F_ADDR)
        p = cmt_varint_put(p, cmt_zigzag_encode((int64_t)(e->addr - *prev_addr)));
    if (mask & CMT_F_SIZE)
        p = cmt_varint_put(p, e->size);
    if (mask & CMT_F_STREAM)
        p = cmt_varint_put(p, e->stream);
    if (mask & CMT_F_RESULT)
        p = cmt_varint_put(p, (uint64_t)(uint32_t)e->result);
    if (mask & CMT_F_STACK)
        p = cmt_varint_put(p, e->stack);
    if (mask & CMT_F_KIND)
        p = cmt_varint_put(p, e->kind);
    if (__builtin_expect(any_aux, 0)) {
        if (mask & CMT_F_AUX0)
            p = cmt_varint_put(p, e->aux[0]);
        if (mask & CMT_F_AUX1)
            p = cmt_varint_put(p, e->aux[1]);
        if (mask & CMT_F_AUX2)
            p = cmt_varint_put(p, e->aux[2]);
        if (mask & CMT_F_AUX3)
            p = cmt_varint_put(p, e->aux[3]);
    }

    *prev_ts = e->ts;
    *prev_addr = e->addr;
    if (device_changed)
        *prev_device = e->device;
    return (size_t)(p - buf);
}

/* Encodes and commits one record; requires a successful reserve. */
static CMT_ALWAYS_INLINE void cmt_event_stream_append(struct cmt_event_stream *s, const struct cmt_event *e)
{
    uint8_t *rec = s->pos;
    size_t len = cmt_event_encode(rec, e, &s->prev_ts, &s->prev_addr, &s->prev_device);
    len = cmt_record_add_check(rec, len, e->type, &s->chain);
    /* Body first, then the type byte: a reader that sees a nonzero type sees
     * the whole record (format.h, commit protocol). */
    __atomic_store_n(&rec[0], e->type, __ATOMIC_RELEASE);
    s->pos = rec + len;
    cmt_chunk_publish_commit(s->chunk, s->pos, s->chain);
}

#endif
