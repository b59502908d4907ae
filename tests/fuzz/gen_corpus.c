/* SPDX-License-Identifier: MIT */
/* Seed corpus for the trace fuzzer: real traces written by the writer library
 * (preload/trace/trace_file.c, event_stream.c, meta_stream.c), covering every
 * record type, every API, every metadata type, several threads, a size limit,
 * a crash (no clean exit), a forked child, and cuts at every kind of place.
 *
 *   gen_corpus [--real-layout] OUTDIR
 *
 * Traces are written under OUTDIR/.work, then compacted into OUTDIR: the
 * writer preallocates (a 4 KiB header, 64 KiB metadata chunks, 4 KiB and
 * larger event chunks, mostly zeros in a small trace), and a fuzzer wastes
 * its mutations on zeros. Compacting shrinks the header and every chunk to
 * what is used, which format.h allows (header_size and chunk sizes are
 * fields, multiples of CMT_CHUNK_ALIGN), and drops padding chunks: every
 * record stays byte for byte as the writer wrote it. --real-layout also keeps
 * the uncompacted files (OUTDIR/NAME.real). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "event_stream.h"
#include "meta_stream.h"
#include "trace_file.h"

static const char *out_dir;
static char work_dir[4096];
static int keep_real_layout;

static void die(const char *what)
{
    fprintf(stderr, "gen_corpus: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---- writing ---------------------------------------------------------------- */

struct writer {
    struct cmt_trace_file tf;
    struct cmt_meta_stream meta;
    uint32_t next_string, next_stack, next_module, next_frame;
};

static void writer_open(struct writer *w, const char *name, uint64_t max_size, uint32_t extra_flags)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", work_dir, name);
    unlink(path);
    struct cmt_trace_create_options opt = {.max_size = max_size, .pid = 4242, .extra_flags = extra_flags};
    memset(w, 0, sizeof *w);
    int rc = cmt_trace_create(&w->tf, path, &opt);
    if (rc != 0) {
        errno = -rc;
        die(path);
    }
    cmt_meta_stream_init(&w->meta);
}

/* Starts a metadata record; NULL once recording stopped (size limit). */
static bool meta_begin(struct writer *w, struct cmt_payload *b, size_t max)
{
    pthread_mutex_lock(&w->meta.lock);
    uint8_t *p = cmt_meta_begin_locked(&w->tf, &w->meta, max);
    if (!p) {
        pthread_mutex_unlock(&w->meta.lock);
        return false;
    }
    *b = (struct cmt_payload){p, p + max, false};
    return true;
}

static void meta_commit(struct writer *w, struct cmt_payload *b, uint8_t type)
{
    if (b->overflow) {
        fprintf(stderr, "gen_corpus: metadata record of type %u overflows its payload\n", type);
        exit(1);
    }
    cmt_meta_commit_locked(&w->meta, type, b->p);
    pthread_mutex_unlock(&w->meta.lock);
}

static uint32_t meta_string(struct writer *w, const char *s)
{
    struct cmt_payload b;
    size_t len = strlen(s);
    if (!meta_begin(w, &b, len + 20))
        return 0;
    uint32_t id = ++w->next_string;
    cmt_payload_varint(&b, id);
    cmt_payload_bytes(&b, s, len);
    meta_commit(w, &b, CMT_META_STRING);
    return id;
}

/* A module record; with_build_id: the made-up build-id below. */
static uint32_t meta_module_with(struct writer *w, const char *path, uint64_t bias, uint64_t lo, uint64_t hi,
                                 bool with_build_id)
{
    uint32_t path_id = meta_string(w, path);
    struct cmt_payload b;
    if (!meta_begin(w, &b, 128))
        return 0;
    static const uint8_t build_id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint32_t id = ++w->next_module;
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, path_id);
    cmt_payload_varint(&b, bias);
    cmt_payload_varint(&b, lo);
    cmt_payload_varint(&b, hi);
    cmt_payload_bytes(&b, build_id, with_build_id ? sizeof build_id : 0);
    cmt_payload_varint(&b, cmt_now_ns());
    meta_commit(w, &b, CMT_META_MODULE);
    return id;
}

/* Every other module has a build-id. */
static uint32_t meta_module(struct writer *w, const char *path, uint64_t bias, uint64_t lo, uint64_t hi)
{
    return meta_module_with(w, path, bias, lo, hi, (w->next_module + 1) % 2);
}

static uint32_t meta_stack(struct writer *w, const uint64_t *frames, unsigned n)
{
    struct cmt_payload b;
    if (!meta_begin(w, &b, 30 + (size_t)n * 10))
        return 0;
    uint32_t id = ++w->next_stack;
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, w->next_module);
    cmt_payload_varint(&b, n);
    uint64_t prev = 0;
    for (unsigned i = 0; i < n; i++) {
        cmt_payload_svarint(&b, (int64_t)(frames[i] - prev));
        prev = frames[i];
    }
    meta_commit(w, &b, CMT_META_STACK);
    return id;
}

static void meta_process(struct writer *w)
{
    uint32_t exe = meta_string(w, "/opt/app/bin/train");
    uint32_t args[3] = {exe, meta_string(w, "--epochs"), meta_string(w, "3")};
    uint32_t host = meta_string(w, "gpu-node-07");
    uint32_t cwd = meta_string(w, "/home/user/run");
    struct cmt_payload b;
    if (!meta_begin(w, &b, 128))
        return;
    cmt_payload_varint(&b, 4242);
    cmt_payload_varint(&b, 4200);
    cmt_payload_varint(&b, exe);
    cmt_payload_varint(&b, 3);
    for (int i = 0; i < 3; i++)
        cmt_payload_varint(&b, args[i]);
    cmt_payload_varint(&b, host);
    cmt_payload_svarint(&b, 3);
    cmt_payload_varint(&b, cwd);
    meta_commit(w, &b, CMT_META_PROCESS);
}

