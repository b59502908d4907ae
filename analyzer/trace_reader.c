/* SPDX-License-Identifier: MIT */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define READER_MAX_FRAMES 1024u

struct cursor {
    const uint8_t *pos;
    const uint8_t *end;
    uint64_t chunk_off;
    bool cut_by_eof;
    uint64_t prev_ts;
    uint64_t prev_addr;
    int64_t prev_device;
    uint32_t tid;
    struct cmt_event_in next;
};

struct cmt_reader {
    const uint8_t *data;
    size_t size;
    bool mapped;
    struct cmt_trace_info info;
    uint64_t next_chunk;
    bool chunks_done;
    uint64_t last_claim_ns;
    struct cursor **heap;
    size_t heap_len;
    size_t heap_cap;
    struct cmt_reader_stats stats;
    const struct cmt_reader_callbacks *cb;
    void *ctx;
    bool stop_requested;
    bool warned_order;
    bool truncated;
    char error[CMT_READER_MESSAGE_MAX];
    char warnings[CMT_READER_MAX_WARNINGS][CMT_READER_MESSAGE_MAX];
    size_t n_warnings;
    uint64_t frames[READER_MAX_FRAMES];
};

static void set_error(struct cmt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warning(struct cmt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_error(struct cmt_reader *r, const char *fmt, ...)
{
    if (r->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

static void add_warning(struct cmt_reader *r, const char *fmt, ...)
{
    if (r->n_warnings == CMT_READER_MAX_WARNINGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->n_warnings], CMT_READER_MESSAGE_MAX, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < r->n_warnings; i++)
        if (!strcmp(r->warnings[i], r->warnings[r->n_warnings]))
            return;
    r->n_warnings++;
}

/* ---- opening -------------------------------------------------------------- */

static int validate_header(struct cmt_reader *r, char *err, size_t errlen)
{
    if (r->size == 0) {
        snprintf(err, errlen, "empty file: the traced process stopped before it wrote the trace header");
        return -EINVAL;
    }
    if (r->size < sizeof(struct cmt_file_header) ||
        memcmp(r->data, CMT_FILE_MAGIC, CMT_FILE_MAGIC_SIZE) != 0) {
        bool zeros = true;
        for (size_t i = 0; i < CMT_FILE_MAGIC_SIZE && i < r->size; i++)
            zeros = zeros && r->data[i] == 0;
        if (zeros && r->size >= CMT_FILE_MAGIC_SIZE)
            snprintf(err, errlen, "no trace header: the traced process stopped while creating the file");
        else
            snprintf(err, errlen, "not a cumemtrace trace (no CUMEMTRC magic at the start)");
        return -EINVAL;
    }
    struct cmt_file_header h;
    memcpy(&h, r->data, sizeof h);
    if (h.endian_check != CMT_ENDIAN_CHECK) {
        snprintf(err, errlen, "written on a machine of another byte order; not supported");
        return -EINVAL;
    }
    if (h.version_major > CMT_VERSION_MAJOR) {
        snprintf(err, errlen,
                 "written by a newer cumemtrace (trace format %u.%u); this analyzer reads format %u.x: "
                 "upgrade cumemtrace",
                 h.version_major, h.version_minor, CMT_VERSION_MAJOR);
        return -EPROTONOSUPPORT;
    }
    if (h.version_major < 1 || h.header_size < sizeof h || h.header_size % CMT_CHUNK_ALIGN ||
        h.header_size > (1u << 20)) {
        snprintf(err, errlen, "damaged trace header (version %u, header size %u)", h.version_major,
                 h.header_size);
        return -EINVAL;
    }
    r->info.version_major = h.version_major;
    r->info.version_minor = h.version_minor;
    r->info.flags = h.flags;
    r->info.pid = h.pid;
    r->info.start_monotonic_ns = h.start_monotonic_ns;
    r->info.start_realtime_ns = h.start_realtime_ns;
    r->info.events_dropped = h.events_dropped;
    r->info.file_size = r->size;
    r->next_chunk = h.header_size;
    /* claimed_end is where the writer's last chunk ended: a shorter file lost
     * its tail (a partial copy), even when the cut falls between chunks. */
    if (h.claimed_end > r->size) {
        r->truncated = true;
        add_warning(r, "trace is truncated: %llu bytes of it are missing; events up to the cut are analysed",
                    (unsigned long long)(h.claimed_end - r->size));
    }
    return 0;
}

int cmt_reader_open_memory(const void *data, size_t size, struct cmt_reader **out, char *err, size_t errlen)
{
    struct cmt_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    r->data = data;
    r->size = size;
    int rc = validate_header(r, err, errlen);
    if (rc != 0) {
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int cmt_reader_open(const char *path, struct cmt_reader **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open: %s", strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err, errlen, "not a regular file");
        return -EINVAL;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *data = NULL;
    if (size > 0) {
        data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            int e = errno;
            close(fd);
            snprintf(err, errlen, "cannot map: %s", strerror(e));
            return -e;
        }
        /* One pass, front to back. */
        madvise((void *)data, size, MADV_SEQUENTIAL);
    }
    close(fd);
    int rc = cmt_reader_open_memory(data, size, out, err, errlen);
    if (rc != 0) {
        if (data)
            munmap((void *)data, size);
        return rc;
    }
    (*out)->mapped = true;
    return 0;
}

const struct cmt_trace_info *cmt_reader_info(const struct cmt_reader *r)
{
    return &r->info;
}

bool cmt_reader_truncated(const struct cmt_reader *r)
{
    return r->truncated;
}

const char *cmt_reader_error(const struct cmt_reader *r)
{
    return r->error[0] ? r->error : NULL;
}

size_t cmt_reader_warning_count(const struct cmt_reader *r)
{
    return r->n_warnings;
}

const char *cmt_reader_warning(const struct cmt_reader *r, size_t i)
{
    return i < r->n_warnings ? r->warnings[i] : NULL;
}

const struct cmt_reader_stats *cmt_reader_stats(const struct cmt_reader *r)
{
    return &r->stats;
}

void cmt_reader_close(struct cmt_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->heap_len; i++)
        free(r->heap[i]);
    free(r->heap);
    if (r->mapped && r->data)
        munmap((void *)r->data, r->size);
    free(r);
}

/* ---- event records ---------------------------------------------------------- */

enum decode_result { DECODE_EVENT = 1, DECODE_END = 0, DECODE_DAMAGED = -1 };

static enum decode_result cursor_damaged(struct cmt_reader *r, struct cursor *c, const uint8_t *rec)
{
    uint64_t off = (uint64_t)(rec - r->data);
    if (c->cut_by_eof) {
        r->truncated = true;
        add_warning(r, "trace is truncated: it ends inside a record at offset %llu; events up to there are "
                       "analysed",
                    (unsigned long long)off);
        return DECODE_END;
    }
    set_error(r, "damaged event record at offset %llu (chunk at offset %llu)", (unsigned long long)off,
              (unsigned long long)c->chunk_off);
    return DECODE_DAMAGED;
}

/* Decodes the next delivered record of c into c->next. */
static enum decode_result cursor_decode(struct cmt_reader *r, struct cursor *c)
{
    for (;;) {
        const uint8_t *rec = c->pos;
        if (rec >= c->end || rec[0] == CMT_REC_NONE)
            return DECODE_END;
        if (c->end - rec < 3)
            return cursor_damaged(r, c, rec);
        const uint8_t *p = rec + 2;
        uint64_t mask, v;
        if (cmt_varint_get(&p, c->end, &mask) != 0 || mask > 0xffffffffu)
            return cursor_damaged(r, c, rec);
        struct cmt_event_in *e = &c->next;
        memset(e, 0, sizeof *e);
        e->type = rec[0];
        e->api = rec[1];
        e->kind = (uint8_t)cmt_api_default_kind(e->api);
        e->mask = (uint32_t)mask;
        e->tid = c->tid;
        uint64_t ts = c->prev_ts, addr = c->prev_addr;
        int64_t device = c->prev_device;
        for (unsigned bit = 0; bit < 32; bit++) {
            uint32_t f = 1u << bit;
            if (!(mask & f))
                continue;
            if (cmt_varint_get(&p, c->end, &v) != 0)
                return cursor_damaged(r, c, rec);
            switch (f) {
            case CMT_F_TS: ts += (uint64_t)cmt_zigzag_decode(v); break;
            case CMT_F_DEVICE: device = cmt_zigzag_decode(v); break;
            case CMT_F_ADDR: addr += (uint64_t)cmt_zigzag_decode(v); break;
            case CMT_F_SIZE: e->size = v; break;
            case CMT_F_STREAM: e->stream = v; break;
            case CMT_F_RESULT: e->result = (int32_t)(uint32_t)v; break;
            case CMT_F_STACK: e->stack = v; break;
            case CMT_F_KIND: e->kind = v < 256 ? (uint8_t)v : 255; break;
            case CMT_F_AUX0: e->aux[0] = v; break;
            case CMT_F_AUX1: e->aux[1] = v; break;
            case CMT_F_AUX2: e->aux[2] = v; break;
            case CMT_F_AUX3: e->aux[3] = v; break;
            default: break; /* a field from a newer minor version: skipped */
            }
        }
        if (ts < c->prev_ts && !r->warned_order) {
            r->warned_order = true;
            add_warning(r, "events of thread %u are out of time order at offset %llu", c->tid,
                        (unsigned long long)(rec - r->data));
        }
        c->prev_ts = ts;
        c->prev_addr = addr;
        c->prev_device = device;
        e->ts = ts;
        e->addr = addr;
        e->device = device < INT32_MIN ? INT32_MIN : device > INT32_MAX ? INT32_MAX : (int32_t)device;
        r->stats.bytes_of_records += (uint64_t)(p - rec);
        c->pos = p;
        if (e->type < CMT_REC_TYPE_COUNT)
            return DECODE_EVENT;
        /* A record type from a newer writer: same shape, skipped. */
    }
}

/* ---- the merge heap, ordered by (ts, chunk offset) ---------------------------- */

static bool cursor_before(const struct cursor *a, const struct cursor *b)
{
    if (a->next.ts != b->next.ts)
        return a->next.ts < b->next.ts;
    return a->chunk_off < b->chunk_off;
}

static void heap_sift_up(struct cmt_reader *r, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!cursor_before(r->heap[i], r->heap[parent]))
            break;
        struct cursor *t = r->heap[i];
        r->heap[i] = r->heap[parent];
        r->heap[parent] = t;
        i = parent;
    }
}

static void heap_sift_down(struct cmt_reader *r, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < r->heap_len && cursor_before(r->heap[l], r->heap[m]))
            m = l;
        if (l + 1 < r->heap_len && cursor_before(r->heap[l + 1], r->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        struct cursor *t = r->heap[i];
        r->heap[i] = r->heap[m];
        r->heap[m] = t;
        i = m;
    }
}

static int heap_push(struct cmt_reader *r, struct cursor *c)
{
    if (r->heap_len == r->heap_cap) {
        size_t cap = r->heap_cap ? r->heap_cap * 2 : 16;
        struct cursor **h = realloc(r->heap, cap * sizeof *h);
        if (!h)
            return -1;
        r->heap = h;
        r->heap_cap = cap;
    }
    r->heap[r->heap_len++] = c;
    heap_sift_up(r, r->heap_len - 1);
    if (r->heap_len > r->stats.max_open_chunks)
        r->stats.max_open_chunks = r->heap_len;
    return 0;
}

/* ---- metadata records ------------------------------------------------------- */

struct payload {
    const uint8_t *p;
    const uint8_t *end;
    bool bad;
};

static uint64_t pl_varint(struct payload *b)
{
    uint64_t v = 0;
    if (!b->bad && cmt_varint_get(&b->p, b->end, &v) != 0)
        b->bad = true;
    return b->bad ? 0 : v;
}

static const uint8_t *pl_bytes(struct payload *b, size_t *len)
{
    uint64_t n = pl_varint(b);
    if (b->bad || n > (uint64_t)(b->end - b->p)) {
        b->bad = true;
        *len = 0;
        return NULL;
    }
    const uint8_t *s = b->p;
    b->p += n;
    *len = (size_t)n;
    return s;
}

static uint32_t pl_id(struct payload *b)
{
    uint64_t v = pl_varint(b);
    if (v > UINT32_MAX)
        b->bad = true;
    return (uint32_t)v;
}

static int meta_process(struct cmt_reader *r, struct payload *b)
{
    struct cmt_process_in p = {0};
    p.pid = pl_varint(b);
    p.ppid = pl_varint(b);
    p.exe_id = pl_id(b);
    uint64_t argc = pl_varint(b);
    /* Every argument id takes at least one byte: bounded by the payload. */
    if (b->bad || argc > (uint64_t)(b->end - b->p))
        return -1;
    uint32_t *args = calloc(argc ? argc : 1, sizeof *args);
    if (!args)
        return -1;
    for (uint64_t i = 0; i < argc; i++)
        args[i] = pl_id(b);
    p.argc = (uint32_t)argc;
    p.arg_ids = args;
    p.hostname_id = pl_id(b);
    p.rank = cmt_zigzag_decode(pl_varint(b));
    p.cwd_id = pl_id(b);
    if (!b->bad && r->cb->on_process)
        r->cb->on_process(r->ctx, &p);
    free(args);
    return b->bad ? -1 : 0;
}

static int meta_stack(struct cmt_reader *r, struct payload *b)
{
    uint32_t id = pl_id(b);
    uint32_t known = pl_id(b);
    uint64_t n = pl_varint(b);
    if (b->bad)
        return -1;
    if (n > READER_MAX_FRAMES) {
        add_warning(r, "stack %u has %llu frames; only stacks up to %u frames are read", id,
                    (unsigned long long)n, READER_MAX_FRAMES);
        return 0;
    }
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        prev += (uint64_t)cmt_zigzag_decode(pl_varint(b));
        r->frames[i] = prev;
    }
    if (b->bad)
        return -1;
    if (id == 0)
        return -1;
    if (r->cb->on_stack)
        r->cb->on_stack(r->ctx, id, known, r->frames, (uint32_t)n);
    return 0;
}

