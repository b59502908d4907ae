/* SPDX-License-Identifier: MIT */
/* The writer and the reader as libraries, without any preloading: what one
 * writes the other reads back exactly, merged by time across threads, and
 * damage or truncation never costs the events before it. */
#include <fcntl.h>
#include <pthread.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "event_stream.h"
#include "meta_stream.h"
#include "page_populate.h"
#include "test_util.h"
#include "trace_file.h"
#include "trace_reader.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/cmt-roundtrip-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
}

/* ---- collecting what the reader delivers -------------------------------- */

#define MAX_COLLECT 200000
struct collected {
    struct cmt_event_in ev[MAX_COLLECT];
    size_t n;
    uint32_t string_ids[16];
    char strings[16][64];
    size_t n_strings;
    uint64_t stack_frames[8];
    uint32_t stack_n, stack_id;
};

static struct collected got;

static int collect_event(void *ctx, const struct cmt_event_in *e)
{
    (void)ctx;
    CHECK(got.n < MAX_COLLECT);
    got.ev[got.n++] = *e;
    return 0;
}

static void collect_string(void *ctx, uint32_t id, const char *t, size_t len)
{
    (void)ctx;
    CHECK(got.n_strings < 16 && len < 64);
    got.string_ids[got.n_strings] = id;
    memcpy(got.strings[got.n_strings], t, len);
    got.strings[got.n_strings][len] = 0;
    got.n_strings++;
}

static void collect_stack(void *ctx, uint32_t id, uint32_t known, const uint64_t *f, uint32_t n)
{
    (void)ctx;
    (void)known;
    CHECK(n <= 8);
    got.stack_id = id;
    got.stack_n = n;
    memcpy(got.stack_frames, f, n * sizeof *f);
}

static const struct cmt_reader_callbacks collect_cb = {
    .on_string = collect_string,
    .on_stack = collect_stack,
    .on_event = collect_event,
};

static int read_file(const char *path, bool expect_ok)
{
    struct cmt_reader *r;
    char err[256];
    memset(&got, 0, sizeof got);
    CHECK(cmt_reader_open(path, &r, err, sizeof err) == 0);
    int rc = cmt_reader_run(r, &collect_cb, NULL);
    if (expect_ok && rc != 0)
        fprintf(stderr, "unexpected error: %s\n", cmt_reader_error(r));
    cmt_reader_close(r);
    return rc;
}

/* ---- writing -------------------------------------------------------------- */

static void meta_string(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id, const char *s)
{
    pthread_mutex_lock(&m->lock);
    uint8_t *p = cmt_meta_begin_locked(tf, m, 80);
    CHECK(p);
    struct cmt_payload b = {p, p + 80, false};
    cmt_payload_varint(&b, id);
    cmt_payload_bytes(&b, s, strlen(s));
    CHECK(!b.overflow);
    cmt_meta_commit_locked(m, CMT_META_STRING, b.p);
    pthread_mutex_unlock(&m->lock);
}

static void meta_stack(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id, const uint64_t *f,
                       unsigned n)
{
    pthread_mutex_lock(&m->lock);
    uint8_t *p = cmt_meta_begin_locked(tf, m, 200);
    CHECK(p);
    struct cmt_payload b = {p, p + 200, false};
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, 0);
    cmt_payload_varint(&b, n);
    uint64_t prev = 0;
    for (unsigned i = 0; i < n; i++) {
        cmt_payload_svarint(&b, (int64_t)(f[i] - prev));
        prev = f[i];
    }
    cmt_meta_commit_locked(m, CMT_META_STACK, b.p);
    pthread_mutex_unlock(&m->lock);
}

static void make_trace(struct cmt_trace_file *tf, const char *name, uint64_t max_size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct cmt_trace_create_options opt = {.max_size = max_size, .pid = 77};
    CHECK(cmt_trace_create(tf, path, &opt) == 0);
}

static struct cmt_event sample_event(unsigned i, uint64_t ts)
{
    struct cmt_event e = {
        .type = i % 2 ? CMT_REC_FREE : CMT_REC_ALLOC,
        .api = i % 2 ? CMT_API_CUDA_FREE : CMT_API_CUDA_MALLOC,
        .kind = i % 7 == 0 ? CMT_KIND_MANAGED : CMT_KIND_DEVICE,
        .has_device = i % 2 == 0,
        .device = (int32_t)(i % 3) - 1,
        .result = i % 11 == 0 ? 2 : 0,
        .ts = ts,
        .addr = 0x7f0000000000ull + (uint64_t)(i / 2) * 4096 * (i % 5 + 1),
        .size = i % 2 ? 0 : (uint64_t)i * 1000 + 1,
        .stream = i % 4 == 0 ? 0xabcdef00ull + i : 0,
        .stack = i % 2 ? 0 : 1 + i % 3,
        .aux = {i % 13 == 0 ? UINT64_MAX : 0, i % 6 == 0 ? 12345 : 0, 0, i % 17 == 0 ? 99 : 0},
    };
    /* A managed allocation is recorded with its kind, a free keeps its default. */
    if (e.type == CMT_REC_FREE)
        e.kind = CMT_KIND_DEVICE;
    return e;
}

/* A record without a device (releases) carries none: only compare it where
 * the writer gave one. */
static void check_same(const struct cmt_event_in *in, const struct cmt_event *e)
{
    CHECK_EQ_U64(in->type, e->type);
    CHECK_EQ_U64(in->api, e->api);
    CHECK_EQ_U64(in->kind, e->kind);
    CHECK_EQ_U64(in->ts, e->ts);
    CHECK_EQ_U64(in->addr, e->addr);
    CHECK_EQ_U64(in->size, e->size);
    CHECK_EQ_U64(in->stream, e->stream);
    CHECK_EQ_U64(in->stack, e->stack);
    CHECK_EQ_U64((uint32_t)in->result, (uint32_t)e->result);
    for (int k = 0; k < CMT_AUX_COUNT; k++)
        CHECK_EQ_U64(in->aux[k], e->aux[k]);
    if (e->has_device)
        CHECK_EQ_U64((uint32_t)in->device, (uint32_t)e->device);
}

