/* SPDX-License-Identifier: MIT */
#include "trace_builder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta_stream.h" /* cmt_payload_* and the record overhead: the shim's own helpers */

#define BUILDER_MAX_THREADS 4096u

struct open_chunk {
    uint8_t *buf;      /* whole chunk, header included */
    uint64_t offset;   /* where it goes in the file */
    uint32_t size;
    uint32_t used;     /* bytes of header and records */
    uint32_t chain;    /* the record chain's state (format.h, "Integrity") */
};

struct thread_stream {
    uint32_t tid;
    uint32_t seq;
    uint32_t next_size;
    uint64_t prev_ts, prev_addr;
    int64_t prev_device;
    struct open_chunk chunk;
};

struct string_entry {
    char *text;
    uint32_t id;
};

struct cmt_trace_builder {
    int fd;
    struct cmt_file_header header;
    uint64_t end;     /* offset after the last claimed chunk */
    uint64_t now;     /* latest timestamp seen: claim time of metadata chunks */
    struct thread_stream *threads;
    size_t n_threads;
    struct open_chunk meta;
    uint32_t meta_seq;
    struct string_entry *strings; /* open addressing by text */
    size_t strings_cap, n_strings;
    uint32_t n_frames, n_stacks, n_modules;
    uint64_t chunks;     /* chunks claimed: the END record says how many */
    bool end_requested;  /* cmt_tb_end was called: the END record is written at close */
    uint64_t end_ts, end_reason;
    int exit_status; /* + 1 in the END record when set (cmt_tb_exit_status); 0: none written */
    uint64_t zero_tail;
    bool failed;
};

static int write_at(struct cmt_trace_builder *b, const void *data, size_t len, uint64_t off)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t w = pwrite(b->fd, p, len, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            b->failed = true;
            return -1;
        }
        p += w;
        len -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int flush_chunk(struct cmt_trace_builder *b, struct open_chunk *c)
{
    if (!c->buf)
        return 0;
    /* The unused tail stays zero: "not committed", where a reader stops. */
    int rc = write_at(b, c->buf, c->size, c->offset);
    free(c->buf);
    c->buf = NULL;
    return rc;
}

static int claim(struct cmt_trace_builder *b, struct open_chunk *c, uint32_t magic, uint32_t size, uint32_t tid,
                 uint32_t seq, uint64_t claim_ns)
{
    if (flush_chunk(b, c) != 0)
        return -1;
    c->buf = calloc(1, size);
    if (!c->buf) {
        b->failed = true;
        return -1;
    }
    c->offset = b->end;
    c->size = size;
    c->used = CMT_CHUNK_HEADER_SIZE;
    b->end += size;
    b->chunks++;
    struct cmt_chunk_header h = {
        .magic = magic, .size = size, .claim_ns = claim_ns, .tid = tid, .thread_seq = seq, .base_addr = 0};
    h.header_check = cmt_chunk_header_check(c->offset, &h);
    h.commit = cmt_commit_pack(CMT_CHUNK_HEADER_SIZE, h.header_check);
    c->chain = h.header_check;
    memcpy(c->buf, &h, sizeof h);
    return 0;
}

struct cmt_trace_builder *cmt_tb_create(const char *path, const struct cmt_trace_builder_options *opt)
{
    struct cmt_trace_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (b->fd < 0) {
        free(b);
        return NULL;
    }
    memcpy(b->header.magic, CMT_FILE_MAGIC, CMT_FILE_MAGIC_SIZE);
    b->header.version_major = CMT_VERSION_MAJOR;
    b->header.version_minor = CMT_VERSION_MINOR;
    b->header.header_size = CMT_FILE_HEADER_SIZE;
    b->header.endian_check = CMT_ENDIAN_CHECK;
    b->header.flags = opt->clean_exit ? CMT_FILE_FLAG_CLEAN_EXIT : 0;
    b->header.pid = opt->pid;
    b->header.start_monotonic_ns = opt->start_monotonic_ns;
    b->header.start_realtime_ns = opt->start_realtime_ns;
    b->header.pointer_size = 8;
    b->end = CMT_FILE_HEADER_SIZE;
    b->zero_tail = opt->zero_tail;
    b->now = opt->start_monotonic_ns;
    b->threads = calloc(BUILDER_MAX_THREADS, sizeof *b->threads);
    b->strings_cap = 1024;
    b->strings = calloc(b->strings_cap, sizeof *b->strings);
    if (!b->threads || !b->strings) {
        free(b->threads);
        free(b->strings);
        close(b->fd);
        free(b);
        return NULL;
    }
    return b;
}

