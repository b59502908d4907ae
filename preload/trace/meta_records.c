/* SPDX-License-Identifier: MIT */
/* Every metadata record the shim writes, one function per type, in the
 * order of enum cmt_meta_type (format.h) and of the reader's switch. Each
 * field is written in the order format.h lists it. */
#include "meta_records.h"

#include "cumemtrace/format.h"
#include "record_commit.h"

/* Room for a record of up to max bytes; the builder over it. */
static bool begin(struct cmt_trace_file *tf, struct cmt_meta_stream *m, size_t max, struct cmt_payload *b)
{
    uint8_t *payload = cmt_meta_begin_locked(tf, m, max);
    if (!payload)
        return false;
    *b = (struct cmt_payload){payload, payload + max, false};
    return true;
}

bool cmt_meta_write_string_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id, const char *text,
                                  size_t len)
{
    struct cmt_payload b;
    if (!begin(tf, m, len + 20, &b))
        return false;
    cmt_payload_varint(&b, id);
    cmt_payload_bytes(&b, text, len);
    cmt_meta_commit_locked(m, CMT_META_STRING, b.p);
    return true;
}

bool cmt_meta_write_process_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                   const struct cmt_meta_process *p)
{
    struct cmt_payload b;
    if (!begin(tf, m, 64 + (size_t)p->argc * 10, &b))
        return false;
    cmt_payload_varint(&b, p->pid);
    cmt_payload_varint(&b, p->ppid);
    cmt_payload_varint(&b, p->exe_id);
    cmt_payload_varint(&b, p->argc);
    for (uint32_t i = 0; i < p->argc; i++)
        cmt_payload_varint(&b, p->arg_ids[i]);
    cmt_payload_varint(&b, p->host_id);
    cmt_payload_svarint(&b, p->rank);
    cmt_payload_varint(&b, p->cwd_id);
    cmt_meta_commit_locked(m, CMT_META_PROCESS, b.p);
    return true;
}

bool cmt_meta_write_module_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                  const struct cmt_meta_module *mod)
{
    struct cmt_payload b;
    if (!begin(tf, m, 5 * 10 + 10 + mod->build_id_len + 10, &b))
        return false;
    cmt_payload_varint(&b, mod->id);
    cmt_payload_varint(&b, mod->path_id);
    cmt_payload_varint(&b, mod->bias);
    cmt_payload_varint(&b, mod->lo);
    cmt_payload_varint(&b, mod->hi);
    cmt_payload_bytes(&b, mod->build_id, mod->build_id_len);
    cmt_payload_varint(&b, mod->ts);
    cmt_meta_commit_locked(m, CMT_META_MODULE, b.p);
    return true;
}

bool cmt_meta_write_stack_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id,
                                 uint32_t modules_known, const uint64_t *frames, unsigned n)
{
    struct cmt_payload b;
    if (!begin(tf, m, 3 * 10 + (size_t)n * 10, &b))
        return false;
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, modules_known);
    cmt_payload_varint(&b, n);
    uint64_t prev = 0;
    for (unsigned i = 0; i < n; i++) {
        cmt_payload_svarint(&b, (int64_t)(frames[i] - prev));
        prev = frames[i];
    }
    cmt_meta_commit_locked(m, CMT_META_STACK, b.p);
    return true;
}

bool cmt_meta_write_thread_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t tid,
                                  uint32_t name_id)
{
    struct cmt_payload b;
    if (!begin(tf, m, 24, &b))
        return false;
    cmt_payload_varint(&b, tid);
    cmt_payload_varint(&b, name_id);
    cmt_meta_commit_locked(m, CMT_META_THREAD, b.p);
    return true;
}

bool cmt_meta_write_frame_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id,
                                 uint32_t function_id, uint32_t file_id, uint32_t line, uint32_t language)
{
    struct cmt_payload b;
    if (!begin(tf, m, 50, &b))
        return false;
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, function_id);
    cmt_payload_varint(&b, file_id);
    cmt_payload_varint(&b, line);
    cmt_payload_varint(&b, language);
    cmt_meta_commit_locked(m, CMT_META_FRAME, b.p);
    return true;
}

bool cmt_meta_write_config_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                  const struct cmt_meta_config *c)
{
    struct cmt_payload b;
    if (!begin(tf, m, 64, &b))
        return false;
    cmt_payload_varint(&b, c->stack_depth);
    cmt_payload_varint(&b, c->free_stacks);
    cmt_payload_varint(&b, c->sample_ms);
    cmt_payload_varint(&b, c->max_size);
    cmt_payload_varint(&b, c->version_id);
    cmt_meta_commit_locked(m, CMT_META_CONFIG, b.p);
    return true;
}