/* 1. Every field of every event comes back exactly, with metadata. */
static void test_single_thread_roundtrip(void)
{
    struct cmt_trace_file tf;
    struct cmt_meta_stream meta;
    make_trace(&tf, "single.bin", 0);
    cmt_meta_stream_init(&meta);
    meta_string(&tf, &meta, 1, "hello");
    uint64_t frames[3] = {0x400123, 0x400100, 0x7f00deadbeef};
    meta_stack(&tf, &meta, 1, frames, 3);

    struct cmt_event_stream s = {.tid = 1234};
    static struct cmt_event written[5000];
    for (unsigned i = 0; i < 5000; i++) {
        CHECK(cmt_event_stream_reserve(&tf, &s));
        written[i] = sample_event(i, cmt_now_ns());
        cmt_event_stream_append(&s, &written[i]);
    }
    cmt_trace_finish(&tf, cmt_now_ns());
    CHECK(read_file(tf.path, true) == 0);
    CHECK_EQ_U64(got.n, 5000);
    for (unsigned i = 0; i < 5000; i++) {
        check_same(&got.ev[i], &written[i]);
        CHECK_EQ_U64(got.ev[i].tid, 1234);
    }
    CHECK_EQ_U64(got.n_strings, 1);
    CHECK_STR(got.strings[0], "hello");
    CHECK_EQ_U64(got.stack_id, 1);
    CHECK_EQ_U64(got.stack_n, 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_U64(got.stack_frames[i], frames[i]);
    /* Trimmed at close to the claimed chunks. */
    struct stat st;
    CHECK(stat(tf.path, &st) == 0);
    CHECK_EQ_U64((uint64_t)st.st_size, tf.header->claimed_end & CMT_CHECKED_VALUE_MASK);
    CHECK(tf.header->flags & CMT_FILE_FLAG_CLEAN_EXIT);
}

/* 1b. A trace read while it is written (trace_reader.h, CMT_READ_COMMITTED):
 * each open is a snapshot of what was committed, never damage, whatever
 * the writer is doing; opening it again sees what came since, across the
 * file's new segments. This process writes it, so AUTO reads it so too;
 * once finished, it reads whole. */
static void test_growing_trace(void)
{
    struct cmt_trace_file tf;
    char path[128];
    snprintf(path, sizeof path, "%s/growing.bin", dir);
    struct cmt_trace_create_options opt = {.pid = (uint32_t)getpid()};
    CHECK(cmt_trace_create(&tf, path, &opt) == 0);
    struct cmt_event_stream s[2] = {{.tid = 1}, {.tid = 2}};
    uint64_t written = 0;
    for (unsigned round = 1; round <= 4; round++) {
        for (unsigned i = 0; i < 20000; i++) {
            for (int t = 0; t < 2; t++) {
                CHECK(cmt_event_stream_reserve(&tf, &s[t]));
                struct cmt_event e = sample_event(0, cmt_now_ns());
                e.addr = 0x7f0000000000ull + written++ * 64;
                cmt_event_stream_append(&s[t], &e);
            }
        }
        for (int mode = CMT_READ_COMMITTED; mode <= CMT_READ_AUTO; mode++) {
            struct cmt_reader *r;
            char err[256];
            memset(&got, 0, sizeof got);
            CHECK(cmt_reader_open_mode(path, (enum cmt_read_mode)mode, &r, err, sizeof err) == 0);
            CHECK(cmt_reader_in_progress(r));
            int rc = cmt_reader_run(r, &collect_cb, NULL);
            if (rc != 0)
                fprintf(stderr, "round %u: %s\n", round, cmt_reader_error(r));
            CHECK(rc == 0);
            CHECK(!cmt_reader_truncated(r));
            CHECK_EQ_U64(cmt_reader_warning_count(r), 0);
            cmt_reader_close(r);
            CHECK_EQ_U64(got.n, written);
            for (size_t k = 1; k < got.n; k++)
                CHECK(got.ev[k].ts >= got.ev[k - 1].ts);
        }
    }
    CHECK(tf.n_segments > 1); /* it grew while read */
    cmt_trace_finish(&tf, cmt_now_ns());
    struct cmt_reader *r;
    char err[256];
    memset(&got, 0, sizeof got);
    CHECK(cmt_reader_open_mode(path, CMT_READ_AUTO, &r, err, sizeof err) == 0);
    CHECK(!cmt_reader_in_progress(r)); /* it says it exited: whole */
    CHECK(cmt_reader_run(r, &collect_cb, NULL) == 0);
    cmt_reader_close(r);
    CHECK_EQ_U64(got.n, written);
}

/* 2. Threads write concurrently; the reader merges them in time order and
 * loses nothing. Each event carries (thread, sequence) in addr. */
#define THREADS 8
#define PER_THREAD 20000

static struct cmt_trace_file mt_tf;

static void *writer_thread(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    struct cmt_event_stream s = {.tid = (uint32_t)(100 + t)};
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        CHECK(cmt_event_stream_reserve(&mt_tf, &s));
        struct cmt_event e = {
            .type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .has_device = true,
            .ts = cmt_now_ns(), .addr = (t << 32) | i, .size = 256,
        };
        cmt_event_stream_append(&s, &e);
    }
    return NULL;
}

static void test_threads_merge(void)
{
    make_trace(&mt_tf, "threads.bin", 0);
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, writer_thread, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    cmt_trace_finish(&mt_tf, cmt_now_ns());
    CHECK(read_file(mt_tf.path, true) == 0);
    CHECK_EQ_U64(got.n, THREADS * PER_THREAD);
    uint64_t next[THREADS] = {0};
    for (size_t i = 0; i < got.n; i++) {
        if (i)
            CHECK(got.ev[i].ts >= got.ev[i - 1].ts);
        uint64_t t = got.ev[i].addr >> 32, seq = got.ev[i].addr & 0xffffffffu;
        CHECK(t < THREADS);
        CHECK_EQ_U64(seq, next[t]);
        CHECK_EQ_U64(got.ev[i].tid, 100 + t);
        next[t]++;
    }
}