static int meta_dispatch(struct cmt_reader *r, uint8_t type, struct payload *b)
{
    const struct cmt_reader_callbacks *cb = r->cb;
    switch (type) {
    case CMT_META_STRING: {
        uint32_t id = pl_id(b);
        size_t len;
        const uint8_t *s = pl_bytes(b, &len);
        if (b->bad || id == 0)
            return -1;
        if (cb->on_string)
            cb->on_string(r->ctx, id, (const char *)s, len);
        return 0;
    }
    case CMT_META_MODULE: {
        struct cmt_module_in m = {0};
        m.id = pl_id(b);
        m.path_id = pl_id(b);
        m.bias = pl_varint(b);
        m.lo = pl_varint(b);
        m.hi = pl_varint(b);
        m.build_id = pl_bytes(b, &m.build_id_len);
        m.ts = pl_varint(b);
        if (b->bad || m.id == 0)
            return -1;
        if (cb->on_module)
            cb->on_module(r->ctx, &m);
        return 0;
    }
    case CMT_META_STACK:
        return meta_stack(r, b);
    case CMT_META_PROCESS:
        return meta_process(r, b);
    case CMT_META_THREAD: {
        uint32_t tid = pl_id(b), name = pl_id(b);
        if (b->bad)
            return -1;
        if (cb->on_thread)
            cb->on_thread(r->ctx, tid, name);
        return 0;
    }
    case CMT_META_CONFIG: {
        struct cmt_config_in c = {0};
        c.stack_depth = pl_varint(b);
        c.free_stacks = pl_varint(b);
        c.sample_ms = pl_varint(b);
        c.max_size = pl_varint(b);
        c.version_id = pl_id(b);
        if (b->bad)
            return -1;
        if (cb->on_config)
            cb->on_config(r->ctx, &c);
        return 0;
    }
    case CMT_META_DEVICE: {
        uint32_t ordinal = pl_id(b), name = pl_id(b);
        uint64_t total = pl_varint(b);
        if (b->bad)
            return -1;
        if (cb->on_device)
            cb->on_device(r->ctx, ordinal, name, total);
        return 0;
    }
    case CMT_META_FRAME: {
        struct cmt_frame_in f = {0};
        f.id = pl_id(b);
        f.function_id = pl_id(b);
        f.file_id = pl_id(b);
        f.line = pl_id(b);
        f.language = pl_id(b);
        if (b->bad || f.id == 0)
            return -1;
        if (cb->on_frame)
            cb->on_frame(r->ctx, &f);
        return 0;
    }
    case CMT_META_END: {
        struct cmt_end_in e = {0};
        e.ts = pl_varint(b);
        e.reason = pl_varint(b);
        e.events_dropped = pl_varint(b);
        if (b->bad)
            return -1;
        if (cb->on_end)
            cb->on_end(r->ctx, &e);
        return 0;
    }
    default:
        return 0; /* a record type from a newer writer: skipped */
    }
}

