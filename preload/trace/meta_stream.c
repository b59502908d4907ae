/* SPDX-License-Identifier: MIT */
#include "meta_stream.h"

#include "record_commit.h"

void cmt_meta_stream_init(struct cmt_meta_stream *m)
{
    pthread_mutex_init(&m->lock, NULL);
    m->pos = m->end = m->chunk = NULL;
    m->chain = 0;
    m->chunk_seq = 0;
}

/* Room for a record of max_payload bytes, keeping keep bytes free after it. */
static uint8_t *begin_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, size_t max_payload,
                             size_t keep)
{
    if (max_payload > CMT_MAX_META_RECORD)
        return NULL;
    size_t need = max_payload + CMT_META_RECORD_OVERHEAD + CMT_RECORD_CHECK_SIZE + keep;
    if (!m->pos || (size_t)(m->end - m->pos) < need) {
        uint64_t claim_ns;
        /* Near the size limit a smaller chunk, down to this record's room. */
        uint32_t min_size = (uint32_t)(CMT_CHUNK_HEADER_SIZE + need + CMT_CHUNK_ALIGN - 1) & ~(CMT_CHUNK_ALIGN - 1);
        /* 4 KiB doubling to 64 KiB: a small CUMEMTRACE_MAX_SIZE is not
         * taken whole by the metadata, leaving events no room. */
        uint32_t size = CMT_META_CHUNK_FIRST_SIZE << (m->chunk_seq < 4 ? m->chunk_seq : 4);
        if (size < min_size)
            size = min_size;
        uint8_t *chunk = cmt_trace_claim_chunk_fit(tf, CMT_CHUNK_MAGIC_META, size, min_size, 0, m->chunk_seq, 0,
                                                   &claim_ns, &size);
        if (!chunk)
            return NULL;
        m->chunk_seq++;
        m->chunk = chunk;
        m->chain = ((const struct cmt_chunk_header *)chunk)->header_check;
        m->pos = chunk + CMT_CHUNK_HEADER_SIZE;
        m->end = chunk + size;
    }
    return m->pos + CMT_META_RECORD_OVERHEAD;
}

uint8_t *cmt_meta_begin_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, size_t max_payload)
{
    /* Every record leaves room for the END record: it is written when
     * recording may have stopped, and no new chunk can be had then. */
    return begin_locked(tf, m, max_payload, CMT_META_END_RESERVE);
}

void cmt_meta_commit_locked(struct cmt_meta_stream *m, uint8_t type, uint8_t *payload_end)
{
    uint8_t *rec = m->pos;
    size_t len = (size_t)(payload_end - (rec + CMT_META_RECORD_OVERHEAD));
    /* Fixed 3-byte LEB128 (non-minimal encodings are valid): the length is
     * known only after the payload is built in place. */
    rec[1] = (uint8_t)(0x80 | (len & 0x7f));
    rec[2] = (uint8_t)(0x80 | ((len >> 7) & 0x7f));
    rec[3] = (uint8_t)((len >> 14) & 0x7f);
    size_t rec_len = cmt_record_add_check(rec, (size_t)(payload_end - rec), type, &m->chain);
    __atomic_store_n(&rec[0], type, __ATOMIC_RELEASE);
    m->pos = rec + rec_len;
    cmt_chunk_publish_commit(m->chunk, m->pos, m->chain);
}

uint8_t *cmt_meta_begin_last_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, size_t max_payload)
{
    return begin_locked(tf, m, max_payload, 0);
}