/* Copies the first len bytes of src into a new file; returns its path. */
static const char *copy_prefix(const char *src, size_t len, const char *name)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int in = open(src, O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(in >= 0 && out >= 0);
    char buf[65536];
    size_t left = len;
    while (left) {
        ssize_t n = read(in, buf, left < sizeof buf ? left : sizeof buf);
        CHECK(n > 0);
        CHECK(write(out, buf, (size_t)n) == n);
        left -= (size_t)n;
    }
    close(in);
    close(out);
    return path;
}

/* 3. A cut at any byte: no crash, the events before the cut are delivered
 * in order and every one is intact. */
static void test_truncation_everywhere(void)
{
    struct stat st;
    CHECK(stat(mt_tf.path, &st) == 0);
    size_t full = (size_t)st.st_size;
    size_t prev_n = 0;
    for (size_t cut = 4096; cut <= full; cut += full / 97 + 1) {
        const char *p = copy_prefix(mt_tf.path, cut, "cut.bin");
        struct cmt_reader *r;
        char err[256];
        memset(&got, 0, sizeof got);
        CHECK(cmt_reader_open(p, &r, err, sizeof err) == 0);
        CHECK(cmt_reader_run(r, &collect_cb, NULL) == 0);
        CHECK(cmt_reader_truncated(r) == (cut < full));
        /* What comes back is, per thread, an unbroken prefix of what was
         * written: nothing invented, nothing skipped. */
        uint64_t next[THREADS] = {0};
        for (size_t i = 0; i < got.n; i++) {
            uint64_t t = got.ev[i].addr >> 32;
            CHECK(t < THREADS);
            CHECK_EQ_U64(got.ev[i].addr & 0xffffffffu, next[t]);
            CHECK_EQ_U64(got.ev[i].size, 256);
            next[t]++;
        }
        CHECK(got.n >= prev_n);
        prev_n = got.n;
        cmt_reader_close(r);
    }
}

/* 4. Damage in a chunk header stops the read with the offset named, after
 * every event before it. */
static void test_damaged_chunk(void)
{
    struct cmt_trace_file tf;
    make_trace(&tf, "damaged.bin", 0);
    struct cmt_event_stream s = {.tid = 9};
    for (unsigned i = 0; i < 3000; i++) {
        CHECK(cmt_event_stream_reserve(&tf, &s));
        struct cmt_event e = sample_event(0, cmt_now_ns());
        e.addr = i;
        cmt_event_stream_append(&s, &e);
    }
    cmt_trace_finish(&tf, cmt_now_ns());
    /* Chunks of one thread: 4 KiB, 8 KiB, 16 KiB...: break the third. */
    uint64_t off = CMT_FILE_HEADER_SIZE + 4096 + 8192;
    struct cmt_chunk_header *h = (struct cmt_chunk_header *)(tf.segments[0].base + off);
    CHECK(h->magic == CMT_CHUNK_MAGIC_EVENTS);
    h->size = 12345;
    struct cmt_reader *r;
    char err[256];
    memset(&got, 0, sizeof got);
    CHECK(cmt_reader_open(tf.path, &r, err, sizeof err) == 0);
    CHECK(cmt_reader_run(r, &collect_cb, NULL) == -1);
    char expect[96];
    snprintf(expect, sizeof expect, "damaged chunk header at offset %llu: its checksum does not match",
             (unsigned long long)off);
    CHECK_STR(cmt_reader_error(r), expect);
    CHECK(got.n > 100);
    for (size_t i = 0; i < got.n; i++)
        CHECK_EQ_U64(got.ev[i].addr, i);
    cmt_reader_close(r);
}

/* 4b. Records of every shape: fields of every length (one to ten bytes),
 * every mask, kinds, aux fields, devices, in chunks of every size. The
 * reader decodes most records on a fast path and the others (the last
 * records of a chunk, long fields, long bodies) on the general one: both
 * give back exactly what was written, and damage anywhere in a chunk is
 * named at its record, after every event before it. */
static uint64_t shape_rng = 0x9e3779b97f4a7c15ull;

static uint64_t shape_rnd(void)
{
    shape_rng ^= shape_rng >> 12;
    shape_rng ^= shape_rng << 25;
    shape_rng ^= shape_rng >> 27;
    return shape_rng * 0x2545f4914f6cdd1dull;
}

/* A value of a random width: 0 to 64 bits, short ones most often. */
static uint64_t shape_value(void)
{
    unsigned bits = (unsigned)(shape_rnd() % 4 ? shape_rnd() % 24 : shape_rnd() % 65);
    return bits == 0 ? 0 : shape_rnd() >> (64 - bits);
}

#define SHAPES 20000
struct shape_trace {
    struct cmt_trace_file tf;
    struct cmt_event written[SHAPES];
    uint64_t rec_off[SHAPES];   /* each record's file offset */
    uint64_t rec_end[SHAPES];   /* where it ends */
    uint64_t chunk_off[SHAPES]; /* its chunk's */
};

static uint64_t file_offset(const struct cmt_trace_file *tf, const uint8_t *p)
{
    for (unsigned i = 0; i < tf->n_segments; i++)
        if (p >= tf->segments[i].base && p < tf->segments[i].base + tf->segments[i].size)
            return tf->segments[i].offset + (uint64_t)(p - tf->segments[i].base);
    CHECK(!"an address in the trace's segments");
    return 0;
}