static void meta_config(struct writer *w, uint64_t max_size)
{
    uint32_t version = meta_string(w, "0.1.0");
    struct cmt_payload b;
    if (!meta_begin(w, &b, 64))
        return;
    cmt_payload_varint(&b, 64);
    cmt_payload_varint(&b, 1);
    cmt_payload_varint(&b, 100);
    cmt_payload_varint(&b, max_size);
    cmt_payload_varint(&b, version);
    meta_commit(w, &b, CMT_META_CONFIG);
}

static void meta_thread(struct writer *w, uint32_t tid, const char *name)
{
    uint32_t name_id = meta_string(w, name);
    struct cmt_payload b;
    if (!meta_begin(w, &b, 32))
        return;
    cmt_payload_varint(&b, tid);
    cmt_payload_varint(&b, name_id);
    meta_commit(w, &b, CMT_META_THREAD);
}

static uint32_t meta_frame(struct writer *w, const char *function, const char *file, unsigned line)
{
    uint32_t fn = meta_string(w, function), fi = meta_string(w, file);
    struct cmt_payload b;
    if (!meta_begin(w, &b, 64))
        return 0;
    uint32_t id = ++w->next_frame;
    cmt_payload_varint(&b, id);
    cmt_payload_varint(&b, fn);
    cmt_payload_varint(&b, fi);
    cmt_payload_varint(&b, line);
    cmt_payload_varint(&b, 1);
    meta_commit(w, &b, CMT_META_FRAME);
    return id;
}

/* A DEVICE record; without a uuid as a reader must accept it (a writer
 * before 2.2's field), or with it. */
static void meta_device_uuid(struct writer *w, uint32_t ordinal, const char *name, uint64_t total, bool with_uuid)
{
    uint32_t name_id = meta_string(w, name);
    struct cmt_payload b;
    if (!meta_begin(w, &b, 64))
        return;
    uint8_t uuid[16];
    for (int i = 0; i < 16; i++)
        uuid[i] = (uint8_t)(ordinal * 16 + i);
    cmt_payload_varint(&b, ordinal);
    cmt_payload_varint(&b, name_id);
    cmt_payload_varint(&b, total);
    if (with_uuid)
        cmt_payload_bytes(&b, uuid, sizeof uuid);
    meta_commit(w, &b, CMT_META_DEVICE);
}

static void meta_device(struct writer *w, uint32_t ordinal, const char *name, uint64_t total)
{
    meta_device_uuid(w, ordinal, name, total, true);
}

/* A JOB record as torchrun's rank 1 of 2 writes it. */
static void meta_job(struct writer *w)
{
    static const char *const vars[][2] = {{"RANK", "1"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "2"},
                                          {"CUDA_VISIBLE_DEVICES", "0,1"}};
    uint32_t ids[8];
    for (int i = 0; i < 4; i++) {
        ids[2 * i] = meta_string(w, vars[i][0]);
        ids[2 * i + 1] = meta_string(w, vars[i][1]);
    }
    uint32_t job = meta_string(w, "torch:127.0.0.1:29500");
    struct cmt_payload b;
    if (!meta_begin(w, &b, 128))
        return;
    cmt_payload_varint(&b, cmt_now_ns());
    cmt_payload_varint(&b, CMT_JOB_TORCH);
    cmt_payload_svarint(&b, 1);
    cmt_payload_svarint(&b, 1);
    cmt_payload_svarint(&b, 2);
    cmt_payload_svarint(&b, 2);
    cmt_payload_varint(&b, job);
    cmt_payload_varint(&b, 4);
    for (int i = 0; i < 8; i++)
        cmt_payload_varint(&b, ids[i]);
    meta_commit(w, &b, CMT_META_JOB);
}

/* The END record and the seal, as the shim's exit does (written even after
 * a stop: the metadata chunk keeps room for it). */
static void meta_end(struct writer *w)
{
    int reason = cmt_trace_stop_reason(&w->tf);
    cmt_meta_close_trace(&w->tf, &w->meta, cmt_now_ns(), reason < 0 ? CMT_END_EXIT : (unsigned)reason, 0);
}

/* A record type a newer writer might add: a reader must skip it. */
static void meta_unknown(struct writer *w)
{
    struct cmt_payload b;
    if (!meta_begin(w, &b, 32))
        return;
    cmt_payload_varint(&b, 7);
    cmt_payload_bytes(&b, "future", 6);
    meta_commit(w, &b, 200);
}

struct thread_stream {
    struct cmt_event_stream s;
    struct writer *w;
};

/* One event, timestamped now (after the reserve, as the hooks do: W1). */
static bool emit(struct thread_stream *t, struct cmt_event e)
{
    if (!cmt_event_stream_reserve(&t->w->tf, &t->s)) {
        cmt_trace_count_dropped(&t->w->tf);
        return false;
    }
    e.ts = cmt_now_ns();
    cmt_event_stream_append(&t->s, &e);
    return true;
}

static bool alloc(struct thread_stream *t, uint8_t api, int32_t device, uint64_t addr, uint64_t size, uint32_t stack)
{
    return emit(t, (struct cmt_event){.type = CMT_REC_ALLOC, .api = api, .kind = cmt_api_default_kind(api),
                                      .has_device = true, .device = device, .addr = addr, .size = size, .stack = stack});
}

static void release(struct thread_stream *t, uint8_t api, uint64_t addr, uint32_t stack)
{
    emit(t, (struct cmt_event){.type = CMT_REC_FREE, .api = api, .kind = cmt_api_default_kind(api), .addr = addr,
                               .stack = stack});
}

