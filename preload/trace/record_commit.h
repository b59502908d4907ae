/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_RECORD_COMMIT_H
#define CUMEMTRACE_PRELOAD_RECORD_COMMIT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cumemtrace/format.h"

/* The integrity half of committing a record (format.h, "Integrity"), shared
 * by the event and metadata streams: the record's check, then, after its
 * type byte, the chunk's commit word. */

#define CMT_ALWAYS_INLINE inline __attribute__((always_inline))

/* Appends the check of an encoded record of len bytes at rec (its type byte
 * still 0) and advances *chain; returns the record's length with the check.
 * The caller then stores the type byte, then the commit word. */
static CMT_ALWAYS_INLINE size_t cmt_record_add_check(uint8_t *rec, size_t len, uint8_t type, uint32_t *chain)
{
    uint32_t state = cmt_record_chain(*chain, type, rec + 1, len - 1);
    uint16_t check = cmt_record_check16(state);
    memcpy(rec + len, &check, sizeof check);
    *chain = state;
    return len + CMT_RECORD_CHECK_SIZE;
}

/* Publishes how far a chunk's committed records reach (format.h, commit
 * word). After the type byte: a reader that trusts the word finds every
 * record below it committed. */
static CMT_ALWAYS_INLINE void cmt_chunk_publish_commit(uint8_t *chunk, const uint8_t *end, uint32_t chain)
{
    struct cmt_chunk_header *h = (struct cmt_chunk_header *)chunk;
    __atomic_store_n(&h->commit, cmt_commit_pack((uint32_t)(end - chunk), chain), __ATOMIC_RELAXED);
}

#endif