/* ---- metadata ---------------------------------------------------------------- */

/* Room for a record of up to max_payload bytes; returns where the payload
 * goes. */
static uint8_t *meta_begin(struct cmt_trace_builder *b, size_t max_payload)
{
    size_t need = max_payload + CMT_META_RECORD_OVERHEAD + CMT_RECORD_CHECK_SIZE + CMT_META_END_RESERVE;
    if (!b->meta.buf || b->meta.size - b->meta.used < need) {
        if (claim(b, &b->meta, CMT_CHUNK_MAGIC_META, CMT_META_CHUNK_SIZE, 0, b->meta_seq++, b->now) != 0)
            return NULL;
    }
    return b->meta.buf + b->meta.used + CMT_META_RECORD_OVERHEAD;
}

static void meta_commit(struct cmt_trace_builder *b, uint8_t type, const struct cmt_payload *p)
{
    uint8_t *rec = b->meta.buf + b->meta.used;
    size_t len = (size_t)(p->p - (rec + CMT_META_RECORD_OVERHEAD));
    rec[1] = (uint8_t)(0x80 | (len & 0x7f));
    rec[2] = (uint8_t)(0x80 | ((len >> 7) & 0x7f));
    rec[3] = (uint8_t)((len >> 14) & 0x7f);
    size_t rec_len = cmt_record_add_check(rec, CMT_META_RECORD_OVERHEAD + len, type, &b->meta.chain);
    rec[0] = type;
    b->meta.used += (uint32_t)rec_len;
    cmt_chunk_publish_commit(b->meta.buf, b->meta.buf + b->meta.used, b->meta.chain);
}

#define META_BEGIN(b, max, pl)                                   \
    uint8_t *pl##_start = meta_begin((b), (max));                \
    if (!pl##_start)                                             \
        return 0;                                                \
    struct cmt_payload pl = {pl##_start, pl##_start + (max), false}

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int strings_grow(struct cmt_trace_builder *b)
{
    size_t cap = b->strings_cap * 2;
    struct string_entry *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < b->strings_cap; i++) {
        if (!b->strings[i].text)
            continue;
        size_t k = hash_text(b->strings[i].text) & (cap - 1);
        while (t[k].text)
            k = (k + 1) & (cap - 1);
        t[k] = b->strings[i];
    }
    free(b->strings);
    b->strings = t;
    b->strings_cap = cap;
    return 0;
}

uint32_t cmt_tb_string(struct cmt_trace_builder *b, const char *text)
{
    if (!text)
        return 0;
    if ((b->n_strings + 1) * 2 > b->strings_cap && strings_grow(b) != 0)
        return 0;
    size_t k = hash_text(text) & (b->strings_cap - 1);
    while (b->strings[k].text) {
        if (!strcmp(b->strings[k].text, text))
            return b->strings[k].id;
        k = (k + 1) & (b->strings_cap - 1);
    }
    size_t len = strlen(text);
    if (len + 20 > CMT_MAX_META_RECORD)
        return 0;
    META_BEGIN(b, len + 20, pl);
    uint32_t id = (uint32_t)b->n_strings + 1;
    cmt_payload_varint(&pl, id);
    cmt_payload_bytes(&pl, text, len);
    meta_commit(b, CMT_META_STRING, &pl);
    b->strings[k].text = strdup(text);
    b->strings[k].id = id;
    b->n_strings++;
    return id;
}

void cmt_tb_process(struct cmt_trace_builder *b, uint64_t pid, uint64_t ppid, const char *exe, int argc,
                    const char *const *argv, const char *hostname, int64_t rank, const char *cwd)
{
    uint32_t exe_id = cmt_tb_string(b, exe), host_id = cmt_tb_string(b, hostname), cwd_id = cmt_tb_string(b, cwd);
    uint32_t arg_ids[64];
    if (argc > 64)
        argc = 64;
    for (int i = 0; i < argc; i++)
        arg_ids[i] = cmt_tb_string(b, argv[i]);
    uint8_t *start = meta_begin(b, 1024);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + 1024, false};
    cmt_payload_varint(&pl, pid);
    cmt_payload_varint(&pl, ppid);
    cmt_payload_varint(&pl, exe_id);
    cmt_payload_varint(&pl, (uint64_t)argc);
    for (int i = 0; i < argc; i++)
        cmt_payload_varint(&pl, arg_ids[i]);
    cmt_payload_varint(&pl, host_id);
    cmt_payload_svarint(&pl, rank);
    cmt_payload_varint(&pl, cwd_id);
    meta_commit(b, CMT_META_PROCESS, &pl);
}