/* An event with a field bit no writer uses yet (bit 12): readers skip it. */
static void emit_future_field(struct thread_stream *t)
{
    if (!cmt_event_stream_reserve(&t->w->tf, &t->s))
        return;
    uint8_t *rec = t->s.pos;
    uint8_t *p = rec + 1;
    *p++ = CMT_API_CUDA_MALLOC;
    p = cmt_varint_put(p, CMT_F_SIZE | (1u << 12));
    p = cmt_varint_put(p, 4096);
    p = cmt_varint_put(p, 123456789);
    size_t len = cmt_record_add_check(rec, (size_t)(p - rec), CMT_REC_ALLOC, &t->s.chain);
    __atomic_store_n(&rec[0], CMT_REC_ALLOC, __ATOMIC_RELEASE);
    t->s.pos = rec + len;
    cmt_chunk_publish_commit(t->s.chunk, t->s.pos, t->s.chain);
}

static void writer_close(struct writer *w, bool clean)
{
    if (clean)
        meta_end(w);
    for (unsigned i = 0; i < w->tf.n_segments; i++)
        munmap(w->tf.segments[i].base, w->tf.segments[i].size);
    close(w->tf.fd);
}

/* ---- scenarios -------------------------------------------------------------- */

#define DEV0 0x7f2000000000ull
#define DEV1 0x7f3000000000ull
#define HOST 0x7f4000000000ull

static void common_metadata(struct writer *w, uint64_t max_size, uint32_t *stacks, unsigned n_stacks)
{
    meta_process(w);
    meta_job(w);
    meta_config(w, max_size);
    meta_module(w, "/opt/app/bin/train", 0x555555554000ull, 0x555555554000ull, 0x555555600000ull);
    meta_module(w, "/usr/lib/x86_64-linux-gnu/libcudart.so.13", 0x7ffff7a00000ull, 0x7ffff7a00000ull,
                0x7ffff7c00000ull);
    meta_module(w, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x7ffff6000000ull, 0x7ffff6000000ull,
                0x7ffff7000000ull);
    meta_device(w, 0, "NVIDIA H200", 150ull << 30);
    meta_device(w, 1, "NVIDIA H200", 150ull << 30);
    uint32_t py = meta_frame(w, "train_step", "/opt/app/train.py", 88);
    for (unsigned i = 0; i < n_stacks; i++) {
        uint64_t frames[8] = {0x7ffff6001234ull + i, 0x7ffff7a01000ull + 16 * i, 0x555555555100ull + 32 * i,
                              0x555555555200ull, CMT_FRAME_SYNTHETIC_BIT | py, 0x555555555300ull - i,
                              0x7ffff7a02000ull, 0x555555554100ull};
        stacks[i] = meta_stack(w, frames, 3 + i % 6);
    }
}

/* Every API once, every record type, every kind, failures, VMM, arrays,
 * pools, marks, samples, odd cases the replay must count, on three threads. */