static int read_meta_chunk(struct cmt_reader *r, const uint8_t *p, const uint8_t *end, bool cut_by_eof)
{
    while (p < end && p[0] != CMT_META_NONE) {
        const uint8_t *rec = p;
        uint8_t type = p[0];
        p++;
        uint64_t len;
        if (cmt_varint_get(&p, end, &len) != 0 || len > (uint64_t)(end - p)) {
            if (cut_by_eof) {
                r->truncated = true;
                add_warning(r, "trace is truncated inside a metadata record at offset %llu",
                            (unsigned long long)(rec - r->data));
                return 0;
            }
            set_error(r, "damaged metadata record at offset %llu (its length runs past its chunk)",
                      (unsigned long long)(rec - r->data));
            return -1;
        }
        struct payload b = {p, p + len, false};
        if (meta_dispatch(r, type, &b) != 0) {
            set_error(r, "damaged metadata record (type %u) at offset %llu", type,
                      (unsigned long long)(rec - r->data));
            return -1;
        }
        r->stats.meta_records++;
        p += len;
    }
    return 0;
}

/* ---- chunks ------------------------------------------------------------------ */

/* Opens the next chunk in file order: metadata is delivered now, an event
 * chunk joins the merge. Returns 0, or -1 on damage. Sets chunks_done at the
 * end of the claimed part of the file. */