uint64_t cmt_tb_frame(struct cmt_trace_builder *b, const char *function, const char *file, uint32_t line)
{
    return cmt_tb_frame_language(b, function, file, line, 0);
}

uint64_t cmt_tb_frame_language(struct cmt_trace_builder *b, const char *function, const char *file, uint32_t line,
                               uint32_t language)
{
    uint32_t fn = cmt_tb_string(b, function), fl = cmt_tb_string(b, file);
    META_BEGIN(b, 64, pl);
    uint32_t id = ++b->n_frames;
    cmt_payload_varint(&pl, id);
    cmt_payload_varint(&pl, fn);
    cmt_payload_varint(&pl, fl);
    cmt_payload_varint(&pl, line);
    cmt_payload_varint(&pl, language);
    meta_commit(b, CMT_META_FRAME, &pl);
    return CMT_FRAME_SYNTHETIC_BIT | id;
}

uint32_t cmt_tb_stack(struct cmt_trace_builder *b, const uint64_t *frames, uint32_t n)
{
    if (n > CMT_MAX_STACK_DEPTH)
        n = CMT_MAX_STACK_DEPTH;
    size_t max = 40 + (size_t)n * 10;
    META_BEGIN(b, max, pl);
    uint32_t id = ++b->n_stacks;
    cmt_payload_varint(&pl, id);
    cmt_payload_varint(&pl, b->n_modules);
    cmt_payload_varint(&pl, n);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        cmt_payload_svarint(&pl, (int64_t)(frames[i] - prev));
        prev = frames[i];
    }
    meta_commit(b, CMT_META_STACK, &pl);
    return id;
}

uint32_t cmt_tb_module(struct cmt_trace_builder *b, const char *path, uint64_t bias, uint64_t lo, uint64_t hi,
                       const uint8_t *build_id, size_t build_id_len)
{
    uint32_t path_id = cmt_tb_string(b, path);
    META_BEGIN(b, 128, pl);
    uint32_t id = ++b->n_modules;
    cmt_payload_varint(&pl, id);
    cmt_payload_varint(&pl, path_id);
    cmt_payload_varint(&pl, bias);
    cmt_payload_varint(&pl, lo);
    cmt_payload_varint(&pl, hi);
    /* No build-id: NULL and 0 (memcpy must not see a NULL source, even empty) */
    static const uint8_t none[1];
    cmt_payload_bytes(&pl, build_id ? build_id : none, build_id ? build_id_len : 0);
    cmt_payload_varint(&pl, b->now);
    meta_commit(b, CMT_META_MODULE, &pl);
    return id;
}

void cmt_tb_thread(struct cmt_trace_builder *b, uint32_t tid, const char *name)
{
    uint32_t name_id = cmt_tb_string(b, name);
    uint8_t *start = meta_begin(b, 32);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + 32, false};
    cmt_payload_varint(&pl, tid);
    cmt_payload_varint(&pl, name_id);
    meta_commit(b, CMT_META_THREAD, &pl);
}

void cmt_tb_note(struct cmt_trace_builder *b, uint64_t ts, unsigned source, const char *text)
{
    uint32_t text_id = cmt_tb_string(b, text);
    uint8_t *start = meta_begin(b, 32);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + 32, false};
    cmt_payload_varint(&pl, ts);
    cmt_payload_varint(&pl, source);
    cmt_payload_varint(&pl, text_id);
    meta_commit(b, CMT_META_NOTE, &pl);
}