static void scenario_every_api(void)
{
    struct writer w;
    writer_open(&w, "every_api", 0, 0);
    uint32_t st[6];
    common_metadata(&w, 0, st, 6);
    uint64_t deep[256];
    for (unsigned i = 0; i < 256; i++)
        deep[i] = 0x555555555000ull + 8 * i;
    uint32_t deep_id = meta_stack(&w, deep, 256);
    uint32_t empty_id = meta_stack(&w, NULL, 0);
    meta_thread(&w, 1001, "main");
    meta_thread(&w, 1002, "loader");
    meta_thread(&w, 1003, "pt_autograd_0");
    meta_unknown(&w);
    uint32_t phase = meta_string(&w, "epoch 1");

    struct thread_stream a = {.s = {.tid = 1001}, .w = &w}, b = {.s = {.tid = 1002}, .w = &w},
                         c = {.s = {.tid = 1003}, .w = &w};
    emit(&a, (struct cmt_event){.type = CMT_REC_SAMPLE, .api = CMT_API_SAMPLE_START, .has_device = true,
                                .device = 0, .aux = {140ull << 30, 150ull << 30}});
    emit(&a, (struct cmt_event){.type = CMT_REC_MARK, .api = CMT_API_MARK_PUSH, .aux = {phase}});
    alloc(&a, CMT_API_CUDA_MALLOC, 0, DEV0, 1 << 20, st[0]);
    alloc(&a, CMT_API_CU_MEM_ALLOC, 0, DEV0 + 0x100000, 2 << 20, st[1]);
    alloc(&a, CMT_API_CUDA_MALLOC_PITCH, 0, DEV0 + 0x400000, 512 * 100,
          st[2]); /* pitched: aux1 says what was asked */
    alloc(&a, CMT_API_CU_MEM_ALLOC_PITCH, 1, DEV1, 1024 * 64, st[2]);
    alloc(&a, CMT_API_CUDA_MALLOC_3D, 1, DEV1 + 0x100000, 1 << 16, st[3]);
    emit(&a, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_MANAGED, .kind = CMT_KIND_MANAGED,
                                .has_device = true, .device = 0, .addr = DEV0 + 0x800000, .size = 4096,
                                .stack = st[4], .aux = {1}});
    alloc(&a, CMT_API_CU_MEM_ALLOC_MANAGED, 1, DEV1 + 0x800000, 8192, st[4]);
    alloc(&a, CMT_API_CUDA_MALLOC_HOST, -1, HOST, 65536, st[5]);
    emit(&a, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_HOST_ALLOC, .kind = CMT_KIND_HOST_PINNED,
                                .has_device = true, .device = -1, .addr = HOST + 0x10000, .size = 4096,
                                .stack = st[5], .aux = {4}});
    alloc(&a, CMT_API_CU_MEM_ALLOC_HOST, -1, HOST + 0x20000, 4096, deep_id);
    alloc(&a, CMT_API_CU_MEM_HOST_ALLOC, -1, HOST + 0x30000, 4096, empty_id);
    alloc(&a, CMT_API_CUDA_MALLOC_ARRAY, 0, 0xa0001, 1 << 20, st[0]);
    alloc(&a, CMT_API_CUDA_MALLOC_3D_ARRAY, 0, 0xa0002, 1 << 21, st[1]);
    alloc(&a, CMT_API_CU_ARRAY_CREATE, 1, 0xa0003, 1 << 12, st[1]);
    alloc(&a, CMT_API_CU_ARRAY_3D_CREATE, 1, 0xa0004, 1 << 13, st[1]);

    /* Stream-ordered pools. */
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_POOL_CREATE, .has_device = true,
                                .device = 0, .addr = 0xb00001});
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_CU_MEM_POOL_CREATE, .has_device = true,
                                .device = 1, .addr = 0xb00002});
    emit(&b, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_ASYNC, .kind = CMT_KIND_ASYNC,
                                .has_device = true, .device = 0, .addr = DEV0 + 0x1000000, .size = 3 << 20,
                                .stream = 0x5000, .stack = st[3]});
    emit(&b, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_FROM_POOL_ASYNC,
                                .kind = CMT_KIND_ASYNC, .has_device = true, .device = 0,
                                .addr = DEV0 + 0x1400000, .size = 1 << 20, .stream = 0x5000, .stack = st[3],
                                .aux = {0xb00001}});
    emit(&b, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_ALLOC_ASYNC, .kind = CMT_KIND_ASYNC,
                                .has_device = true, .device = 1, .addr = DEV1 + 0x1000000, .size = 1 << 20,
                                .stream = 0x6000, .stack = st[3]});
    emit(&b, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC,
                                .kind = CMT_KIND_ASYNC, .has_device = true, .device = 1,
                                .addr = DEV1 + 0x1400000, .size = 1 << 19, .stream = 0x6000, .stack = st[3],
                                .aux = {0xb00002}});
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_POOL_STATE, .has_device = true, .device = 0,
                                .addr = 0xb00001, .aux = {4 << 20, 3 << 20, 6 << 20, 0}});
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_POOL_TRIM, .addr = 0xb00001, .size = 0});
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_CU_MEM_POOL_TRIM, .addr = 0xb00002,
                                .size = 1 << 20});

    /* Virtual memory management: physical handle, reservation, mapping. */
    alloc(&c, CMT_API_CU_MEM_CREATE, 0, 0xc0001, 2 << 20, st[4]);
    alloc(&c, CMT_API_CU_MEM_ADDRESS_RESERVE, 0, 0x7e0000000000ull, 8 << 20, st[4]);
    emit(&c, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_MAP, .kind = CMT_KIND_VMM_MAP,
                                .has_device = true, .device = 0, .addr = 0x7e0000000000ull, .size = 2 << 20,
                                .stack = st[4], .aux = {0xc0001}});

    /* Failures: one, then the same site twice with other sizes. */
    emit(&a, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .has_device = true,
                                .device = 0, .result = 2, .size = 200ull << 30, .stack = st[0]});
    emit(&a, (struct cmt_event){.type = CMT_REC_SAMPLE, .api = CMT_API_SAMPLE_FAILURE, .has_device = true,
                                .device = 0, .aux = {1ull << 30, 150ull << 30}});
    for (int i = 0; i < 2; i++)
        emit(&c, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_ALLOC, .has_device = true,
                                    .device = 1, .result = 2, .size = (300ull + (uint64_t)i) << 30, .stack = st[1]});
    emit(&c, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_CREATE, .has_device = true,
                                .device = 1, .result = 801, .size = 1 << 21, .stack = st[2]});

    /* Odd cases the replay counts rather than trusts. */
    alloc(&a, CMT_API_CUDA_MALLOC, 0, 0, 0, st[0]);            /* zero bytes: NULL, nothing live */
    alloc(&a, CMT_API_CUDA_MALLOC, 0, DEV0, 1 << 20, st[1]);   /* address still live: a release was missed */
    release(&b, CMT_API_CUDA_FREE, DEV0 + 0x9990000, 0);       /* never allocated */
    emit(&b, (struct cmt_event){.type = CMT_REC_FREE, .api = CMT_API_CUDA_FREE, .result = 1, .addr = DEV0 + 1});
    alloc(&a, CMT_API_CUDA_MALLOC, 63, DEV0 + 0x6300000, 64, st[0]);   /* highest device */
    alloc(&a, CMT_API_CUDA_MALLOC, 64, DEV0 + 0x6400000, 64, st[0]);   /* out of range: skipped */
    alloc(&a, CMT_API_UNKNOWN, 0, DEV0 + 0x6500000, 64, st[0]);        /* unknown api: skipped */
    alloc(&a, 200, 0, DEV0 + 0x6600000, 64, st[0]);                    /* api from the future: skipped */
    alloc(&a, CMT_API_CUDA_MALLOC, 0, DEV0 + 0x6700000, 64, 999999);   /* stack never defined */
    emit(&a, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = 9, .has_device = true,
                                .device = 0, .addr = DEV0 + 0x6800000, .size = 64}); /* kind from the future */
    emit(&a, (struct cmt_event){.type = 9, .api = CMT_API_CUDA_MALLOC, .has_device = true, .device = 0,
                                .addr = DEV0 + 0x6900000, .size = 64}); /* record type from the future */
    emit_future_field(&a);
    emit(&a, (struct cmt_event){.type = CMT_REC_MARK, .api = CMT_API_MARK_INSTANT, .aux = {phase}});

    /* Releases, from other threads than the allocating one too. */
    release(&c, CMT_API_CUDA_FREE, DEV0 + 0x100000, st[2]);
    release(&b, CMT_API_CU_MEM_FREE, DEV0 + 0x400000, 0);
    release(&b, CMT_API_CUDA_FREE_ASYNC, DEV0 + 0x1000000, 0);
    release(&b, CMT_API_CU_MEM_FREE_ASYNC, DEV1 + 0x1000000, 0);
    release(&a, CMT_API_CUDA_FREE_HOST, HOST, st[5]);
    release(&a, CMT_API_CU_MEM_FREE_HOST, HOST + 0x20000, 0);
    release(&a, CMT_API_CUDA_FREE_ARRAY, 0xa0001, 0);
    release(&a, CMT_API_CU_ARRAY_DESTROY, 0xa0003, 0);
    release(&c, CMT_API_CU_MEM_UNMAP, 0x7e0000000000ull, 0);
    release(&c, CMT_API_CU_MEM_ADDRESS_FREE, 0x7e0000000000ull, 0);
    release(&c, CMT_API_CU_MEM_RELEASE, 0xc0001, 0);
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_POOL_DESTROY, .addr = 0xb00001});
    emit(&b, (struct cmt_event){.type = CMT_REC_POOL, .kind = CMT_KIND_ASYNC, .api = CMT_API_CU_MEM_POOL_DESTROY, .addr = 0xb00002});
    emit(&a, (struct cmt_event){.type = CMT_REC_MARK, .api = CMT_API_MARK_POP, .aux = {phase}});
    emit(&a, (struct cmt_event){.type = CMT_REC_SAMPLE, .api = CMT_API_SAMPLE_PERIODIC, .has_device = true,
                                .device = 1, .aux = {100ull << 30, 150ull << 30}});
    emit(&a, (struct cmt_event){.type = CMT_REC_SAMPLE, .api = CMT_API_SAMPLE_EXIT, .has_device = true,
                                .device = 0, .aux = {139ull << 30, 150ull << 30}});
    writer_close(&w, true);
}