static int open_next_chunk(struct cmt_reader *r)
{
    uint64_t off = r->next_chunk;
    if (off >= r->size) {
        r->chunks_done = true;
        return 0;
    }
    if (r->size - off < CMT_CHUNK_HEADER_SIZE) {
        bool zeros = true;
        for (uint64_t i = off; i < r->size; i++)
            zeros = zeros && r->data[i] == 0;
        if (!zeros) {
            r->truncated = true;
            add_warning(r, "trace is truncated: it ends inside a chunk header at offset %llu",
                        (unsigned long long)off);
        }
        r->chunks_done = true;
        return 0;
    }
    struct cmt_chunk_header h;
    memcpy(&h, r->data + off, sizeof h);
    if (h.magic == 0) {
        /* Never claimed: the rest of the file is preallocated space. */
        r->chunks_done = true;
        return 0;
    }
    bool known = h.magic == CMT_CHUNK_MAGIC_EVENTS || h.magic == CMT_CHUNK_MAGIC_META ||
                 h.magic == CMT_CHUNK_MAGIC_PAD;
    if (!known || h.size < CMT_CHUNK_HEADER_SIZE || h.size % CMT_CHUNK_ALIGN ||
        (h.magic != CMT_CHUNK_MAGIC_PAD && h.size > CMT_CHUNK_MAX_SIZE)) {
        set_error(r, "damaged chunk header at offset %llu", (unsigned long long)off);
        return -1;
    }
    r->next_chunk = off + h.size;
    bool cut = off + h.size > r->size;
    if (cut) {
        r->truncated = true;
        add_warning(r, "trace is truncated: %llu bytes of the chunk at offset %llu are missing; events up to "
                       "there are analysed",
                    (unsigned long long)(off + h.size - r->size), (unsigned long long)off);
    }
    if (h.magic == CMT_CHUNK_MAGIC_PAD)
        return 0;
    if (h.claim_ns < r->last_claim_ns)
        add_warning(r, "chunk claim times go backwards at offset %llu", (unsigned long long)off);
    r->last_claim_ns = h.claim_ns;
    const uint8_t *body = r->data + off + CMT_CHUNK_HEADER_SIZE;
    const uint8_t *end = cut ? r->data + r->size : r->data + off + h.size;
    if (h.magic == CMT_CHUNK_MAGIC_META) {
        r->stats.meta_chunks++;
        return read_meta_chunk(r, body, end, cut);
    }
    r->stats.event_chunks++;
    struct cursor *c = calloc(1, sizeof *c);
    if (!c) {
        set_error(r, "out of memory");
        return -1;
    }
    c->pos = body;
    c->end = end;
    c->chunk_off = off;
    c->cut_by_eof = cut;
    c->prev_ts = h.claim_ns;
    c->prev_addr = h.base_addr;
    c->tid = h.tid;
    enum decode_result d = cursor_decode(r, c);
    if (d != DECODE_EVENT) {
        free(c);
        return d == DECODE_DAMAGED ? -1 : 0;
    }
    if (heap_push(r, c) != 0) {
        free(c);
        set_error(r, "out of memory");
        return -1;
    }
    return 0;
}