void cmt_tb_allocator(struct cmt_trace_builder *b, uint64_t ts, unsigned framework, const char *version,
                      unsigned state, const char *backend, const char *alloc_conf, const char *cuda_alloc_conf)
{
    uint32_t version_id = version ? cmt_tb_string(b, version) : 0;
    uint32_t backend_id = backend ? cmt_tb_string(b, backend) : 0;
    uint32_t alloc_conf_id = alloc_conf && *alloc_conf ? cmt_tb_string(b, alloc_conf) : 0;
    uint32_t cuda_alloc_conf_id = cuda_alloc_conf && *cuda_alloc_conf ? cmt_tb_string(b, cuda_alloc_conf) : 0;
    uint8_t *start = meta_begin(b, 64);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + 64, false};
    cmt_payload_varint(&pl, ts);
    cmt_payload_varint(&pl, framework);
    cmt_payload_varint(&pl, version_id);
    cmt_payload_varint(&pl, state);
    cmt_payload_varint(&pl, backend_id);
    cmt_payload_varint(&pl, alloc_conf_id);
    cmt_payload_varint(&pl, cuda_alloc_conf_id);
    meta_commit(b, CMT_META_ALLOCATOR, &pl);
}

void cmt_tb_job(struct cmt_trace_builder *b, const struct cmt_tb_job_desc *j)
{
    uint32_t job_id = j->job_id && *j->job_id ? cmt_tb_string(b, j->job_id) : 0;
    uint32_t ids[2 * CMT_JOB_MAX_VARS];
    size_t n = j->nvars < CMT_JOB_MAX_VARS ? j->nvars : CMT_JOB_MAX_VARS;
    for (size_t i = 0; i < n; i++) {
        ids[2 * i] = cmt_tb_string(b, j->names[i]);
        ids[2 * i + 1] = cmt_tb_string(b, j->values[i]);
    }
    size_t max = 8 * 10 + 2 * CMT_JOB_MAX_VARS * 10;
    uint8_t *start = meta_begin(b, max);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + max, false};
    cmt_payload_varint(&pl, j->ts);
    cmt_payload_varint(&pl, j->source);
    cmt_payload_svarint(&pl, j->rank);
    cmt_payload_svarint(&pl, j->local_rank);
    cmt_payload_svarint(&pl, j->world_size);
    cmt_payload_svarint(&pl, j->local_world_size);
    cmt_payload_varint(&pl, job_id);
    cmt_payload_varint(&pl, n);
    for (size_t i = 0; i < 2 * n; i++)
        cmt_payload_varint(&pl, ids[i]);
    meta_commit(b, CMT_META_JOB, &pl);
}

void cmt_tb_device(struct cmt_trace_builder *b, uint32_t ordinal, const char *name, uint64_t total)
{
    uint32_t name_id = cmt_tb_string(b, name);
    uint8_t *start = meta_begin(b, 64);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + 64, false};
    static const uint8_t uuid[16];
    cmt_payload_varint(&pl, ordinal);
    cmt_payload_varint(&pl, name_id);
    cmt_payload_varint(&pl, total);
    cmt_payload_bytes(&pl, uuid, sizeof uuid);
    meta_commit(b, CMT_META_DEVICE, &pl);
}

void cmt_tb_end(struct cmt_trace_builder *b, uint64_t ts, uint64_t reason)
{
    if (ts > b->now)
        b->now = ts;
    b->end_requested = true;
    b->end_ts = ts;
    b->end_reason = reason;
}

void cmt_tb_exit_status(struct cmt_trace_builder *b, int status)
{
    b->exit_status = status + 1;
}

/* The END record, written last as the shim writes it: it repeats the final
 * flags, claimed_end and number of chunks (format.h). */
static void write_end(struct cmt_trace_builder *b)
{
    uint8_t *start = meta_begin(b, 64);
    if (!start)
        return;
    struct cmt_payload pl = {start, start + 64, false};
    cmt_payload_varint(&pl, b->end_ts);
    cmt_payload_varint(&pl, b->end_reason);
    cmt_payload_varint(&pl, 0);
    cmt_payload_varint(&pl, b->header.flags);
    cmt_payload_varint(&pl, b->end);
    cmt_payload_varint(&pl, b->chunks);
    if (b->exit_status)
        cmt_payload_varint(&pl, (uint64_t)b->exit_status);
    meta_commit(b, CMT_META_END, &pl);
}

/* ---- events ---------------------------------------------------------------------- */

