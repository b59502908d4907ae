/* SPDX-License-Identifier: MIT */
/* A trace's summary file (summary_file.h): one writer and one reader, the
 * fields in the same order in both. */
#include "summary_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- writing ---------------------------------------------------------------- */

struct out_buf {
    uint8_t *data;
    size_t len, cap;
    bool oom;
};

static void put(struct out_buf *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->oom = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u8(struct out_buf *b, uint8_t v)
{
    put(b, &v, 1);
}

static void put_u16(struct out_buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}

static void put_u32(struct out_buf *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 4);
}

static void put_u64(struct out_buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 8);
}

static void put_i64(struct out_buf *b, int64_t v)
{
    put_u64(b, (uint64_t)v);
}

static void put_str(struct out_buf *b, const char *s)
{
    size_t n = strlen(s);
    put_u32(b, (uint32_t)n);
    put(b, s, n);
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void put_process(struct out_buf *b, const struct cmt_process_summary *p)
{
    put_str(b, p->trace);
    put_u8(b, p->analysed);
    put_str(b, p->error);
    put_u8(b, p->complete);
    put_i64(b, p->rank);
    put_u64(b, p->pid);
    put_str(b, p->hostname);
    put_str(b, p->program);
    put_u32(b, (uint32_t)p->n_devices);
    for (size_t i = 0; i < p->n_devices; i++) {
        put_u32(b, (uint32_t)p->devices[i].ordinal);
        put_u64(b, p->devices[i].peak);
        put_u64(b, p->devices[i].peak_ns);
        put_u64(b, p->devices[i].live);
    }
    put_u64(b, p->peak);
    put_u64(b, p->leak_bytes);
    put_u64(b, p->leak_count);
    put_u64(b, p->growth_candidates);
    put_u64(b, p->failed);
    put_u64(b, p->events);
}

static void put_ipc(struct out_buf *b, const struct cmt_job_ipc_item *items, size_t n, uint64_t dropped)
{
    put_u32(b, (uint32_t)n);
    put_u64(b, dropped);
    for (size_t i = 0; i < n; i++) {
        put_u64(b, items[i].fingerprint);
        put_u64(b, items[i].bytes);
        put_u8(b, items[i].closed);
        put_str(b, items[i].site);
    }
}

static void put_member(struct out_buf *b, const struct cmt_job_member *m)
{
    put_str(b, m->trace);
    put_u8(b, m->analysed);
    put_u8(b, m->complete);
    put_u8(b, m->has_job);
    put_u32(b, m->source);
    put_i64(b, m->rank);
    put_i64(b, m->local_rank);
    put_i64(b, m->world_size);
    put_i64(b, m->local_world_size);
    put_str(b, m->job_id);
    put_str(b, m->host);
    put_u64(b, m->pid);
    put_u8(b, m->cvd_set);
    put_str(b, m->cvd);
    put_u64(b, m->start_wall_ns);
    put_u64(b, m->end_wall_ns);
    put_u32(b, CMT_HOLDER_COUNT);
    put_u32(b, (uint32_t)m->n_devices);
    for (size_t i = 0; i < m->n_devices; i++) {
        const struct cmt_job_device *d = &m->devices[i];
        put_u32(b, (uint32_t)d->ordinal);
        put_str(b, d->gpu);
        put_str(b, d->uuid);
        put_u64(b, d->peak);
        put_u64(b, d->peak_wall_ns);
        put_u64(b, d->live_end);
        for (int h = 0; h < CMT_HOLDER_COUNT; h++)
            put_u64(b, d->peak_by_holder[h]);
        put_u8(b, d->has_own_peaks);
        for (int h = 0; h < CMT_HOLDER_COUNT; h++)
            put_u64(b, d->own_peak[h]);
        put_str(b, d->peak_site);
    }
    put_u32(b, (uint32_t)m->own);
    put_u64(b, m->leak_bytes);
    put_u64(b, m->leak_count);
    put_u64(b, m->failed);
    put_u64(b, m->failed_first_size);
    put_u64(b, m->events);
    put_u32(b, (uint32_t)m->n_cells);
    put_u64(b, m->cell_origin_wall_ns);
    put_u64(b, m->cell_width_ns);
    for (size_t i = 0; i < m->n_cells; i++)
        put_u64(b, m->cells[i]);
    put_ipc(b, m->exports, m->n_exports, m->exports_dropped);
    put_ipc(b, m->imports, m->n_imports, m->imports_dropped);
}

int cmt_summary_write(FILE *out, const struct cmt_trace_summary *s)
{
    struct out_buf body = {0};
    put_str(&body, s->made_by);
    put_str(&body, s->settings);
    put_i64(&body, s->order_rank);
    put_str(&body, s->damage);
    put_process(&body, &s->process);
    put_member(&body, &s->member);
    put_u64(&body, fnv1a(body.data, body.len));
    struct out_buf head = {0};
    put(&head, CMT_SUMMARY_MAGIC, 8);
    put_u16(&head, CMT_SUMMARY_MAJOR);
    put_u16(&head, CMT_SUMMARY_MINOR);
    put_u32(&head, CMT_SUMMARY_HEADER_SIZE);
    put_u64(&head, body.len - 8);
    int rc = 0;
    if (body.oom || head.oom) {
        errno = ENOMEM;
        rc = -1;
    } else if (fwrite(head.data, 1, head.len, out) != head.len || fwrite(body.data, 1, body.len, out) != body.len) {
        rc = -1;
    }
    free(head.data);
    free(body.data);
    return rc;
}

/* ---- reading ---------------------------------------------------------------- */

struct in_buf {
    const uint8_t *data;
    size_t size, pos;
    char *err;
    size_t errlen;
    char field[96]; /* the field being read, for the message */
    bool failed;
};

static void fail_at(struct in_buf *b, size_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(struct in_buf *b, size_t offset, const char *fmt, ...)
{
    if (b->failed)
        return;
    b->failed = true;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char *err = b->err;
    size_t errlen = b->errlen;
    snprintf(err, errlen, "offset %zu, field %s: %s", offset, b->field, what);
}

static void field(struct in_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void field(struct in_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->field, sizeof b->field, fmt, ap);
    va_end(ap);
}

static const uint8_t *take(struct in_buf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->size - b->pos < n) {
        fail_at(b, b->pos, "the summary ends there (%zu bytes needed, %zu left): the file is cut", n,
                b->size - b->pos);
        return NULL;
    }
    const uint8_t *p = b->data + b->pos;
    b->pos += n;
    return p;
}

static uint64_t get_le(struct in_buf *b, size_t n)
{
    const uint8_t *p = take(b, n);
    uint64_t v = 0;
    for (size_t i = 0; p && i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(struct in_buf *b, const char *name)
{
    field(b, "%s", name);
    return get_le(b, 8);
}

static int64_t get_i64_min(struct in_buf *b, const char *name, int64_t min)
{
    field(b, "%s", name);
    size_t at = b->pos;
    int64_t v = (int64_t)get_le(b, 8);
    if (v < min)
        fail_at(b, at, "%" PRId64 " is below %" PRId64, v, min);
    return v < min ? min : v;
}

static bool get_bool(struct in_buf *b, const char *name)
{
    field(b, "%s", name);
    size_t at = b->pos;
    uint64_t v = get_le(b, 1);
    if (v > 1)
        fail_at(b, at, "%" PRIu64 " where 0 or 1 belongs", v);
    return v == 1;
}

/* A count of at most max. */
static size_t get_count(struct in_buf *b, const char *name, size_t max)
{
    field(b, "%s", name);
    size_t at = b->pos;
    uint64_t v = get_le(b, 4);
    if (v > max) {
        fail_at(b, at, "%" PRIu64 " is over its limit of %zu", v, max);
        return 0;
    }
    return (size_t)v;
}

static int32_t get_ordinal(struct in_buf *b, const char *name)
{
    field(b, "%s", name);
    size_t at = b->pos;
    int32_t v = (int32_t)(uint32_t)get_le(b, 4);
    if (v < -1 || v >= 1024)
        fail_at(b, at, "device ordinal %d is not one (0 to 1023, or -1)", v);
    return v;
}

/* A string into out (cap bytes with its NUL). */
static void get_str(struct in_buf *b, const char *name, char *out, size_t cap)
{
    field(b, "%s", name);
    out[0] = 0;
    size_t at = b->pos;
    uint64_t n = get_le(b, 4);
    if (b->failed)
        return;
    if (n >= cap) {
        fail_at(b, at, "a string of %" PRIu64 " bytes where at most %zu fit", n, cap - 1);
        return;
    }
    const uint8_t *p = take(b, (size_t)n);
    if (!p)
        return;
    if (memchr(p, 0, (size_t)n)) {
        fail_at(b, at + 4, "a NUL byte inside the string");
        return;
    }
    memcpy(out, p, (size_t)n);
    out[n] = 0;
}

static void get_process(struct in_buf *b, struct cmt_process_summary *p)
{
    get_str(b, "process.trace", p->trace, sizeof p->trace);
    p->analysed = get_bool(b, "process.analysed");
    get_str(b, "process.error", p->error, sizeof p->error);
    p->complete = get_bool(b, "process.complete");
    p->rank = get_i64_min(b, "process.rank", -1);
    p->pid = get_u64(b, "process.pid");
    get_str(b, "process.hostname", p->hostname, sizeof p->hostname);
    get_str(b, "process.program", p->program, sizeof p->program);
    p->n_devices = get_count(b, "process.devices", CMT_COMPARE_MAX_DEVICES);
    for (size_t i = 0; i < p->n_devices && !b->failed; i++) {
        char name[64];
        snprintf(name, sizeof name, "process.devices[%zu].ordinal", i);
        p->devices[i].ordinal = get_ordinal(b, name);
        snprintf(name, sizeof name, "process.devices[%zu].peak", i);
        p->devices[i].peak = get_u64(b, name);
        snprintf(name, sizeof name, "process.devices[%zu].peak_ns", i);
        p->devices[i].peak_ns = get_u64(b, name);
        snprintf(name, sizeof name, "process.devices[%zu].live", i);
        p->devices[i].live = get_u64(b, name);
    }
    p->peak = get_u64(b, "process.peak");
    p->leak_bytes = get_u64(b, "process.leak_bytes");
    p->leak_count = get_u64(b, "process.leak_count");
    p->growth_candidates = (size_t)get_u64(b, "process.growth_candidates");
    p->failed = get_u64(b, "process.failed");
    p->events = get_u64(b, "process.events");
}

static void get_ipc(struct in_buf *b, const char *list, struct cmt_job_ipc_item *items, size_t *n, uint64_t *dropped)
{
    char name[64];
    snprintf(name, sizeof name, "member.%s", list);
    *n = get_count(b, name, CMT_JOB_MAX_IPC);
    snprintf(name, sizeof name, "member.%s_dropped", list);
    *dropped = get_u64(b, name);
    for (size_t i = 0; i < *n && !b->failed; i++) {
        snprintf(name, sizeof name, "member.%s[%zu].fingerprint", list, i);
        items[i].fingerprint = get_u64(b, name);
        snprintf(name, sizeof name, "member.%s[%zu].bytes", list, i);
        items[i].bytes = get_u64(b, name);
        snprintf(name, sizeof name, "member.%s[%zu].closed", list, i);
        items[i].closed = get_bool(b, name);
        snprintf(name, sizeof name, "member.%s[%zu].site", list, i);
        get_str(b, name, items[i].site, sizeof items[i].site);
    }
}

static void get_device(struct in_buf *b, size_t i, struct cmt_job_device *d)
{
    char name[64];
    snprintf(name, sizeof name, "member.devices[%zu].ordinal", i);
    d->ordinal = get_ordinal(b, name);
    snprintf(name, sizeof name, "member.devices[%zu].gpu", i);
    get_str(b, name, d->gpu, sizeof d->gpu);
    snprintf(name, sizeof name, "member.devices[%zu].uuid", i);
    get_str(b, name, d->uuid, sizeof d->uuid);
    snprintf(name, sizeof name, "member.devices[%zu].peak", i);
    d->peak = get_u64(b, name);
    snprintf(name, sizeof name, "member.devices[%zu].peak_wall_ns", i);
    d->peak_wall_ns = get_u64(b, name);
    snprintf(name, sizeof name, "member.devices[%zu].live_end", i);
    d->live_end = get_u64(b, name);
    for (int h = 0; h < CMT_HOLDER_COUNT; h++) {
        snprintf(name, sizeof name, "member.devices[%zu].peak_by_holder[%d]", i, h);
        d->peak_by_holder[h] = get_u64(b, name);
    }
    snprintf(name, sizeof name, "member.devices[%zu].has_own_peaks", i);
    d->has_own_peaks = get_bool(b, name);
    for (int h = 0; h < CMT_HOLDER_COUNT; h++) {
        snprintf(name, sizeof name, "member.devices[%zu].own_peak[%d]", i, h);
        d->own_peak[h] = get_u64(b, name);
    }
    snprintf(name, sizeof name, "member.devices[%zu].peak_site", i);
    get_str(b, name, d->peak_site, sizeof d->peak_site);
}

static void get_member(struct in_buf *b, struct cmt_job_member *m)
{
    get_str(b, "member.trace", m->trace, sizeof m->trace);
    m->analysed = get_bool(b, "member.analysed");
    m->complete = get_bool(b, "member.complete");
    m->has_job = get_bool(b, "member.has_job");
    field(b, "member.source");
    size_t at = b->pos;
    m->source = (unsigned)get_le(b, 4);
    if (m->source > CMT_JOB_SLURM)
        fail_at(b, at, "launcher %u is not one this cumemtrace knows (0 to %d)", m->source, CMT_JOB_SLURM);
    m->rank = get_i64_min(b, "member.rank", -1);
    m->local_rank = get_i64_min(b, "member.local_rank", -1);
    m->world_size = get_i64_min(b, "member.world_size", -1);
    m->local_world_size = get_i64_min(b, "member.local_world_size", -1);
    get_str(b, "member.job_id", m->job_id, sizeof m->job_id);
    get_str(b, "member.host", m->host, sizeof m->host);
    m->pid = get_u64(b, "member.pid");
    m->cvd_set = get_bool(b, "member.cvd_set");
    get_str(b, "member.cvd", m->cvd, sizeof m->cvd);
    m->start_wall_ns = get_u64(b, "member.start_wall_ns");
    m->end_wall_ns = get_u64(b, "member.end_wall_ns");
    field(b, "member.holders");
    at = b->pos;
    uint64_t holders = get_le(b, 4);
    if (!b->failed && holders != CMT_HOLDER_COUNT)
        fail_at(b, at, "%" PRIu64 " memory holders where this cumemtrace knows %d: summarise the trace with this "
                "version", holders, CMT_HOLDER_COUNT);
    m->n_devices = get_count(b, "member.devices", CMT_JOB_MAX_DEVICES);
    for (size_t i = 0; i < m->n_devices && !b->failed; i++)
        get_device(b, i, &m->devices[i]);
    field(b, "member.own");
    at = b->pos;
    m->own = (int)(int32_t)(uint32_t)get_le(b, 4);
    if (!b->failed && (m->own < -1 || m->own >= (int)m->n_devices)) {
        fail_at(b, at, "device index %d where the summary lists %zu devices", m->own, m->n_devices);
        m->own = -1;
    }
    m->leak_bytes = get_u64(b, "member.leak_bytes");
    m->leak_count = get_u64(b, "member.leak_count");
    m->failed = get_u64(b, "member.failed");
    m->failed_first_size = get_u64(b, "member.failed_first_size");
    m->events = get_u64(b, "member.events");
    m->n_cells = get_count(b, "member.cells", CMT_JOB_CELLS);
    m->cell_origin_wall_ns = get_u64(b, "member.cell_origin_wall_ns");
    m->cell_width_ns = get_u64(b, "member.cell_width_ns");
    for (size_t i = 0; i < m->n_cells && !b->failed; i++) {
        char name[48];
        snprintf(name, sizeof name, "member.cells[%zu]", i);
        m->cells[i] = get_u64(b, name);
    }
    get_ipc(b, "exports", m->exports, &m->n_exports, &m->exports_dropped);
    get_ipc(b, "imports", m->imports, &m->n_imports, &m->imports_dropped);
}

bool cmt_summary_is_magic(const void *data, size_t len)
{
    return len >= 8 && memcmp(data, CMT_SUMMARY_MAGIC, 8) == 0;
}

int cmt_summary_decode(const uint8_t *data, size_t size, struct cmt_trace_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    struct in_buf b = {.data = data, .size = size, .err = err, .errlen = errlen};
    if (!cmt_summary_is_magic(data, size)) {
        snprintf(err, errlen, "not a cumemtrace summary (no \"%s\" at offset 0)", CMT_SUMMARY_MAGIC);
        return -1;
    }
    b.pos = 8;
    field(&b, "header.major");
    uint16_t major = (uint16_t)get_le(&b, 2);
    field(&b, "header.minor");
    uint16_t minor = (uint16_t)get_le(&b, 2);
    if (!b.failed && major != CMT_SUMMARY_MAJOR) {
        snprintf(err, errlen, "a summary of format %u.%u; this cumemtrace reads %d.x: summarise the trace with this "
                 "cumemtrace, or read the summary with the version that wrote it",
                 major, minor, CMT_SUMMARY_MAJOR);
        return -1;
    }
    field(&b, "header.header_size");
    size_t at = b.pos;
    uint64_t header_size = get_le(&b, 4);
    if (!b.failed && (header_size < CMT_SUMMARY_HEADER_SIZE || header_size > 4096))
        fail_at(&b, at, "%" PRIu64 " where %u belongs", header_size, CMT_SUMMARY_HEADER_SIZE);
    field(&b, "header.body_size");
    at = b.pos;
    uint64_t body_size = get_le(&b, 8);
    if (!b.failed && body_size > CMT_SUMMARY_MAX_BODY)
        fail_at(&b, at, "%" PRIu64 " bytes: a summary is a few KiB", body_size);
    if (!b.failed && size < header_size)
        fail_at(&b, at, "the header says it is %" PRIu64 " bytes, the file has %zu: the file is cut", header_size,
                size);
    if (!b.failed && size - header_size < 8 + body_size)
        fail_at(&b, at, "%" PRIu64 " bytes of body and 8 of checksum, but the file has %zu after its header: the file "
                "is cut", body_size, size - (size_t)header_size);
    if (b.failed)
        return -1;
    size_t body_start = (size_t)header_size, body_end = body_start + (size_t)body_size;
    /* The body's fields, bounded by the body (a newer minor may add fields
     * at its end: they are skipped). */
    b.pos = body_start;
    b.size = body_end;
    get_str(&b, "made_by", s->made_by, sizeof s->made_by);
    get_str(&b, "settings", s->settings, sizeof s->settings);
    s->order_rank = get_i64_min(&b, "order_rank", -1);
    get_str(&b, "damage", s->damage, sizeof s->damage);
    get_process(&b, &s->process);
    get_member(&b, &s->member);
    if (b.failed)
        return -1;
    if (b.pos != body_end && minor <= CMT_SUMMARY_MINOR) {
        field(&b, "body");
        fail_at(&b, b.pos, "%zu bytes left over at the body's end", body_end - b.pos);
        return -1;
    }
    b.size = size;
    b.pos = body_end;
    field(&b, "checksum");
    uint64_t sum = get_le(&b, 8);
    uint64_t want = fnv1a(data + body_start, (size_t)body_size);
    if (!b.failed && sum != want)
        fail_at(&b, body_end,
                "0x%016" PRIx64 " where the body (offsets %zu to %zu) sums to 0x%016" PRIx64
                ": the file changed after it was written",
                sum, body_start, body_end, want);
    if (!b.failed && b.pos != size) {
        field(&b, "end");
        fail_at(&b, b.pos, "%zu bytes after the summary's end", size - b.pos);
    }
    if (!b.failed && strcmp(s->process.trace, s->member.trace) != 0) {
        field(&b, "member.trace");
        fail_at(&b, body_start, "names another trace than process.trace");
    }
    return b.failed ? -1 : 0;
}

int cmt_summary_read(const char *path, struct cmt_trace_summary *s, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "not a regular file");
        close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size > CMT_SUMMARY_MAX_BODY + 4096) {
        snprintf(err, errlen, "%lld bytes: not a summary (a summary is a few KiB)", (long long)st.st_size);
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    if (!data) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "cannot read it: %s", n < 0 ? strerror(errno) : "it shrank while being read");
            free(data);
            close(fd);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    int rc = cmt_summary_decode(data, size, s, err, errlen);
    free(data);
    return rc;
}

bool cmt_summary_file_is_summary(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    char magic[8];
    struct stat st;
    bool is = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, magic, sizeof magic) == (ssize_t)sizeof magic &&
              cmt_summary_is_magic(magic, sizeof magic);
    close(fd);
    return is;
}

int cmt_summary_path_for(const char *trace, const char *dir, char *out, size_t len)
{
    const char *base = trace;
    if (dir) {
        const char *slash = strrchr(trace, '/');
        base = slash ? slash + 1 : trace;
    }
    size_t n = strlen(base);
    if (n >= 4 && !strcmp(base + n - 4, ".bin"))
        n -= 4;
    int w = dir ? snprintf(out, len, "%s/%.*s%s", dir, (int)n, base, CMT_SUMMARY_SUFFIX)
                : snprintf(out, len, "%.*s%s", (int)n, base, CMT_SUMMARY_SUFFIX);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}
