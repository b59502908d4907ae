/* SPDX-License-Identifier: MIT */
#include "event_stream.h"

_Static_assert(CMT_AUX_COUNT == 4, "cmt_event_encode writes the aux fields out one by one");

size_t cmt_event_encode(uint8_t *buf, const struct cmt_event *e, uint64_t *prev_ts, uint64_t *prev_addr,
                        int64_t *prev_device)
{
    /* This runs for every event; most events have no aux field at all. */
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

bool cmt_event_stream_claim(struct cmt_trace_file *tf, struct cmt_event_stream *s)
{
    uint32_t size = s->next_chunk_size ? s->next_chunk_size : CMT_EVENT_CHUNK_FIRST_SIZE;
    uint64_t claim_ns;
    uint8_t *chunk = cmt_trace_claim_chunk(tf, CMT_CHUNK_MAGIC_EVENTS, size, s->tid, s->chunk_seq, &claim_ns);
    if (!chunk)
        return false;
    /* Threads that allocate a lot get bigger chunks: fewer claims, less lock
     * traffic; quiet threads waste little. */
    if (size < CMT_EVENT_CHUNK_MAX_SIZE)
        s->next_chunk_size = size * 2;
    else
        s->next_chunk_size = size;
    s->chunk_seq++;
    s->pos = chunk + CMT_CHUNK_HEADER_SIZE;
    s->end = chunk + size;
    s->prev_ts = claim_ns;
    s->prev_addr = 0;
    s->prev_device = 0;
    return true;
}

void cmt_event_stream_append(struct cmt_event_stream *s, const struct cmt_event *e)
{
    uint8_t *rec = s->pos;
    size_t len = cmt_event_encode(rec, e, &s->prev_ts, &s->prev_addr, &s->prev_device);
    /* Body first, then the type byte: a reader that sees a nonzero type sees
     * the whole record (format.h, commit protocol). */
    __atomic_store_n(&rec[0], e->type, __ATOMIC_RELEASE);
    s->pos = rec + len;
}