/* Many events on four threads: several chunks per thread, merged by time. */
static void scenario_threads(void)
{
    struct writer w;
    writer_open(&w, "threads", 0, 0);
    uint32_t st[4];
    common_metadata(&w, 0, st, 4);
    struct thread_stream t[4];
    for (unsigned i = 0; i < 4; i++) {
        t[i] = (struct thread_stream){.s = {.tid = 2000 + i}, .w = &w};
        char name[32];
        snprintf(name, sizeof name, "worker-%u", i);
        meta_thread(&w, 2000 + i, name);
    }
    for (unsigned i = 0; i < 1200; i++) {
        struct thread_stream *s = &t[(i * 7) % 4];
        uint64_t addr = DEV0 + (uint64_t)(i % 40) * 0x100000;
        int32_t dev = (int32_t)(i % 3 == 0);
        if (i % 40 < 20 || i >= 1160)
            alloc(s, i % 2 ? CMT_API_CUDA_MALLOC : CMT_API_CU_MEM_ALLOC, dev, addr, 4096u * (i % 13 + 1),
                  st[i % 4]);
        else
            release(&t[(i * 3) % 4], CMT_API_CUDA_FREE, addr - 20 * 0x100000, 0);
    }
    writer_close(&w, true);
}

/* CUMEMTRACE_MAX_SIZE reached: recording stops, later events are counted. */
static void scenario_size_limit(void)
{
    struct writer w;
    uint64_t limit = 4096 + (64u << 10) + 4096 + 8192;
    writer_open(&w, "size_limit", limit, 0);
    uint32_t st[3];
    common_metadata(&w, limit, st, 3);
    struct thread_stream t = {.s = {.tid = 3000}, .w = &w};
    for (unsigned i = 0; i < 3000; i++)
        alloc(&t, CMT_API_CUDA_MALLOC, 0, DEV0 + (uint64_t)i * 0x1000, 4096, st[i % 3]);
    writer_close(&w, true);
}

/* A process that never exited cleanly (killed): no clean-exit flag, no END,
 * the file not trimmed. */
static void scenario_crashed(void)
{
    struct writer w;
    writer_open(&w, "crashed", 0, 0);
    uint32_t st[2];
    common_metadata(&w, 0, st, 2);
    struct thread_stream t = {.s = {.tid = 4000}, .w = &w};
    for (unsigned i = 0; i < 30; i++)
        alloc(&t, CMT_API_CUDA_MALLOC, 0, DEV0 + (uint64_t)i * 0x1000, 4096, st[i % 2]);
    writer_close(&w, false);
}

/* A child of a traced parent; no metadata but one string. */
static void scenario_forked(void)
{
    struct writer w;
    writer_open(&w, "forked_child", 0, CMT_FILE_FLAG_FORKED_CHILD);
    meta_string(&w, "child");
    struct thread_stream t = {.s = {.tid = 5000}, .w = &w};
    alloc(&t, CMT_API_CUDA_MALLOC, 0, DEV0, 512, 0);
    release(&t, CMT_API_CUDA_FREE, DEV0, 0);
    writer_close(&w, true);
}

/* Memory shared between processes (IPC records, format 2.3), one trace
 * that both exports and imports the same fingerprints, so that a job of it
 * and a copy of it (fuzz_trace.c) matches each import to an export: two
 * exports (one of an interior pointer), the same handle opened twice and
 * closed twice, a close with no open, a failed open, a VMM handle imported
 * twice, mapped, unmapped and released twice, a pool shared as a handle and
 * a pool pointer exported, imported and freed, failed exports and imports;
 * device 0 with a uuid, device 1 without. Small: it is a seed. */
