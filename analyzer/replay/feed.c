/* SPDX-License-Identifier: MIT */
/* Reader -> model and replay (feed.h). */
#include "feed.h"

#include "memory_budget.h"
#include "pairing.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <emmintrin.h>
#define FEED_STREAMING 1
#endif

/* Events travel from the reader to the replay in batches. The reader packs
 * them into a stage of STAGE_EVENTS entries, small enough to stay in the
 * first-level cache: with one thread the replay takes them from there;
 * with two, the stage is copied into a batch of BATCH_EVENTS, the unit
 * handed over, so locks are taken once per thousands of events. The memory
 * they take is fixed: PIPELINE_BATCHES batches at most. */
#define STAGE_EVENTS 64
#define BATCH_EVENTS 2048
#define PIPELINE_BATCHES 8
_Static_assert(BATCH_EVENTS % STAGE_EVENTS == 0, "a batch holds whole stages");
/* The reader is usually the faster side: once it has filled every batch it
 * sleeps until this many are free again, so the replay wakes it once per
 * that many batches rather than after each (a wake-up is a system call on
 * the replay's side: about 5% of its time when it woke the reader per
 * batch, perf). */
#define PIPELINE_REFILL (PIPELINE_BATCHES / 2)
/* Below this size a second thread costs more than it saves. */
#define PIPELINE_MIN_FILE_SIZE (8u << 20)

struct event_batch {
    struct cmt_replay_in ev[BATCH_EVENTS];
    size_t n;
} __attribute__((aligned(64)));

/* The entries the reader packs, before they are handed over. */
struct stage {
    struct cmt_replay_in ev[STAGE_EVENTS] __attribute__((aligned(64)));
    size_t n;
    /* the pairing's namespace of each entry and the slot its probe starts at */
    uint8_t ns[STAGE_EVENTS];
    size_t home[STAGE_EVENTS];
};

struct pipeline;

/* CPU seconds used by the calling thread so far. */
static double thread_cpu_seconds(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_THREAD, &u) != 0)
        return 0;
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec / 1e6;
}

/* The reading thread's state: what it reads and writes for every event,
 * apart from the replay's. With two threads it lies on cache lines of its
 * own (in struct pipeline): where a line holds a field one thread writes
 * for every event and one the other reads, each write costs the other
 * thread a miss. The replay's fields the reader needs (its observers, its
 * stack id limit) are copied here before the read starts: they do not
 * change while it runs. */
struct feed_run {
    struct cmt_feed *f;
    struct pipeline *pipe;    /* NULL: one thread */
    struct event_batch *fill; /* two threads: the batch the stage goes to */
    size_t fill_index;
    uint64_t stop_after; /* the last time read (f->stop_at_ns): UINT64_MAX for none */
    void (*on_read)(void *ctx, const struct cmt_event_in *e);
    void *read_ctx;
    struct cmt_replay_pairing *pairing; /* the replay's, written on this thread only (pairing.h); NULL: none */
    uint64_t events_read;
    uint32_t stack_id_limit;
    bool observed;     /* the replay has observers: records go to it */
    double reader_cpu; /* CPU seconds of the reader thread */
    struct stage stage;
} __attribute__((aligned(64)));

static void feed_run_init(struct feed_run *run, struct cmt_feed *f)
{
    *run = (struct feed_run){
        .f = f,
        .stop_after = f->stop_at_ns ? f->start_ns + f->stop_at_ns : UINT64_MAX,
        .on_read = f->on_read,
        .read_ctx = f->read_ctx,
        /* out of memory: every event unpaired, as a replay fed without the feed */
        .pairing = cmt_replay_pairing_of(f->replay),
        .events_read = f->events_read,
        .stack_id_limit = f->replay->stack_id_limit,
        .observed = f->replay->n_observers != 0,
    };
}

/* Two threads: the reader (decoding, merging by time, metadata into the
 * model) fills batches; the replay empties them. The model is only read
 * once both are done. The reader's state, the fields both threads take
 * under the lock, and the batches lie on cache lines apart. */
struct pipeline {
    struct feed_run run; /* the reader's */
    pthread_mutex_t lock __attribute__((aligned(64)));
    pthread_cond_t changed;
    size_t head;   /* next batch the replay takes */
    size_t filled; /* batches ready for the replay */
    bool reader_waiting; /* for PIPELINE_REFILL free batches */
    bool replay_waiting; /* for a filled batch */
    bool done;     /* the reader finished */
    bool abort;    /* the replay failed: the reader stops */
    int reader_rc;
    struct event_batch batches[PIPELINE_BATCHES] __attribute__((aligned(64)));
};