static void write_shapes(struct shape_trace *t, const char *name, unsigned out_of_order_at)
{
    make_trace(&t->tf, name, 0);
    struct cmt_event_stream s = {.tid = 5};
    uint64_t ts = 0, ahead = 0;
    for (unsigned i = 0; i < SHAPES; i++) {
        CHECK(cmt_event_stream_reserve(&t->tf, &s));
        uint8_t type = (uint8_t)(CMT_REC_ALLOC + shape_rnd() % (CMT_REC_BLOCK - CMT_REC_ALLOC + 1));
        uint8_t api = (uint8_t)shape_rnd();
        uint64_t step = shape_rnd() % 8 ? shape_rnd() % 3000 : shape_value() & ((1ull << 40) - 1);
        /* never before the chunk's claim (W1), but for the one out of order */
        ahead += step;
        ts = i == out_of_order_at ? ts - 1000 : cmt_now_ns() + ahead;
        struct cmt_event e = {
            .type = type,
            .api = api,
            .kind = shape_rnd() % 5 ? (uint8_t)cmt_api_default_kind(api) : (uint8_t)shape_rnd(),
            .has_device = shape_rnd() % 3 == 0,
            .device = (int32_t)(shape_rnd() % 4 ? shape_rnd() % 9 : shape_value()) - 1,
            .result = shape_rnd() % 6 ? 0 : (int32_t)shape_value(),
            .ts = ts,
            .addr = shape_rnd() % 3 ? 0x7f0000000000ull + shape_value() : shape_value(),
            .size = shape_value(),
            .stream = shape_rnd() % 4 ? 0 : shape_value(),
            .stack = shape_rnd() % 3 ? shape_rnd() % 200 : shape_value(),
        };
        for (int k = 0; k < CMT_AUX_COUNT; k++)
            e.aux[k] = shape_rnd() % 4 ? 0 : shape_value();
        t->written[i] = e;
        t->rec_off[i] = file_offset(&t->tf, s.pos);
        t->chunk_off[i] = file_offset(&t->tf, s.chunk);
        cmt_event_stream_append(&s, &e);
        t->rec_end[i] = file_offset(&t->tf, s.pos - 1) + 1;
    }
    cmt_trace_finish(&t->tf, ts + 1);
}

/* Reads a trace in memory into got, with the fast decoding paths or the
 * portable ones; returns cmt_reader_run's result and the reader. */
static int read_memory(const uint8_t *data, size_t size, bool portable, struct cmt_reader **out)
{
    char err[256];
    memset(&got, 0, sizeof got);
    CHECK(cmt_reader_open_memory(data, size, out, err, sizeof err) == 0);
    if (portable)
        cmt_reader_portable_decode(*out);
    return cmt_reader_run(*out, &collect_cb, NULL);
}

static uint8_t *load_file(const char *path, size_t *size)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    uint8_t *data = malloc((size_t)st.st_size);
    int fd = open(path, O_RDONLY);
    CHECK(data && fd >= 0 && read(fd, data, (size_t)st.st_size) == st.st_size);
    close(fd);
    *size = (size_t)st.st_size;
    return data;
}

/* Records of t a fast decoding path may leave to the general one: those
 * that end near their chunk's end or commit end, with a field longer than
 * 8 bytes, or with a body shorter than 4 bytes. */
static unsigned shapes_for_the_general_path(const struct shape_trace *t, const uint8_t *data)
{
    unsigned n = 0;
    for (unsigned i = 0; i < SHAPES; i++) {
        const uint8_t *h = data + t->chunk_off[i];
        uint32_t size, commit_end;
        memcpy(&size, h + 4, sizeof size);
        memcpy(&commit_end, h + 40, sizeof commit_end);
        uint64_t limit = t->chunk_off[i] + (commit_end < size ? commit_end : size);
        const uint8_t *p = data + t->rec_off[i] + 2, *end = data + t->rec_end[i] - CMT_RECORD_CHECK_SIZE;
        bool long_field = false;
        while (p < end) { /* the mask and the fields */
            unsigned len = 1;
            while (*p++ & 0x80)
                len++;
            long_field = long_field || len > 8;
        }
        if (t->rec_off[i] + CMT_MAX_EVENT_RECORD + 16 >= limit || long_field || end - (data + t->rec_off[i] + 1) < 4)
            n++;
    }
    return n;
}

static void test_record_shapes(void)
{
    static struct shape_trace t, u;
    write_shapes(&t, "shapes.bin", SHAPES);
    /* A thread's events out of time order, in the middle of a chunk: said
     * once, at that record. */
    write_shapes(&u, "shapes-order.bin", 7777);
    size_t size, u_size;
    uint8_t *copy = load_file(t.tf.path, &size), *u_data = load_file(u.tf.path, &u_size);
    for (int portable = 0; portable < 2; portable++) {
        struct cmt_reader *r;
        CHECK(read_memory(copy, size, portable, &r) == 0);
        /* Both paths were taken, the fast one for every record it can take
         * (a fast path that gives up on a record it should read, a check
         * it computes wrongly, would only be slower). */
        unsigned general = shapes_for_the_general_path(&t, copy);
        CHECK(general > 0 && general < SHAPES / 4);
        CHECK(cmt_reader_stats(r)->slow_records > 0);
        CHECK(cmt_reader_stats(r)->slow_records <= general);
        cmt_reader_close(r);
        CHECK_EQ_U64(got.n, SHAPES);
        for (unsigned i = 0; i < SHAPES; i++) {
            check_same(&got.ev[i], &t.written[i]);
            CHECK_EQ_U64(got.ev[i].tid, 5);
        }
        /* A wrong check at records all over the chunks: the first record of
         * a chunk, records in its middle, its last ones. */
        for (unsigned i = 0; i < SHAPES; i += i < 50 || SHAPES - i < 50 ? 1 : 97) {
            copy[t.rec_end[i] - 1] ^= 0x40;
            char expect[160];
            CHECK(read_memory(copy, size, portable, &r) == -1);
            snprintf(expect, sizeof expect,
                     "damaged event record at offset %llu (chunk at offset %llu): its checksum does not match",
                     (unsigned long long)t.rec_off[i], (unsigned long long)t.chunk_off[i]);
            CHECK_STR(cmt_reader_error(r), expect);
            CHECK_EQ_U64(got.n, i);
            cmt_reader_close(r);
            copy[t.rec_end[i] - 1] ^= 0x40;
        }
        char expect[128];
        CHECK(read_memory(u_data, u_size, portable, &r) == 0);
        CHECK_EQ_U64(got.n, SHAPES);
        CHECK_EQ_U64(cmt_reader_warning_count(r), 1);
        snprintf(expect, sizeof expect, "events of thread 5 are out of time order at offset %llu",
                 (unsigned long long)u.rec_off[7777]);
        CHECK_STR(cmt_reader_warning(r, 0), expect);
        cmt_reader_close(r);
    }
    free(copy);
    free(u_data);
}

/* The masks the reader decodes with a copy of its own (decode_fast), in a
 * sequence where each follows records with other fields: an event after one
 * with a stream, a result or aux values has them zero, and a release after
 * an allocation has no size or stack. Every event comes back exactly, with
 * the mask intended, on the fast paths and the portable ones. */