static void scenario_ipc(void)
{
    struct writer w;
    writer_open(&w, "ipc", 0, 0);
    uint32_t st[3];
    meta_process(&w);
    meta_job(&w);
    meta_config(&w, 0);
    meta_device_uuid(&w, 0, "NVIDIA H200", 150ull << 30, true);
    meta_device_uuid(&w, 1, "NVIDIA H200", 150ull << 30, false);
    for (unsigned i = 0; i < 3; i++) {
        uint64_t frames[2] = {0x555555555100ull + 32 * i, 0x555555555200ull};
        st[i] = meta_stack(&w, frames, 2);
    }
    meta_thread(&w, 6001, "main");
    struct thread_stream t = {.s = {.tid = 6001}, .w = &w};
#define IPC(api_, dev_, res_, addr_, size_, fp_, aux1_)                                                              \
    emit(&t, (struct cmt_event){.type = CMT_REC_IPC, .api = (api_), .kind = cmt_api_default_kind(api_),              \
                                .has_device = true, .device = (dev_), .result = (res_), .addr = (addr_),            \
                                .size = (size_), .stack = st[2], .aux = {(fp_), (aux1_)}})
    alloc(&t, CMT_API_CUDA_MALLOC, 0, DEV0, 1 << 20, st[0]);
    alloc(&t, CMT_API_CUDA_MALLOC, 0, DEV0 + (4 << 20), 2 << 20, st[1]);
    IPC(CMT_API_CUDA_IPC_GET_MEM_HANDLE, 0, 0, DEV0, 0, 0x1111, 0);
    IPC(CMT_API_CU_IPC_GET_MEM_HANDLE, 0, 0, DEV0 + (4 << 20) + 4096, 0, 0x2222, 0); /* interior */
    IPC(CMT_API_CUDA_IPC_GET_MEM_HANDLE, 0, 1, DEV0 + 0x9000000, 0, 0, 0);        /* failed export */
    /* between the process's own blocks, on device 0 */
    IPC(CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0, 0, DEV0 + (1 << 20), 1 << 20, 0x1111, 1);
    IPC(CMT_API_CU_IPC_OPEN_MEM_HANDLE, 0, 0, DEV0 + (1 << 20), 1 << 20, 0x1111, 1); /* the same, again */
    IPC(CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 1, 0, DEV1, 2 << 20, 0x2222, 1);
    IPC(CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0, 201, 0, 0, 0x5555, 1);               /* failed open */
    IPC(CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, 0, 0, DEV1 + (64 << 20), 0, 0, 0);     /* never opened */
    /* a VMM handle from another process, imported twice */
    IPC(CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, 0, 0, 0xc0de0001, 0, 0x3333, 8);
    IPC(CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, 0, 0, 0xc0de0001, 0, 0x3333, 8);
    IPC(CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, 0, 999, 0, 0, 0, 8);        /* failed import */
    IPC(CMT_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE, 0, 0, 0xc0de0001, 0, 0x3333, 8);
    alloc(&t, CMT_API_CU_MEM_ADDRESS_RESERVE, 0, 0x7e0000000000ull, 4 << 20, st[1]);
    emit(&t, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_MAP, .kind = CMT_KIND_VMM_MAP,
                                .has_device = true, .device = 0, .addr = 0x7e0000000000ull, .size = 2 << 20,
                                .stack = st[1], .aux = {0xc0de0001}});
    /* pools: one shared as a handle, a pointer of it exported and imported */
    IPC(CMT_API_CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, 0, 0, 0xb00001, 0, 0x6666, 8);
    IPC(CMT_API_CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, 0, 0, 0xb00002, 0, 0x6666, 8);
    IPC(CMT_API_CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, 0, 1, 0, 0, 0, 8);      /* failed */
    emit(&t, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_ASYNC, .kind = CMT_KIND_ASYNC,
                                .has_device = true, .device = 0, .addr = DEV0 + (16 << 20), .size = 1 << 20,
                                .stream = 0x5000, .stack = st[0]});
    IPC(CMT_API_CUDA_MEM_POOL_EXPORT_POINTER, 0, 0, DEV0 + (16 << 20), 0, 0x4444, 0);
    IPC(CMT_API_CU_MEM_POOL_EXPORT_POINTER, 0, 1, DEV0 + (20 << 20), 0, 0, 0);    /* failed */
    IPC(CMT_API_CUDA_MEM_POOL_IMPORT_POINTER, 0, 0, DEV0 + (32 << 20), 1 << 20, 0x4444, 0xb00002);
    IPC(CMT_API_CU_MEM_POOL_IMPORT_POINTER, 1, 0, DEV1 + (8 << 20), 1 << 20, 0x4444, 0xb00002);
    release(&t, CMT_API_CUDA_FREE, DEV0 + (32 << 20), st[0]);                    /* the import's free */
    release(&t, CMT_API_CUDA_FREE_ASYNC, DEV0 + (16 << 20), st[0]);
    /* closes: the handle opened twice, twice; the VMM mapping undone */
    IPC(CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, 0, 0, DEV0 + (1 << 20), 0, 0, 0);
    IPC(CMT_API_CU_IPC_CLOSE_MEM_HANDLE, 0, 0, DEV0 + (1 << 20), 0, 0, 0);
    IPC(CMT_API_CU_IPC_CLOSE_MEM_HANDLE, 0, 1, DEV1, 0, 0, 0);                    /* failed close */
    release(&t, CMT_API_CU_MEM_UNMAP, 0x7e0000000000ull, 0);
    release(&t, CMT_API_CU_MEM_RELEASE, 0xc0de0001, 0);
    release(&t, CMT_API_CU_MEM_RELEASE, 0xc0de0001, 0);
    release(&t, CMT_API_CU_MEM_ADDRESS_FREE, 0x7e0000000000ull, 0);
    release(&t, CMT_API_CUDA_FREE, DEV0, st[0]);