static uint64_t peek_next_claim(const struct cmt_reader *r, bool *has)
{
    *has = false;
    uint64_t off = r->next_chunk;
    if (r->chunks_done || off >= r->size || r->size - off < CMT_CHUNK_HEADER_SIZE)
        return 0;
    struct cmt_chunk_header h;
    memcpy(&h, r->data + off, sizeof h);
    if (h.magic == 0)
        return 0;
    *has = true;
    /* Padding and damaged headers are opened at once (claim 0). */
    return (h.magic == CMT_CHUNK_MAGIC_EVENTS || h.magic == CMT_CHUNK_MAGIC_META) ? h.claim_ns : 0;
}

int cmt_reader_run(struct cmt_reader *r, const struct cmt_reader_callbacks *cb, void *ctx)
{
    r->cb = cb;
    r->ctx = ctx;
    for (;;) {
        if (r->heap_len == 0) {
            if (r->chunks_done)
                break;
            if (open_next_chunk(r) != 0)
                r->chunks_done = true; /* damage: deliver what is already open, then stop */
            continue;
        }
        /* Every chunk claimed at or before the earliest pending event may
         * hold earlier events: open those first (W1, W2). */
        uint64_t t = r->heap[0]->next.ts;
        bool has;
        uint64_t claim = peek_next_claim(r, &has);
        if (has && claim <= t) {
            if (open_next_chunk(r) != 0)
                r->chunks_done = true;
            continue;
        }
        struct cursor *c = r->heap[0];
        r->stats.events++;
        if (cb->on_event && cb->on_event(ctx, &c->next) != 0)
            return 0;
        if (cursor_decode(r, c) != DECODE_EVENT) {
            /* End of this chunk's records, or damage inside it: the other
             * threads' events before the damage are still delivered. */
            r->heap[0] = r->heap[--r->heap_len];
            free(c);
        }
        if (r->heap_len)
            heap_sift_down(r, 0);
    }
    return r->error[0] ? -1 : 0;
}