static void test_common_masks(void)
{
    static struct shape_trace t;
    enum { TS = CMT_F_TS, DEV = CMT_F_DEVICE, ADDR = CMT_F_ADDR, SIZE = CMT_F_SIZE, STREAM = CMT_F_STREAM,
           RESULT = CMT_F_RESULT, STACK = CMT_F_STACK, KIND = CMT_F_KIND, AUX0 = CMT_F_AUX0, AUX3 = CMT_F_AUX3 };
    static const uint32_t masks[] = {
        TS | ADDR | SIZE | STACK, TS | ADDR, TS | ADDR | SIZE | STREAM | STACK, TS | ADDR | STREAM,
        TS | SIZE, TS | ADDR | SIZE, TS | ADDR | SIZE | STACK | AUX0 | AUX3, TS | ADDR,
        TS | ADDR | RESULT, TS | ADDR | SIZE | STACK, TS | DEV | ADDR | SIZE | STACK, TS | ADDR,
        TS | ADDR | SIZE | KIND, TS | SIZE, TS | ADDR | STREAM | RESULT | AUX0, TS | ADDR | SIZE,
    };
    const unsigned n_masks = sizeof masks / sizeof masks[0];
    make_trace(&t.tf, "masks.bin", 0);
    struct cmt_event_stream s = {.tid = 5};
    uint64_t ahead = 0, addr = 0x7f0000000000ull, ts = 0;
    int32_t device = 0;
    for (unsigned i = 0; i < SHAPES; i++) {
        CHECK(cmt_event_stream_reserve(&t.tf, &s));
        uint32_t m = masks[i % n_masks];
        uint8_t type = m & SIZE ? (m & ADDR ? CMT_REC_ALLOC : CMT_REC_BLOCK) : CMT_REC_FREE;
        uint8_t api = (uint8_t)(1 + shape_rnd() % 40);
        /* never before the chunk's claim (W1) */
        ahead += 1 + shape_rnd() % (i % 3 ? 100 : 1u << 20);
        ts = cmt_now_ns() + ahead;
        if (m & ADDR)
            addr += (uint64_t)((shape_rnd() % 2 ? 1 : -1) * (int64_t)(1 + shape_rnd() % (1ull << (i % 5 * 8))));
        if (m & DEV)
            device = device == 1 ? 2 : 1;
        struct cmt_event e = {
            .type = type,
            .api = api,
            .kind = (uint8_t)(m & KIND ? (cmt_api_default_kind(api) + 1) % 5 : cmt_api_default_kind(api)),
            .has_device = (m & DEV) != 0,
            .device = device,
            .result = m & RESULT ? (int32_t)(1 + shape_rnd() % 1000) : 0,
            .ts = ts,
            .addr = addr,
            .size = m & SIZE ? 1 + shape_value() % (1ull << 40) : 0,
            .stream = m & STREAM ? 1 + shape_rnd() % 100000 : 0,
            .stack = m & STACK ? 1 + shape_rnd() % (i % 2 ? 100 : 1u << 20) : 0,
        };
        e.aux[0] = m & AUX0 ? 1 + shape_rnd() % 5000 : 0;
        e.aux[3] = m & AUX3 ? 1 + shape_value() : 0;
        t.written[i] = e;
        t.rec_off[i] = file_offset(&t.tf, s.pos);
        t.chunk_off[i] = file_offset(&t.tf, s.chunk);
        cmt_event_stream_append(&s, &e);
        t.rec_end[i] = file_offset(&t.tf, s.pos - 1) + 1;
    }
    cmt_trace_finish(&t.tf, ts + 1);
    size_t size;
    uint8_t *data = load_file(t.tf.path, &size);
    unsigned general = shapes_for_the_general_path(&t, data);
    for (int portable = 0; portable < 2; portable++) {
        struct cmt_reader *r;
        CHECK(read_memory(data, size, portable, &r) == 0);
        CHECK(cmt_reader_stats(r)->slow_records <= general);
        cmt_reader_close(r);
        CHECK_EQ_U64(got.n, SHAPES);
        for (unsigned i = 0; i < SHAPES; i++) {
            check_same(&got.ev[i], &t.written[i]);
            /* a chunk's first record has the deltas from the chunk's start */
            if (i && t.chunk_off[i] == t.chunk_off[i - 1])
                CHECK_EQ_U64(got.ev[i].mask, masks[i % n_masks]);
            CHECK_EQ_U64(got.ev[i].tid, 5);
        }
    }
    free(data);
}

/* 5. A record whose body was written but whose type byte was not (the
 * writer died mid-record) ends that chunk; other threads' chunks are read. */
static void test_uncommitted_record(void)
{
    struct cmt_trace_file tf;
    make_trace(&tf, "uncommitted.bin", 0);
    struct cmt_event_stream a = {.tid = 1}, b = {.tid = 2};
    for (unsigned i = 0; i < 10; i++) {
        CHECK(cmt_event_stream_reserve(&tf, &a));
        struct cmt_event e = sample_event(0, cmt_now_ns());
        e.addr = i;
        cmt_event_stream_append(&a, &e);
    }
    /* Thread a dies after encoding the body of record 10. */
    CHECK(cmt_event_stream_reserve(&tf, &a));
    struct cmt_event dead = sample_event(0, cmt_now_ns());
    cmt_event_encode(a.pos, &dead, &a.prev_ts, &a.prev_addr, &a.prev_device);
    for (unsigned i = 0; i < 10; i++) {
        CHECK(cmt_event_stream_reserve(&tf, &b));
        struct cmt_event e = sample_event(0, cmt_now_ns());
        e.addr = 1000 + i;
        cmt_event_stream_append(&b, &e);
    }
    CHECK(read_file(tf.path, true) == 0);
    CHECK_EQ_U64(got.n, 20);
    unsigned from_a = 0, from_b = 0;
    for (size_t i = 0; i < got.n; i++)
        got.ev[i].tid == 1 ? from_a++ : from_b++;
    CHECK_EQ_U64(from_a, 10);
    CHECK_EQ_U64(from_b, 10);
}