#undef IPC
    writer_close(&w, true);
}

/* Created and closed with nothing in it. */
/* An ALLOCATOR record (format 2.4: the settings). */
static void meta_allocator(struct writer *w, const char *cuda_conf)
{
    uint32_t version = meta_string(w, "2.11.0+cu130"), backend = meta_string(w, "native"),
             conf = meta_string(w, cuda_conf);
    struct cmt_payload b;
    if (!meta_begin(w, &b, 64))
        return;
    cmt_payload_varint(&b, cmt_now_ns());
    cmt_payload_varint(&b, CMT_FRAMEWORK_PYTORCH);
    cmt_payload_varint(&b, version);
    cmt_payload_varint(&b, CMT_BLOCKS_ON);
    cmt_payload_varint(&b, backend);
    cmt_payload_varint(&b, 0);
    cmt_payload_varint(&b, conf);
    meta_commit(w, &b, CMT_META_ALLOCATOR);
}

static void block(struct thread_stream *t, uint8_t api, int32_t device, uint64_t addr, uint64_t size, uint64_t stream,
                  uint32_t stack, uint64_t pool)
{
    bool tensor = api == CMT_API_TORCH_ALLOC || api == CMT_API_TORCH_FREE_REQUESTED ||
                  api == CMT_API_TORCH_FREE_COMPLETED || api == CMT_API_TORCH_OOM;
    emit(t, (struct cmt_event){.type = CMT_REC_BLOCK, .api = api,
                               .kind = tensor ? CMT_KIND_TORCH_BLOCK : CMT_KIND_TORCH_SEGMENT, .has_device = true,
                               .device = device, .addr = addr, .size = size, .stream = stream, .stack = stack,
                               .aux = {pool, pool ? 1 : 0, api == CMT_API_TORCH_OOM ? 1ull << 30 : 0}});
}

/* PyTorch's block layer (format 2.1, the settings of 2.4): segments and
 * tensors on two streams and two devices, a private pool, a release
 * completed later, empty_cache's releases, an expandable segment's mapping
 * and unmapping, a failed cudaMalloc and PyTorch's OOM record: what the
 * block layer and the what-if replays read. */
static void scenario_blocks(void)
{
    struct writer w;
    writer_open(&w, "blocks", 0, 0);
    uint32_t st[4];
    common_metadata(&w, 0, st, 4);
    meta_allocator(&w, "max_split_size_mb:64,roundup_power2_divisions:[64:8,>:2]");
    struct thread_stream a = {.s = {.tid = 31}, .w = &w};
    emit(&a, (struct cmt_event){.type = CMT_REC_SAMPLE, .api = CMT_API_SAMPLE_START, .has_device = true,
                                .aux = {140ull << 30, 150ull << 30}});
    const uint64_t mib = 1ull << 20, s1 = 0x10, s2 = 0x20;
    alloc(&a, CMT_API_CUDA_MALLOC, 0, DEV0, 20 * mib, st[0]);
    block(&a, CMT_API_TORCH_SEGMENT_ALLOC, 0, DEV0, 20 * mib, s1, 0, 0);
    block(&a, CMT_API_TORCH_ALLOC, 0, DEV0, 5 * mib, s1, st[1], 0);
    block(&a, CMT_API_TORCH_ALLOC, 0, DEV0 + 5 * mib, 1000, s1, st[2], 0);
    alloc(&a, CMT_API_CUDA_MALLOC, 0, DEV0 + 64 * mib, 100 * mib, st[0]);
    block(&a, CMT_API_TORCH_SEGMENT_ALLOC, 0, DEV0 + 64 * mib, 100 * mib, s2, 0, 0);
    block(&a, CMT_API_TORCH_ALLOC, 0, DEV0 + 64 * mib, 99 * mib, s2, st[3], 0);
    block(&a, CMT_API_TORCH_ALLOC, 0, DEV0 + 200 * mib, 3 * mib, s1, st[1], 7); /* a private pool */
    block(&a, CMT_API_TORCH_FREE_REQUESTED, 0, DEV0, 5 * mib, s1, 0, 0);
    block(&a, CMT_API_TORCH_FREE_REQUESTED, 0, DEV0 + 64 * mib, 99 * mib, s2, 0, 0);
    block(&a, CMT_API_TORCH_FREE_COMPLETED, 0, DEV0 + 64 * mib, 99 * mib, s2, 0, 0);
    block(&a, CMT_API_TORCH_SEGMENT_FREE, 0, DEV0 + 64 * mib, 100 * mib, s2, 0, 0); /* empty_cache() */
    release(&a, CMT_API_CUDA_FREE, DEV0 + 64 * mib, 0);
    block(&a, CMT_API_TORCH_FREE_COMPLETED, 0, DEV0, 5 * mib, s1, 0, 0);
    block(&a, CMT_API_TORCH_SEGMENT_MAP, 1, DEV1, 40 * mib, s1, 0, 0);
    block(&a, CMT_API_TORCH_ALLOC, 1, DEV1, 30 * mib, s1, st[2], 0);
    block(&a, CMT_API_TORCH_FREE_REQUESTED, 1, DEV1, 30 * mib, s1, 0, 0);
    block(&a, CMT_API_TORCH_FREE_COMPLETED, 1, DEV1, 30 * mib, s1, 0, 0);
    block(&a, CMT_API_TORCH_SEGMENT_UNMAP, 1, DEV1 + 20 * mib, 20 * mib, s1, 0, 0);
    emit(&a, (struct cmt_event){.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                                .has_device = true, .size = 200ull << 30, .stack = st[3], .result = 2});
    block(&a, CMT_API_TORCH_OOM, 0, 0, 200ull << 30, s1, st[3], 0);
    writer_close(&w, true);
}