static bool replay_failed(const struct cmt_feed *f)
{
    return f->replay->out_of_memory;
}

/* Two threads: hands the batch being filled to the replay. Returns -1 when
 * the replay gave up. */
static int publish(struct feed_run *run)
{
    struct pipeline *p = run->pipe;
#ifdef FEED_STREAMING
    _mm_sfence(); /* the batch's non-temporal stores, before the replay may read them */
#endif
    pthread_mutex_lock(&p->lock);
    p->filled++;
    if (p->replay_waiting)
        pthread_cond_broadcast(&p->changed);
    if (p->filled == PIPELINE_BATCHES) {
        p->reader_waiting = true;
        while (p->filled > PIPELINE_BATCHES - PIPELINE_REFILL && !p->abort)
            pthread_cond_wait(&p->changed, &p->lock);
        p->reader_waiting = false;
    }
    bool abort = p->abort;
    pthread_mutex_unlock(&p->lock);
    run->fill_index = (run->fill_index + 1) % PIPELINE_BATCHES;
    run->fill = &p->batches[run->fill_index];
    run->fill->n = 0;
    return abort ? -1 : 0;
}

/* Copies n entries into a batch with non-temporal stores. With ordinary
 * ones, each cache line of a batch was last read by the replay's core, and
 * writing it again first took it back from there: on this project's 2-vCPU
 * machine that made writing an entry cost 21 ns instead of 2.5
 * (bench/tools/cpu_pair.c), and the reading thread's CPU time grew with
 * the second thread. Non-temporal stores of whole lines need no copy of
 * the line first, and the replay reads the batch in order, which the
 * prefetchers follow. Packed in the stage first: the entries are written
 * field by field, and non-temporal stores want whole words. */
static void copy_streaming(struct cmt_replay_in *dst, const struct cmt_replay_in *src, size_t n)
{
#ifdef FEED_STREAMING
    _Static_assert(sizeof *src % 16 == 0, "an entry is whole 16-byte words");
    _Static_assert(offsetof(struct event_batch, ev) % 16 == 0 && offsetof(struct stage, ev) % 16 == 0,
                   "aligned entries");
    const __m128i *from = (const __m128i *)(const void *)src;
    __m128i *to = (__m128i *)(void *)dst;
    for (size_t i = 0; i < n * sizeof *src / 16; i++)
        _mm_stream_si128(to + i, _mm_load_si128(from + i));
#else
    memcpy(dst, src, n * sizeof *src);
#endif
}

/* Hands the stage over: to the replay with one thread, into the batch
 * being filled with two (and the batch to the replay once another stage
 * would not fit). Returns -1 when the replay gave up. */
static int hand_over(struct feed_run *run)
{
    struct stage *s = &run->stage;
    size_t n = s->n;
    s->n = 0;
    /* paired a stage at a time: its probes overlap (pairing.h) */
    if (__builtin_expect(run->pairing != NULL, 1))
        cmt_pairing_pair_all(run->pairing, s->ev, n, s->ns, s->home);
    if (!run->pipe)
        return cmt_replay_events(run->f->replay, s->ev, n);
    struct event_batch *b = run->fill;
    copy_streaming(&b->ev[b->n], s->ev, n);
    b->n += n;
    if (b->n + STAGE_EVENTS > BATCH_EVENTS)
        return publish(run);
    return 0;
}

/* Every record but allocations and releases (rare): what the replay's
 * observers need of it, shown to them on this thread where it needs the
 * model, then packed as two entries. */
static int __attribute__((noinline)) on_record(struct feed_run *run, const struct cmt_event_in *e)
{
    struct cmt_feed *f = run->f;
    size_t entries = cmt_replay_in_entries(e, run->observed);
    if (!entries)
        return 0; /* the replay has no use for the others */
    struct cmt_event_in mark;
    if (e->type == CMT_REC_MARK) {
        /* Shown to the observers here, where the model is this thread's: it
         * holds the record's strings (their metadata chunk was claimed
         * before the record's time, so the merge opened it first). */
        mark = *e;
        mark.aux[3] = 0;
        for (unsigned i = 0; i < f->replay->n_observers; i++) {
            const struct cmt_replay_observer *o = f->replay->observers[i];
            if (o->on_mark_read)
                o->on_mark_read(o->ctx, f->model, &mark);
        }
        e = &mark;
    } else if (e->type == CMT_REC_BLOCK) {
        for (unsigned i = 0; i < f->replay->n_observers; i++) {
            const struct cmt_replay_observer *o = f->replay->observers[i];
            if (o->on_block_read)
                o->on_block_read(o->ctx, f->model, e);
        }
    }
    /* a record's two entries stay in one stage, so in one batch */
    struct stage *s = &run->stage;
    if (s->n + entries > STAGE_EVENTS && hand_over(run) != 0)
        return 1;
    cmt_replay_in_pack(&s->ev[s->n], e, run->stack_id_limit);
    s->n += entries;
    if (s->n == STAGE_EVENTS && hand_over(run) != 0)
        return 1;
    return 0;
}