/* 6. The size limit stops recording cleanly and says so in the header. */
static void test_size_limit(void)
{
    struct cmt_trace_file tf;
    make_trace(&tf, "limit.bin", 256 * 1024);
    struct cmt_event_stream s = {.tid = 3};
    unsigned written = 0;
    for (unsigned i = 0; i < 1000000; i++) {
        if (!cmt_event_stream_reserve(&tf, &s))
            break;
        struct cmt_event e = sample_event(0, cmt_now_ns());
        e.addr = i;
        cmt_event_stream_append(&s, &e);
        written++;
    }
    CHECK(written > 1000 && written < 1000000);
    CHECK(tf.header->flags & CMT_FILE_FLAG_SIZE_LIMIT);
    CHECK(!cmt_trace_is_active(&tf));
    cmt_trace_finish(&tf, cmt_now_ns());
    struct stat st;
    CHECK(stat(tf.path, &st) == 0);
    CHECK((uint64_t)st.st_size <= 256 * 1024);
    CHECK(read_file(tf.path, true) == 0);
    CHECK_EQ_U64(got.n, written);
}

/* How many of the pages in [from, to) are mapped in this process's page
 * tables (/proc/self/pagemap, bit 63): what populating does and a fault
 * does for the page it hits. (Page-cache residency would not tell: the
 * kernel's read-ahead brings pages into the cache that are not mapped.)
 * -1 when pagemap cannot be read. */
static int present_pages(const uint8_t *from, const uint8_t *to)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0)
        return -1;
    int n = 0;
    for (uintptr_t a = (uintptr_t)from; a < (uintptr_t)to; a += 4096) {
        uint64_t entry;
        if (pread(fd, &entry, sizeof entry, (off_t)(a / 4096 * sizeof entry)) != (ssize_t)sizeof entry) {
            n = -1;
            break;
        }
        n += (int)(entry >> 63);
    }
    close(fd);
    return n;
}

/* Waits for the helper thread to map [from, to): as long as it takes (a
 * loaded machine may not run the helper for a while; a helper that never
 * maps it is a hang meson's test timeout reports, not a time bound here). */
static bool wait_present(const uint8_t *from, const uint8_t *to)
{
    int want = (int)((to - from) / 4096);
    for (;;) {
        int n = present_pages(from, to);
        if (n == want || n == -1)
            return true;
        usleep(1000);
    }
}

/* 6b. Each claim asks for the pages up to CMT_POPULATE_AHEAD past it to be
 * made writable before they are written (trace_file.c,
 * populate_ahead_locked), within the segment, in every segment: inline, at
 * once; by the helper thread, soon after; with populating off, never. The
 * trace reads back the same either way. */
static void claim_chunks(struct cmt_trace_file *tf, enum cmt_populate_mode mode)
{
    uint64_t segment_offset = 0;
    for (unsigned i = 0; i < 700; i++) {
        uint64_t claim_ns;
        uint8_t *c = cmt_trace_claim_chunk(tf, CMT_CHUNK_MAGIC_EVENTS, 4096, 9, i, 0, &claim_ns);
        CHECK(c != NULL);
        const struct cmt_segment *seg = &tf->segments[tf->n_segments - 1];
        if (seg->offset != segment_offset) {
            /* A new segment: the file grew, its pages start unpopulated. */
            segment_offset = seg->offset;
            CHECK(c == seg->base);
        }
        uint64_t want = tf->segment_used + CMT_POPULATE_AHEAD / 2;
        if (want > seg->size)
            want = seg->size;
        const uint8_t *next = seg->base + tf->segment_used;
        if (mode == CMT_POPULATE_OFF) {
            /* (Which pages past it are mapped is the kernel's choice here:
             * fault-around maps neighbours of a page that a read faulted.) */
            CHECK_EQ_U64(tf->populated, 0);
            continue;
        }
        CHECK(tf->populated >= want);
        CHECK(tf->populated <= seg->size);
        CHECK(tf->populated <= tf->segment_used + CMT_POPULATE_AHEAD);
        CHECK_EQ_U64(tf->populated % 4096, 0);
        if (mode == CMT_POPULATE_INLINE) {
            int pages = (int)((tf->populated - tf->segment_used) / 4096);
            int present = present_pages(next, seg->base + tf->populated);
            CHECK(present == pages || present == -1);
        } else if (i % 50 == 0) {
            CHECK(wait_present(next, seg->base + tf->populated));
        }
    }
    CHECK(tf->n_segments >= 2);
}

/* Defined by every sanitizer runtime: under one the shim starts no helper
 * thread and populates inline (page_populate.c, fork safety). */
extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

/* The helper thread: named, and deaf to every signal a program may send to
 * the process (they must reach the program's own threads). */
static void check_helper_thread(void)
{
    if (__sanitizer_print_stack_trace != NULL) {
        CHECK(!cmt_populate_helper_running());
        return;
    }
    CHECK(cmt_populate_helper_running());
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[320], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        if (strncmp(comm, "cumemtrace-pop", 14) != 0)
            continue;
        found++;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
        f = fopen(path, "r");
        CHECK(f != NULL);
        char line[256];
        unsigned long long blocked = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "SigBlk: %llx", &blocked) == 1)
                break;
        fclose(f);
        const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE, SIGPROF, SIGRTMIN};
        for (unsigned k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
            CHECK(blocked & (1ull << (sigs[k] - 1)));
    }
    closedir(d);
    CHECK_EQ_U64(found, 1);
}

static void test_populate_ahead(void)
{
    static const struct {
        const char *name;
        enum cmt_populate_mode mode;
    } runs[] = {
        {"populate-inline.bin", CMT_POPULATE_INLINE},
        {"populate-thread.bin", CMT_POPULATE_THREAD},
        {"populate-off.bin", CMT_POPULATE_OFF},
    };
    for (unsigned r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        struct cmt_trace_file tf;
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, runs[r].name);
        struct cmt_trace_create_options opt = {.pid = 77, .populate = runs[r].mode};
        CHECK(cmt_trace_create(&tf, path, &opt) == 0);
        if (cmt_populate_refused() && runs[r].mode != CMT_POPULATE_OFF) {
            printf("populate ahead: MADV_POPULATE_WRITE refused by this kernel, %s not checked\n", runs[r].name);
        } else {
            claim_chunks(&tf, runs[r].mode);
            CHECK(!cmt_populate_refused());
            if (runs[r].mode == CMT_POPULATE_THREAD)
                check_helper_thread();
        }
        cmt_trace_finish(&tf, cmt_now_ns());
        CHECK(read_file(tf.path, true) == 0);
    }
}

