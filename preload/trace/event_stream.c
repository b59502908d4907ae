/* SPDX-License-Identifier: MIT */
#include "event_stream.h"

bool cmt_event_stream_claim(struct cmt_trace_file *tf, struct cmt_event_stream *s)
{
    uint32_t size = s->next_chunk_size ? s->next_chunk_size : CMT_EVENT_CHUNK_FIRST_SIZE;
    uint64_t claim_ns;
    /* Near the size limit a smaller chunk, down to one record's room. */
    const uint32_t min_size = (CMT_CHUNK_HEADER_SIZE + CMT_MAX_EVENT_RECORD + CMT_CHUNK_ALIGN - 1) &
                              ~(CMT_CHUNK_ALIGN - 1);
    uint8_t *chunk = cmt_trace_claim_chunk_fit(tf, CMT_CHUNK_MAGIC_EVENTS, size, min_size, s->tid, s->chunk_seq,
                                               s->prev_ts, &claim_ns, &size);
    if (!chunk)
        return false;
    /* Threads that allocate a lot get bigger chunks: fewer claims, less lock
     * traffic; quiet threads waste little. */
    if (size < CMT_EVENT_CHUNK_MAX_SIZE)
        s->next_chunk_size = size * 2;
    else
        s->next_chunk_size = size;
    s->chunk_seq++;
    s->chunk = chunk;
    s->chain = ((const struct cmt_chunk_header *)chunk)->header_check;
    s->pos = chunk + CMT_CHUNK_HEADER_SIZE;
    s->end = chunk + size;
    s->prev_ts = claim_ns;
    s->prev_addr = 0;
    s->prev_device = 0;
    return true;
}