static void scenario_empty(void)
{
    struct writer w;
    writer_open(&w, "empty", 0, 0);
    writer_close(&w, true);
}

/* ---- compaction --------------------------------------------------------------- */

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        die(path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void write_all(const char *name, const uint8_t *data, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        die(path);
}

/* Format 2 binds every chunk and record to its offset (format.h,
 * "Integrity"): moving chunks closer together would need every check
 * recomputed and the END record rewritten, so the seeds keep the writer's
 * layout, trimmed to the claimed chunks. */
static size_t compact(const uint8_t *in, size_t len, uint8_t *out)
{
    struct cmt_file_header h;
    memcpy(&h, in, sizeof h);
    uint64_t claimed = h.claimed_end & CMT_CHECKED_VALUE_MASK;
    size_t n = claimed < len ? (size_t)claimed : len;
    memcpy(out, in, n);
    return n;
}

/* Where the first record of the first chunk of this magic begins. */
static size_t first_body(const uint8_t *data, size_t len, uint32_t magic)
{
    struct cmt_file_header h;
    memcpy(&h, data, sizeof h);
    for (size_t off = h.header_size; off + CMT_CHUNK_HEADER_SIZE <= len;) {
        struct cmt_chunk_header c;
        memcpy(&c, data + off, sizeof c);
        if (c.magic == magic)
            return off + CMT_CHUNK_HEADER_SIZE;
        if (c.size == 0)
            break;
        off += c.size;
    }
    return 0;
}

static void emit_compacted(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", work_dir, name);
    size_t len;
    uint8_t *in = read_all(path, &len);
    uint8_t *out = malloc(len + CMT_CHUNK_ALIGN);
    if (!out)
        die("out of memory");
    size_t n = compact(in, len, out);
    write_all(name, out, n);
    if (keep_real_layout) {
        char real[256];
        snprintf(real, sizeof real, "%s.real", name);
        write_all(real, in, len);
    }

    /* Cuts of the first trace: a copy that stopped short, at every kind of
     * place the reader must tell apart. */
    if (!strcmp(name, "every_api")) {
        size_t event_body = first_body(out, n, CMT_CHUNK_MAGIC_EVENTS);
        size_t meta_body = first_body(out, n, CMT_CHUNK_MAGIC_META);
        const struct {
            const char *suffix;
            size_t at;
        } cuts[] = {
            {"cut_in_file_header", 100},
            {"cut_after_file_header", CMT_FILE_HEADER_SIZE},
            {"cut_in_chunk_header", meta_body - 10},
            {"cut_in_meta_record", meta_body + 30},
            {"cut_in_event_record", event_body + 5},
            {"cut_mid_events", event_body + (n - event_body) / 2 + 1},
            {"cut_before_last_chunk", n - CMT_CHUNK_ALIGN},
        };
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            if (cuts[i].at == 0 || cuts[i].at >= n)
                continue;
            char cut[256];
            snprintf(cut, sizeof cut, "%s_%s", name, cuts[i].suffix);
            write_all(cut, out, cuts[i].at);
        }
    }
    free(in);
    free(out);
}

/* Modules at the paths the fuzz target's scratch sysroot holds
 * (fuzz_trace.c, scratch_sysroot): a real ELF file by absolute, relative
 * and climbing paths, a FIFO, a device node and a directory, each with a
 * call site live at exit, so the symbolized pass resolves (or refuses)
 * every one of them. */
static void scenario_modules(void)
{
    struct writer w;
    writer_open(&w, "modules", 0, 0);
    meta_process(&w);
    meta_config(&w, 0);
    static const char *const paths[] = {"/elf", "elf", "../../elf", "/fifo", "/zero", "/dir", "/dir/../elf"};
    uint32_t mods[sizeof paths / sizeof paths[0]];
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        uint64_t bias = 0x7e0000000000ull + (uint64_t)i * 0x10000000ull;
        /* No build-id: the file found stands for the module, as any ELF
         * file a hostile trace names would. */
        mods[i] = meta_module_with(&w, paths[i], bias, bias, bias + 0x4000000, false);
    }
    meta_thread(&w, 1001, "main");
    struct thread_stream a = {.s = {.tid = 1001}, .w = &w};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        uint64_t bias = 0x7e0000000000ull + (uint64_t)i * 0x10000000ull;
        /* In the code of any build of the fuzz target (its text starts a
         * few pages in and runs for hundreds of KiB). */
        uint64_t frames[4] = {bias + 0x9200 + 0x40 * i, bias + 0xc000, bias + 0x13400 + 0x100 * i, bias + 0x8010};
        uint32_t st = meta_stack(&w, frames, 4);
        (void)mods[i];
        alloc(&a, CMT_API_CUDA_MALLOC, 0, DEV0 + 0x100000 * i, (i + 1) << 20, st);
    }
    writer_close(&w, true);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[1], "--real-layout"))) {
        fprintf(stderr, "usage: gen_corpus [--real-layout] OUTDIR\n");
        return 2;
    }
    out_dir = argv[argc - 1];
    keep_real_layout = argc == 3;
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        die(out_dir);
    snprintf(work_dir, sizeof work_dir, "%s/.work", out_dir);
    if (mkdir(work_dir, 0755) != 0 && errno != EEXIST)
        die(work_dir);

    scenario_every_api();
    scenario_threads();
    scenario_size_limit();
    scenario_crashed();
    scenario_forked();
    scenario_empty();
    scenario_ipc();
    scenario_blocks();
    scenario_modules();
    static const char *const names[] = {"every_api", "threads", "size_limit", "crashed", "forked_child", "empty", "ipc",
                                        "blocks", "modules"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        emit_compacted(names[i]);
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", work_dir, names[i]);
        unlink(path);
    }
    rmdir(work_dir);
    return 0;
}