static int __attribute__((noinline)) stop_over_budget(struct feed_run *run)
{
    run->f->over_budget = true;
    return 1;
}

_Static_assert((CMT_FEED_BUDGET_EVERY & (CMT_FEED_BUDGET_EVERY - 1)) == 0, "a power of two: one mask per event");

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct feed_run *run = ctx;
    if (__builtin_expect(e->ts > run->stop_after, 0)) {
        run->f->stopped_early = true;
        return 1;
    }
    if (run->on_read)
        run->on_read(run->read_ctx, e);
    /* A few microseconds per 65,536 events: the budget is checked while
     * the model and the replay grow, not once the machine is out of memory. */
    if (__builtin_expect(++run->events_read % CMT_FEED_BUDGET_EVERY == 0, 0) &&
        cmt_memory_over_budget(&run->f->memory_in_use))
        return stop_over_budget(run);
    if (__builtin_expect(e->type != CMT_REC_ALLOC && e->type != CMT_REC_FREE, 0))
        return on_record(run, e);
    struct stage *s = &run->stage;
    /* packed by the reader as it decoded (cmt_feed_run set its stack limit) */
    size_t n = s->n; /* once: the copy's stores may alias it */
    cmt_replay_in_copy(&s->ev[n], e);
    s->n = ++n;
    if (n == STAGE_EVENTS && hand_over(run) != 0)
        return 1;
    return 0;
}

/* The reader hands metadata to the model. */
#define MODEL(ctx) (((struct feed_run *)(ctx))->f->model)
static void on_string(void *ctx, uint32_t id, const char *t, size_t n) { cmt_model_on_string(MODEL(ctx), id, t, n); }
static void on_module(void *ctx, const struct cmt_module_in *m) { cmt_model_on_module(MODEL(ctx), m); }
static void on_stack(void *ctx, uint32_t id, uint32_t k, const uint64_t *f, uint32_t n) { cmt_model_on_stack(MODEL(ctx), id, k, f, n); }
static void on_process(void *ctx, const struct cmt_process_in *p) { cmt_model_on_process(MODEL(ctx), p); }
static void on_thread(void *ctx, uint32_t tid, uint32_t name) { cmt_model_on_thread(MODEL(ctx), tid, name); }
static void on_config(void *ctx, const struct cmt_config_in *c) { cmt_model_on_config(MODEL(ctx), c); }
static void on_end(void *ctx, const struct cmt_end_in *e) { cmt_model_on_end(MODEL(ctx), e); }
static void on_frame(void *ctx, const struct cmt_frame_in *f) { cmt_model_on_frame(MODEL(ctx), f); }
static void on_note(void *ctx, const struct cmt_note_in *n) { cmt_model_on_note(MODEL(ctx), n); }
static void on_allocator(void *ctx, const struct cmt_allocator_in *a) { cmt_model_on_allocator(MODEL(ctx), a); }
static void on_job(void *ctx, const struct cmt_job_in *j) { cmt_model_on_job(MODEL(ctx), j); }
static void on_device(void *ctx, const struct cmt_device_in *d) { cmt_model_on_device(MODEL(ctx), d); }
#undef MODEL

static const struct cmt_reader_callbacks callbacks = {
    .on_string = on_string,
    .on_module = on_module,
    .on_stack = on_stack,
    .on_process = on_process,
    .on_thread = on_thread,
    .on_config = on_config,
    .on_end = on_end,
    .on_frame = on_frame,
    .on_note = on_note,
    .on_allocator = on_allocator,
    .on_job = on_job,
    .on_device = on_device,
    .on_event = on_event,
};

