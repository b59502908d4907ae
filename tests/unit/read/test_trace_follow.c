/* SPDX-License-Identifier: MIT */
/* The reader's follow mode (trace_reader.h) against the real writer, as a
 * library: each poll delivers exactly what was committed since the last,
 * across chunk boundaries and threads writing while it polls, metadata
 * before the events that name it, nothing twice, nothing lost, and the
 * trace's end once the writer finished. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "clock.h"
#include "event_stream.h"
#include "meta_stream.h"
#include "test_util.h"
#include "trace_file.h"
#include "trace_reader.h"

static char dir[64];

#define MAX_EVENTS 400000
static struct {
    struct cmt_event_in ev[MAX_EVENTS];
    size_t n;
    uint32_t max_stack; /* the highest stack id defined so far */
    bool stack_before_use;
} got;

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    (void)ctx;
    CHECK(got.n < MAX_EVENTS);
    if (e->stack > got.max_stack)
        got.stack_before_use = false;
    got.ev[got.n++] = *e;
    return 0;
}

static void on_stack(void *ctx, uint32_t id, uint32_t known, const uint64_t *f, uint32_t n)
{
    (void)ctx;
    (void)known;
    (void)f;
    (void)n;
    if (id > got.max_stack)
        got.max_stack = id;
}

static const struct cmt_reader_callbacks cb = {.on_stack = on_stack, .on_event = on_event};

static void meta_stack(struct cmt_trace_file *tf, struct cmt_meta_stream *m, uint32_t id)
{
    pthread_mutex_lock(&m->lock);
    uint8_t *p = cmt_meta_begin_locked(tf, m, 64);
    CHECK(p);
    struct cmt_payload b = {p, p + 64, false};
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, 0);
    cmt_payload_varint(&b, 1);
    cmt_payload_svarint(&b, 0x401000 + id);
    CHECK(!b.overflow);
    cmt_meta_commit_locked(m, CMT_META_STACK, b.p);
    pthread_mutex_unlock(&m->lock);
}

static void append(struct cmt_trace_file *tf, struct cmt_event_stream *s, uint64_t addr, uint32_t stack)
{
    CHECK(cmt_event_stream_reserve(tf, s));
    struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .has_device = true,
                          .ts = cmt_now_ns(), .addr = addr, .size = 4096, .stack = stack};
    cmt_event_stream_append(s, &e);
}

static void append_at(struct cmt_trace_file *tf, struct cmt_event_stream *s, uint64_t addr, uint64_t ts)
{
    CHECK(cmt_event_stream_reserve(tf, s));
    struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .has_device = true,
                          .ts = ts, .addr = addr, .size = 4096, .stack = 0};
    cmt_event_stream_append(s, &e);
}

/* 0. An event committed after a later one of another thread was delivered
 * comes at the next poll with the latest time delivered; the events of its
 * thread after it keep their own times (each is decoded from the one
 * before as written, not as delivered). */
static void test_late(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/late.bin", dir);
    struct cmt_trace_file tf;
    struct cmt_trace_create_options opt = {.pid = 78};
    CHECK(cmt_trace_create(&tf, path, &opt) == 0);
    struct cmt_event_stream a = {.tid = 1}, b = {.tid = 2};
    uint64_t base = cmt_now_ns();
    append_at(&tf, &a, 0xa1, base + 1000);
    struct cmt_reader *r;
    char err[256];
    CHECK(cmt_reader_open_follow(path, &r, err, sizeof err) == 0);
    memset(&got, 0, sizeof got);
    CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
    CHECK_EQ_U64(got.n, 1);
    append_at(&tf, &b, 0xb1, base + 500);
    append_at(&tf, &b, 0xb2, base + 1500);
    append_at(&tf, &a, 0xa2, base + 2000);
    CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
    CHECK_EQ_U64(got.n, 4);
    static const uint64_t addr[] = {0xa1, 0xb1, 0xb2, 0xa2}, at[] = {1000, 1000, 1500, 2000};
    for (size_t i = 0; i < 4; i++) {
        CHECK_EQ_U64(got.ev[i].addr, addr[i]);
        CHECK_EQ_U64(got.ev[i].ts - base, at[i]);
    }
    CHECK_EQ_U64(cmt_reader_late_events(r), 1);
    cmt_trace_finish(&tf, cmt_now_ns());
    cmt_reader_close(r);
}

/* 1. One writer, polls between batches: each poll brings that batch only,
 * in order, over chunks claimed in between (4 KiB doubling). */