static struct thread_stream *thread_of(struct cmt_trace_builder *b, uint32_t tid)
{
    size_t k = (tid * 2654435761u) % BUILDER_MAX_THREADS;
    for (size_t probes = 0; probes < BUILDER_MAX_THREADS; probes++, k = (k + 1) % BUILDER_MAX_THREADS) {
        struct thread_stream *t = &b->threads[k];
        if (t->next_size == 0) {
            if (b->n_threads + 1 >= BUILDER_MAX_THREADS)
                return NULL;
            t->tid = tid;
            t->next_size = CMT_EVENT_CHUNK_FIRST_SIZE;
            b->n_threads++;
            return t;
        }
        if (t->tid == tid)
            return t;
    }
    return NULL;
}

static int append_event(struct cmt_trace_builder *b, uint32_t tid, const struct cmt_event *e, int killed_at);

int cmt_tb_event(struct cmt_trace_builder *b, uint32_t tid, const struct cmt_event *e)
{
    return append_event(b, tid, e, -1);
}

int cmt_tb_event_killed(struct cmt_trace_builder *b, uint32_t tid, const struct cmt_event *e,
                        enum cmt_tb_kill_point at)
{
    return append_event(b, tid, e, (int)at);
}

/* killed_at: -1 a whole record, else enum cmt_tb_kill_point. */
static int append_event(struct cmt_trace_builder *b, uint32_t tid, const struct cmt_event *e, int killed_at)
{
    if (b->failed || e->ts < b->now)
        return -1;
    b->now = e->ts;
    struct thread_stream *t = thread_of(b, tid);
    if (!t)
        return -1;
    struct open_chunk *c = &t->chunk;
    if (!c->buf || c->size - c->used < CMT_MAX_EVENT_RECORD) {
        /* Claimed at this event's time, as the shim claims before it takes
         * the event's timestamp: W1 and W2 hold. */
        if (claim(b, c, CMT_CHUNK_MAGIC_EVENTS, t->next_size, tid, t->seq++, e->ts) != 0)
            return -1;
        if (t->next_size < CMT_EVENT_CHUNK_MAX_SIZE)
            t->next_size *= 2;
        t->prev_ts = e->ts;
        t->prev_addr = 0;
        t->prev_device = 0;
    }
    uint8_t *rec = c->buf + c->used;
    size_t len = cmt_event_encode(rec, e, &t->prev_ts, &t->prev_addr, &t->prev_device);
    len = cmt_record_add_check(rec, len, e->type, &c->chain);
    if (killed_at == CMT_TB_KILLED_BEFORE_TYPE)
        return 0;
    rec[0] = e->type;
    c->used += (uint32_t)len;
    if (killed_at == CMT_TB_KILLED_BEFORE_COMMIT)
        return 0;
    cmt_chunk_publish_commit(c->buf, c->buf + c->used, c->chain);
    return 0;
}

uint64_t cmt_tb_size(const struct cmt_trace_builder *b)
{
    return b->end;
}

int cmt_tb_close(struct cmt_trace_builder *b)
{
    if (b->end_requested)
        write_end(b);
    int rc = b->failed ? -1 : 0;
    for (size_t i = 0; i < BUILDER_MAX_THREADS; i++)
        if (flush_chunk(b, &b->threads[i].chunk) != 0)
            rc = -1;
    if (flush_chunk(b, &b->meta) != 0)
        rc = -1;
    b->header.claimed_end = cmt_checked_word(b->end, CMT_HEADER_CLAIMED_END_OFFSET);
    b->header.events_dropped = cmt_checked_word(0, CMT_HEADER_EVENTS_DROPPED_OFFSET);
    uint32_t flags = b->header.flags;
    b->header.flags = cmt_checked_flags(flags);
    b->header.header_check = cmt_file_header_check(&b->header);
    uint8_t page[CMT_FILE_HEADER_SIZE] = {0};
    memcpy(page, &b->header, sizeof b->header);
    if (write_at(b, page, sizeof page, 0) != 0 || ftruncate(b->fd, (off_t)(b->end + b->zero_tail)) != 0)
        rc = -1;
    if (close(b->fd) != 0)
        rc = -1;
    for (size_t i = 0; i < b->strings_cap; i++)
        free(b->strings[i].text);
    free(b->strings);
    free(b->threads);
    free(b);
    return rc;
}