static void *reader_thread(void *arg)
{
    struct pipeline *p = arg;
    struct feed_run *run = &p->run;
    double start = thread_cpu_seconds();
    int rc = cmt_reader_run(run->f->reader, &callbacks, run);
    if (run->stage.n)
        hand_over(run); /* when the replay gave up, it says so */
    run->reader_cpu = thread_cpu_seconds() - start;
#ifdef FEED_STREAMING
    _mm_sfence();
#endif
    pthread_mutex_lock(&p->lock);
    if (run->fill->n)
        p->filled++; /* the last, partly filled batch */
    p->done = true;
    p->reader_rc = rc;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The replay side of the pipeline: takes batches until the reader is done. */
static int replay_batches(struct pipeline *p, struct cmt_replay *replay)
{
    for (;;) {
        pthread_mutex_lock(&p->lock);
        p->replay_waiting = true;
        while (p->filled == 0 && !p->done)
            pthread_cond_wait(&p->changed, &p->lock);
        p->replay_waiting = false;
        if (p->filled == 0) {
            pthread_mutex_unlock(&p->lock);
            return p->reader_rc;
        }
        struct event_batch *b = &p->batches[p->head];
        pthread_mutex_unlock(&p->lock);
        int rc = cmt_replay_events(replay, b->ev, b->n);
        pthread_mutex_lock(&p->lock);
        p->head = (p->head + 1) % PIPELINE_BATCHES;
        p->filled--;
        if (rc != 0)
            p->abort = true;
        if (rc != 0 || (p->reader_waiting && p->filled <= PIPELINE_BATCHES - PIPELINE_REFILL))
            pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        if (rc != 0) {
            /* Let the reader finish (it stops at its next batch), then stop. */
            pthread_mutex_lock(&p->lock);
            while (!p->done)
                pthread_cond_wait(&p->changed, &p->lock);
            pthread_mutex_unlock(&p->lock);
            return p->reader_rc;
        }
    }
}

static bool want_pipeline(const struct cmt_feed *f)
{
    const char *env = getenv("CUMEMTRACE_ANALYZER_THREADS");
    if (env && *env)
        return atoi(env) >= 2;
    if (f->file_size < PIPELINE_MIN_FILE_SIZE)
        return false;
    cpu_set_t cpus;
    /* the CPUs this process may run on (taskset, cgroups), not the machine's */
    int usable = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    /* A second thread pays on an idle machine and still on a busy one: with
     * the hand-over's non-temporal stores it adds no work, and the scheduler
     * gives the two threads more of the machine than one. Measured on 2
     * vCPUs (docs/performance.md, 2026-12-07): two threads faster at load
     * 2.2 to 3 in every alternating pair, even with one at load 4 to 5; so
     * one thread only past that, where the second no longer pays. */
    double load[1];
    if (getloadavg(load, 1) == 1 && load[0] > usable + 1.0)
        return false;
    return usable >= 2;
}

/* Two threads; -2 when the second could not be started (then nothing
 * was read). */
static int run_pipeline(struct cmt_feed *f)
{
    struct pipeline *p = aligned_alloc(_Alignof(struct pipeline), sizeof *p);
    if (!p)
        return -2;
    memset(p, 0, offsetof(struct pipeline, batches));
    feed_run_init(&p->run, f);
    p->run.pipe = p;
    p->run.fill = &p->batches[0];
    p->run.fill->n = 0;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    pthread_t tid;
    double start = thread_cpu_seconds();
    int rc = -2;
    if (pthread_create(&tid, NULL, reader_thread, p) == 0) {
        rc = replay_batches(p, f->replay);
        double replay_cpu = thread_cpu_seconds() - start;
        pthread_join(tid, NULL);
        f->events_read = p->run.events_read;
        /* For benchmarks: how the work split between the threads. */
        if (getenv("CUMEMTRACE_ANALYZER_STATS"))
            fprintf(stderr, "cumemtrace: analyzer threads: reader %.3f s, replay %.3f s of CPU\n",
                    p->run.reader_cpu, replay_cpu);
    }
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return rc;
}

int cmt_feed_run(struct cmt_feed *f)
{
    cmt_reader_set_stack_limit(f->reader, f->replay->stack_id_limit);
    if (want_pipeline(f)) {
        int rc = run_pipeline(f);
        if (rc != -2)
            return rc;
        /* no second thread: read and replay in this one */
    }
    struct feed_run run;
    feed_run_init(&run, f);
    int rc = cmt_reader_run(f->reader, &callbacks, &run);
    f->events_read = run.events_read;
    if (run.stage.n && !replay_failed(f))
        hand_over(&run);
    return rc;
}