static void test_batches(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/batches.bin", dir);
    struct cmt_trace_file tf;
    struct cmt_trace_create_options opt = {.pid = 77};
    CHECK(cmt_trace_create(&tf, path, &opt) == 0);
    struct cmt_meta_stream meta;
    cmt_meta_stream_init(&meta);
    struct cmt_event_stream s = {.tid = 1};
    append(&tf, &s, 1, 0); /* the first chunk exists before the reader opens */
    struct cmt_reader *r;
    char err[256];
    CHECK(cmt_reader_open_follow(path, &r, err, sizeof err) == 0);
    memset(&got, 0, sizeof got);
    got.stack_before_use = true;
    CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
    CHECK_EQ_U64(got.n, 1);
    uint64_t next = 2;
    static const unsigned batch[] = {0, 10, 1000, 3, 20000, 1, 50000};
    for (size_t k = 0; k < sizeof batch / sizeof batch[0]; k++) {
        size_t before = got.n;
        meta_stack(&tf, &meta, (uint32_t)k + 1);
        for (unsigned i = 0; i < batch[k]; i++)
            append(&tf, &s, next++, (uint32_t)k + 1);
        CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
        CHECK_EQ_U64(got.n - before, batch[k]);
        CHECK(!cmt_reader_follow_ended(r));
    }
    for (size_t i = 0; i < got.n; i++)
        CHECK_EQ_U64(got.ev[i].addr, i + 1);
    CHECK(got.stack_before_use);
    cmt_trace_finish(&tf, cmt_now_ns());
    size_t before = got.n;
    CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
    CHECK_EQ_U64(got.n, before);
    CHECK(cmt_reader_follow_ended(r));
    CHECK_EQ_U64(cmt_reader_late_events(r), 0);
    CHECK(cmt_reader_error(r) == NULL);
    cmt_reader_close(r);
}

/* 2. Threads write while the reader polls: every event once, each
 * thread's in order, times never going back, stacks before their use. */
#define THREADS 4
#define PER_THREAD 30000
static struct cmt_trace_file mt_tf;
static struct cmt_meta_stream mt_meta;
static atomic_uint stack_ids;
static atomic_int writers_done;
/* Polls made while the writers run: each writer waits half way for one made
 * after it started, so the reader always reads a trace mid-write (under load
 * the writers could otherwise finish before the first poll). */
static atomic_uint polls_made;

static void *writer(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    struct cmt_event_stream s = {.tid = (uint32_t)(100 + t)};
    uint32_t stack = 0;
    unsigned polls_at_start = atomic_load(&polls_made);
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        if (i == PER_THREAD / 2)
            while (atomic_load(&polls_made) < polls_at_start + 2) /* one whole poll after this point */
                sched_yield();
        if (i % 1000 == 0) {
            stack = atomic_fetch_add(&stack_ids, 1) + 1;
            meta_stack(&mt_tf, &mt_meta, stack);
        }
        append(&mt_tf, &s, (t << 32) | i, stack);
    }
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

static void test_concurrent(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/threads.bin", dir);
    struct cmt_trace_create_options opt = {.pid = 78};
    CHECK(cmt_trace_create(&mt_tf, path, &opt) == 0);
    cmt_meta_stream_init(&mt_meta);
    struct cmt_reader *r;
    char err[256];
    CHECK(cmt_reader_open_follow(path, &r, err, sizeof err) == 0);
    memset(&got, 0, sizeof got);
    got.stack_before_use = true;
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, writer, (void *)t) == 0);
    unsigned polls = 0;
    while (atomic_load(&writers_done) < THREADS) {
        CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
        polls++;
        atomic_fetch_add(&polls_made, 1);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    cmt_trace_finish(&mt_tf, cmt_now_ns());
    CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
    CHECK(cmt_reader_follow_ended(r));
    CHECK(cmt_reader_error(r) == NULL);
    CHECK(polls > 0);
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
    CHECK(got.stack_before_use);
    cmt_reader_close(r);
}

/* 3. A reader opened on a finished trace reads it whole in one poll. */
static void test_finished(void)
{
    struct cmt_reader *r;
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/threads.bin", dir);
    CHECK(cmt_reader_open_follow(path, &r, err, sizeof err) == 0);
    memset(&got, 0, sizeof got);
    got.stack_before_use = true;
    CHECK(cmt_reader_poll(r, &cb, NULL) == 0);
    CHECK_EQ_U64(got.n, THREADS * PER_THREAD);
    CHECK(cmt_reader_follow_ended(r));
    CHECK_EQ_U64(cmt_reader_late_events(r), 0);
    cmt_reader_close(r);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cmt-follow-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    test_late();
    test_batches();
    test_concurrent();
    test_finished();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    puts("ok trace_follow");
    return 0;
}
