/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PHASE_RECORD_H
#define CUMEMTRACE_PRELOAD_PHASE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* Phases, marks and steps (CMT_REC_MARK, format.h): what the NVTX injection
 * (nvtx_injection.c) and the public API (cumemtrace.h, phase_api.c) record.
 * No malloc, no stdio, no lock on the common path: a name seen before on
 * this thread is found in a small per-thread cache. */

/* A string kept for the life of the process (NVTX domains and registered
 * strings): its id is looked up again after a fork starts a new trace. */
struct cmt_phase_string {
    uint32_t generation; /* cmt_recorder.generation its id belongs to */
    uint32_t id;
    uint32_t len;
    char text[];
};

/* At load (thread_block.h). */
void cmt_phase_record_init(void);

/* Records a CMT_REC_MARK event of this api (enum cmt_api) on the calling
 * thread. name: the name (len bytes, not terminated) or NULL for none; a
 * registered string may be given instead as name_handle. Returns whether the
 * event was recorded. */
int cmt_phase_record(unsigned api, const char *name, size_t len, struct cmt_phase_string *name_handle,
                     struct cmt_phase_string *domain, uint64_t id);

/* A process-lifetime copy of s, its id in the trace interned (NULL when the
 * recorder cannot run or memory is short). */
struct cmt_phase_string *cmt_phase_string_register(const char *s, size_t len);

/* A fresh process-wide range id (nvtxRangeStart*), never 0. */
uint64_t cmt_phase_next_range_id(void);

#endif