/* 7. Files that are not traces, or are of a newer format. */
static void expect_open_error(const void *data, size_t len, const char *expect)
{
    struct cmt_reader *r;
    char err[256];
    CHECK(cmt_reader_open_memory(data, len, &r, err, sizeof err) != 0);
    if (!strstr(err, expect)) {
        fprintf(stderr, "error '%s' does not contain '%s'\n", err, expect);
        exit(1);
    }
}

static void test_bad_files(void)
{
    static uint8_t buf[8192];
    expect_open_error(buf, 0, "empty file");
    expect_open_error(buf, sizeof buf, "no trace header");
    memcpy(buf, "#!/bin/sh\necho hi\n", 18);
    expect_open_error(buf, sizeof buf, "not a cumemtrace trace");
    struct cmt_file_header h = {.version_major = CMT_VERSION_MAJOR + 1, .header_size = 4096,
                                .endian_check = CMT_ENDIAN_CHECK};
    memcpy(h.magic, CMT_FILE_MAGIC, 8);
    memcpy(buf, &h, sizeof h);
    expect_open_error(buf, sizeof buf, "written by a newer cumemtrace (trace format 3.0)");
    /* Format 1 had no checksums: refused, with what to do. */
    h.version_major = 1;
    memcpy(buf, &h, sizeof h);
    expect_open_error(buf, sizeof buf, "trace format 1.0 has no checksums and is no longer read");
    /* A changed field of a format-2 header (here header_size). */
    h.version_major = CMT_VERSION_MAJOR;
    h.header_check = cmt_file_header_check(&h);
    h.header_size = 8192;
    memcpy(buf, &h, sizeof h);
    expect_open_error(buf, sizeof buf, "damaged trace header: its checksum (offset 68)");
    /* 100 bytes of a trace: its magic, then the cut. */
    expect_open_error(buf, 100, "trace is truncated: the file ends at offset 100, inside its 4096-byte header");
    h.endian_check = 0x0807060504030201ull;
    memcpy(buf, &h, sizeof h);
    expect_open_error(buf, sizeof buf, "another byte order");
}