bool cmt_meta_write_device_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, int32_t ordinal,
                                  uint32_t name_id, uint64_t total, const uint8_t *uuid)
{
    struct cmt_payload b;
    if (!begin(tf, m, 64, &b))
        return false;
    cmt_payload_varint(&b, (uint64_t)ordinal);
    cmt_payload_varint(&b, name_id);
    cmt_payload_varint(&b, total);
    if (uuid)
        cmt_payload_bytes(&b, uuid, 16);
    else
        cmt_payload_varint(&b, 0); /* no uuid: zero bytes */
    cmt_meta_commit_locked(m, CMT_META_DEVICE, b.p);
    return true;
}

void cmt_meta_close_trace_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint64_t end_ts,
                                 unsigned reason, int exit_status)
{
    /* Room first (a new chunk may still be claimed), then the seal: no
     * chunk is claimed after it, so the END record's figures are final. */
    const size_t max = 7 * 10;
    _Static_assert(7 * 10 + CMT_META_RECORD_OVERHEAD + CMT_RECORD_CHECK_SIZE <= CMT_META_END_RESERVE,
                   "the END record fits the room every chunk keeps for it");
    uint8_t *payload = cmt_meta_begin_last_locked(tf, m, max);
    struct cmt_trace_seal seal;
    if (!cmt_trace_seal(tf, &seal))
        return;
    if (payload) {
        struct cmt_payload b = {payload, payload + max, false};
        cmt_payload_varint(&b, end_ts);
        cmt_payload_varint(&b, reason);
        cmt_payload_varint(&b, seal.events_dropped);
        cmt_payload_varint(&b, seal.flags);
        cmt_payload_varint(&b, seal.claimed_end);
        cmt_payload_varint(&b, seal.chunks);
        cmt_payload_varint(&b, exit_status >= 0 ? (uint64_t)exit_status + 1 : 0);
        cmt_meta_commit_locked(m, CMT_META_END, b.p);
    }
    cmt_trace_trim(tf);
}

bool cmt_meta_write_note_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint64_t ts,
                                uint32_t source, uint32_t text_id)
{
    struct cmt_payload b;
    if (!begin(tf, m, 32, &b))
        return false;
    cmt_payload_varint(&b, ts);
    cmt_payload_varint(&b, source);
    cmt_payload_varint(&b, text_id);
    cmt_meta_commit_locked(m, CMT_META_NOTE, b.p);
    return true;
}

bool cmt_meta_write_job_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m, const struct cmt_meta_job *j)
{
    struct cmt_payload b;
    if (!begin(tf, m, 8 * 10 + CMT_JOB_MAX_VARS * 2 * 10, &b))
        return false;
    size_t nvars = j->nvars < CMT_JOB_MAX_VARS ? j->nvars : CMT_JOB_MAX_VARS;
    cmt_payload_varint(&b, j->ts);
    cmt_payload_varint(&b, j->source);
    cmt_payload_svarint(&b, j->rank);
    cmt_payload_svarint(&b, j->local_rank);
    cmt_payload_svarint(&b, j->world_size);
    cmt_payload_svarint(&b, j->local_world_size);
    cmt_payload_varint(&b, j->job_id);
    /* A variable whose strings could not be written is left out whole. */
    size_t n = 0;
    for (size_t i = 0; i < nvars; i++)
        n += j->vars[i].name_id && j->vars[i].value_id;
    cmt_payload_varint(&b, n);
    for (size_t i = 0; i < nvars; i++) {
        if (!j->vars[i].name_id || !j->vars[i].value_id)
            continue;
        cmt_payload_varint(&b, j->vars[i].name_id);
        cmt_payload_varint(&b, j->vars[i].value_id);
    }
    cmt_meta_commit_locked(m, CMT_META_JOB, b.p);
    return true;
}

bool cmt_meta_write_allocator_locked(struct cmt_trace_file *tf, struct cmt_meta_stream *m,
                                     const struct cmt_meta_allocator *a)
{
    struct cmt_payload b;
    if (!begin(tf, m, 64, &b))
        return false;
    cmt_payload_varint(&b, a->ts);
    cmt_payload_varint(&b, a->framework);
    cmt_payload_varint(&b, a->version_id);
    cmt_payload_varint(&b, a->state);
    cmt_payload_varint(&b, a->backend_id);
    cmt_payload_varint(&b, a->alloc_conf_id);
    cmt_payload_varint(&b, a->cuda_alloc_conf_id);
    cmt_meta_commit_locked(m, CMT_META_ALLOCATOR, b.p);
    return true;
}

/* ---- the END record under the lock, and for writers without a stream ---- */

void cmt_meta_close_trace(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint64_t end_ts, unsigned reason,
                          int exit_status)
{
    pthread_mutex_lock(&m->lock);
    cmt_meta_close_trace_locked(tf, m, end_ts, reason, exit_status);
    pthread_mutex_unlock(&m->lock);
}

void cmt_trace_finish(struct cmt_trace_file *tf, uint64_t end_ts)
{
    struct cmt_meta_stream m;
    cmt_meta_stream_init(&m);
    cmt_meta_close_trace(tf, &m, end_ts, CMT_END_EXIT, -1);
    pthread_mutex_destroy(&m.lock);
}
