/* SPDX-License-Identifier: MIT */
/* What format 2's integrity costs on the hot path (docs/performance.md):
 * appending an event record the way format 1 did (encode, store the type
 * byte) against the way the shim does now (encode, CRC-32C check, type
 * byte, commit word), in the same process, alternating, so that a loaded
 * machine slows both alike. Also the table CRC a CPU without SSE4.2 uses.
 *
 *   bench_record_cost [EVENTS] [ROUNDS]
 *
 * Prints ns per event (thread CPU time) of each way, medians over rounds,
 * and the bytes per record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event_stream.h"

#define CHUNK (256u << 10)
#define MAX_ROUNDS 64

enum way { FORMAT1, FORMAT2, FORMAT2_TABLE_CRC, N_WAYS };
static const char *const way_names[N_WAYS] = {"format 1: type byte only", "format 2: check + commit word",
                                              "format 2, table CRC (no SSE4.2)"};

static double thread_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The events an allocation-heavy program makes: allocations with a stack,
 * releases without, addresses and sizes that vary. */
static void make_event(struct cmt_event *e, unsigned i, uint64_t ts)
{
    memset(e, 0, sizeof *e);
    bool alloc = !(i & 1);
    e->type = alloc ? CMT_REC_ALLOC : CMT_REC_FREE;
    e->api = alloc ? CMT_API_CUDA_MALLOC_ASYNC : CMT_API_CUDA_FREE_ASYNC;
    e->kind = CMT_KIND_ASYNC;
    e->has_device = alloc;
    e->ts = ts;
    e->addr = 0x7f0000000000ull + (uint64_t)(i / 2 % 64) * 4096;
    e->size = alloc ? 512 + (i % 7) * 64 : 0;
    e->stream = 0x5100;
    e->stack = alloc ? 1 + i % 5 : 0;
}

static __attribute__((noinline)) void append(enum way w, struct cmt_event_stream *s, const struct cmt_event *e)
{
    uint8_t *rec = s->pos;
    size_t len = cmt_event_encode(rec, e, &s->prev_ts, &s->prev_addr, &s->prev_device);
    if (w == FORMAT1) {
        __atomic_store_n(&rec[0], e->type, __ATOMIC_RELEASE);
        s->pos = rec + len;
        return;
    }
    if (w == FORMAT2_TABLE_CRC) {
        uint32_t state = cmt_crc32c_update_portable(s->chain ^ e->type, rec + 1, len - 1);
        uint16_t check = cmt_record_check16(state);
        memcpy(rec + len, &check, sizeof check);
        s->chain = state;
        len += CMT_RECORD_CHECK_SIZE;
    } else {
        len = cmt_record_add_check(rec, len, e->type, &s->chain);
    }
    __atomic_store_n(&rec[0], e->type, __ATOMIC_RELEASE);
    s->pos = rec + len;
    cmt_chunk_publish_commit(s->chunk, s->pos, s->chain);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    unsigned events = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000000;
    unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 15;
    if (rounds > MAX_ROUNDS)
        rounds = MAX_ROUNDS;
    uint8_t *chunk = aligned_alloc(4096, CHUNK);
    if (!chunk)
        return 1;
    double ns[N_WAYS][MAX_ROUNDS];
    size_t bytes[N_WAYS] = {0};
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned k = 0; k < N_WAYS; k++) {
            enum way w = (enum way)((k + r) % N_WAYS); /* a different order each round */
            memset(chunk, 0, CHUNK);
            struct cmt_event_stream s = {.chunk = chunk, .pos = chunk + CMT_CHUNK_HEADER_SIZE,
                                         .end = chunk + CHUNK, .chain = 0x12345678u};
            uint64_t ts = 1000000000ull;
            size_t total = 0;
            double t0 = thread_ns();
            for (unsigned i = 0; i < events; i++) {
                if ((size_t)(s.end - s.pos) < CMT_MAX_EVENT_RECORD) {
                    total += (size_t)(s.pos - (chunk + CMT_CHUNK_HEADER_SIZE));
                    s.pos = chunk + CMT_CHUNK_HEADER_SIZE; /* a new chunk, the same memory */
                }
                struct cmt_event e;
                make_event(&e, i, ts += 150 + (i % 3) * 40);
                append(w, &s, &e);
            }
            ns[w][r] = (thread_ns() - t0) / events;
            total += (size_t)(s.pos - (chunk + CMT_CHUNK_HEADER_SIZE));
            bytes[w] = total;
        }
    }
    printf("%u events per round, %u rounds, medians of thread CPU time\n", events, rounds);
    double median[N_WAYS];
    for (unsigned w = 0; w < N_WAYS; w++) {
        qsort(ns[w], rounds, sizeof ns[w][0], by_value);
        median[w] = ns[w][rounds / 2];
        printf("%-34s %6.2f ns/event  (range %.2f..%.2f)  %.2f bytes/record\n", way_names[w], median[w], ns[w][0],
               ns[w][rounds - 1], (double)bytes[w] / events);
    }
    printf("integrity cost: %+.2f ns/event with SSE4.2 (CPU %s it), %+.2f ns/event with the table\n",
           median[FORMAT2] - median[FORMAT1],
#ifdef CMT_CRC32C_HW
           cmt_crc32c_have_hw() ? "has" : "lacks",
#else
           "cannot use",
#endif
           median[FORMAT2_TABLE_CRC] - median[FORMAT1]);
    free(chunk);
    return 0;
}