/* 8. An existing file is never overwritten, a symlink never followed. */
static void test_no_clobber(void)
{
    char path[128], link_target[128];
    snprintf(path, sizeof path, "%s/exists.bin", dir);
    snprintf(link_target, sizeof link_target, "%s/victim", dir);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0 && write(fd, "keep", 4) == 4);
    close(fd);
    struct cmt_trace_file tf;
    struct cmt_trace_create_options opt = {.pid = 1};
    CHECK(cmt_trace_create(&tf, path, &opt) == 0);
    char expect[160];
    snprintf(expect, sizeof expect, "%s/exists.1.bin", dir);
    CHECK_STR(tf.path, expect);
    struct stat st;
    CHECK(stat(tf.path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(stat(path, &st) == 0 && st.st_size == 4);
    cmt_trace_finish(&tf, cmt_now_ns());

    char lnk[128];
    snprintf(lnk, sizeof lnk, "%s/link.bin", dir);
    CHECK(symlink(link_target, lnk) == 0);
    CHECK(cmt_trace_create(&tf, lnk, &opt) == 0);
    snprintf(expect, sizeof expect, "%s/link.1.bin", dir);
    CHECK_STR(tf.path, expect);
    CHECK(access(link_target, F_OK) != 0); /* the dangling link's target was not created */
    cmt_trace_finish(&tf, cmt_now_ns());
}

/* 5. IPC records (format 2.2) come back field by field; one that verifies
 * but names an API that is no IPC call, or a kind that is not its API's,
 * is damage at its offset; a flipped byte in one is a checksum mismatch. */
static struct cmt_event ipc_event(uint8_t api, uint64_t ts, uint64_t addr, uint64_t size, uint64_t fp)
{
    struct cmt_event e = {
        .type = CMT_REC_IPC,
        .api = api,
        .kind = cmt_api_default_kind(api),
        .has_device = true,
        .device = 1,
        .ts = ts,
        .addr = addr,
        .size = size,
        .stack = 2,
        .aux = {fp, api == CMT_API_CUDA_IPC_OPEN_MEM_HANDLE ? 1 : 0, 0, 0},
    };
    return e;
}

static void write_ipc_trace(struct cmt_trace_file *tf, const char *name, const struct cmt_event *bad, uint64_t *bad_off)
{
    make_trace(tf, name, 0);
    struct cmt_event_stream s = {.tid = 5};
    struct cmt_event w[] = {
        ipc_event(CMT_API_CUDA_IPC_GET_MEM_HANDLE, cmt_now_ns(), 0x500000000000ull, 0, 0x1234567890abcdefull),
        ipc_event(CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, cmt_now_ns(), 0x6a0000000000ull, 64ull << 20, 0xfeedull),
        ipc_event(CMT_API_CU_IPC_CLOSE_MEM_HANDLE, cmt_now_ns(), 0x6a0000000000ull, 0, 0),
        ipc_event(CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, cmt_now_ns(), 0xc0de000000000001ull, 0, 0x77ull),
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        CHECK(cmt_event_stream_reserve(tf, &s));
        cmt_event_stream_append(&s, &w[i]);
    }
    if (bad) {
        CHECK(cmt_event_stream_reserve(tf, &s));
        *bad_off = (uint64_t)(s.pos - tf->segments[0].base);
        cmt_event_stream_append(&s, bad);
    }
    cmt_trace_finish(tf, cmt_now_ns());
    if (bad)
        return;
    CHECK(read_file(tf->path, true) == 0);
    CHECK_EQ_U64(got.n, 4);
    for (size_t i = 0; i < 4; i++)
        check_same(&got.ev[i], &w[i]);
    CHECK_EQ_U64(got.ev[1].kind, CMT_KIND_IPC_MAPPING);
    CHECK_EQ_U64(got.ev[3].kind, CMT_KIND_VMM_IMPORTED);
}

static void expect_damage(const char *path, size_t events, const char *expect)
{
    struct cmt_reader *r;
    char err[256];
    memset(&got, 0, sizeof got);
    CHECK(cmt_reader_open(path, &r, err, sizeof err) == 0);
    CHECK(cmt_reader_run(r, &collect_cb, NULL) == -1);
    CHECK_STR(cmt_reader_error(r), expect);
    CHECK_EQ_U64(got.n, events); /* every record before the damage */
    cmt_reader_close(r);
}

static void test_ipc_records(void)
{
    struct cmt_trace_file tf;
    write_ipc_trace(&tf, "ipc.bin", NULL, NULL);
    CHECK_EQ_U64(tf.header->version_minor, CMT_VERSION_MINOR);

    char expect[256];
    uint64_t off = 0;
    struct cmt_event bad = ipc_event(CMT_API_CUDA_MALLOC, cmt_now_ns(), 0x500000000000ull, 512, 0);
    bad.kind = CMT_KIND_DEVICE;
    write_ipc_trace(&tf, "ipc-api.bin", &bad, &off);
    snprintf(expect, sizeof expect,
             "damaged event record at offset %llu (chunk at offset 4096): an IPC record names an API that is no "
             "IPC call (api 1, kind 0)",
             (unsigned long long)off);
    expect_damage(tf.path, 4, expect);

    bad = ipc_event(CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, cmt_now_ns(), 0x6a0000000000ull, 4096, 9);
    bad.kind = CMT_KIND_DEVICE;
    write_ipc_trace(&tf, "ipc-kind.bin", &bad, &off);
    snprintf(expect, sizeof expect,
             "damaged event record at offset %llu (chunk at offset 4096): an IPC record has a memory kind that is "
             "not its API's (api 65, kind 0)",
             (unsigned long long)off);
    expect_damage(tf.path, 4, expect);

    /* A flipped byte in a well-formed IPC record: its check catches it. */
    bad = ipc_event(CMT_API_CU_IPC_GET_MEM_HANDLE, cmt_now_ns(), 0x500000001000ull, 0, 0x1111222233334444ull);
    write_ipc_trace(&tf, "ipc-flip.bin", &bad, &off);
    int fd = open(tf.path, O_RDWR);
    CHECK(fd >= 0);
    uint8_t byte;
    CHECK(pread(fd, &byte, 1, (off_t)off + 1) == 1);
    byte ^= 0x01; /* the api: 67 becomes 66, still an IPC call */
    CHECK(pwrite(fd, &byte, 1, (off_t)off + 1) == 1);
    close(fd);
    snprintf(expect, sizeof expect,
             "damaged event record at offset %llu (chunk at offset 4096): its checksum does not match",
             (unsigned long long)off);
    expect_damage(tf.path, 4, expect);
}

/* 6. The pools' IPC records (format 2.3) come back field by field; in a
 * trace of format 2.2 one is damage at its offset (2.2 has no such API). */
static void write_pool_ipc_trace(struct cmt_trace_file *tf, const char *name, uint16_t minor, uint64_t *last_off)
{
    make_trace(tf, name, 0);
    if (minor != CMT_VERSION_MINOR) {
        struct cmt_file_header *h = tf->header;
        h->version_minor = minor;
        h->header_check = cmt_file_header_check(h);
    }
    struct cmt_event_stream s = {.tid = 5};
    struct cmt_event w[] = {
        ipc_event(CMT_API_CUDA_IPC_GET_MEM_HANDLE, cmt_now_ns(), 0x500000000000ull, 0, 0x1234ull),
        ipc_event(CMT_API_CUDA_MEM_POOL_EXPORT_POINTER, cmt_now_ns(), 0x500000200000ull, 0, 0x5678ull),
        ipc_event(CMT_API_CU_MEM_POOL_IMPORT_POINTER, cmt_now_ns(), 0x6a0000000000ull, 32ull << 20, 0x5678ull),
    };
    w[2].aux[CMT_IPC_AUX_POOL] = 0x55aa00000000ull;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        CHECK(cmt_event_stream_reserve(tf, &s));
        if (i == 1)
            *last_off = (uint64_t)(s.pos - tf->segments[0].base);
        cmt_event_stream_append(&s, &w[i]);
    }
    cmt_trace_finish(tf, cmt_now_ns());
    if (minor != CMT_VERSION_MINOR)
        return;
    CHECK(read_file(tf->path, true) == 0);
    CHECK_EQ_U64(got.n, 3);
    for (size_t i = 0; i < 3; i++)
        check_same(&got.ev[i], &w[i]);
    CHECK_EQ_U64(got.ev[1].kind, CMT_KIND_ASYNC);
    CHECK_EQ_U64(got.ev[2].kind, CMT_KIND_IPC_MAPPING);
    CHECK_EQ_U64(got.ev[2].aux[CMT_IPC_AUX_POOL], 0x55aa00000000ull);
}

static void test_pool_ipc_records(void)
{
    struct cmt_trace_file tf;
    uint64_t off = 0;
    write_pool_ipc_trace(&tf, "ipc-pool.bin", CMT_VERSION_MINOR, &off);
    write_pool_ipc_trace(&tf, "ipc-pool-2.2.bin", 2, &off);
    char expect[256];
    snprintf(expect, sizeof expect,
             "damaged event record at offset %llu (chunk at offset 4096): an IPC record names a pool's sharing API "
             "(format 2.3) in a trace of an older format (api 78, kind 3)",
             (unsigned long long)off);
    expect_damage(tf.path, 1, expect);
}

int main(void)
{
    make_dir();
    test_ipc_records();
    test_pool_ipc_records();
    test_single_thread_roundtrip();
    test_growing_trace();
    test_threads_merge();
    test_truncation_everywhere();
    test_damaged_chunk();
    test_record_shapes();
    test_common_masks();
    test_uncommitted_record();
    test_size_limit();
    test_populate_ahead();
    test_bad_files();
    test_no_clobber();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return 0;
}
