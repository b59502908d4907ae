/* SPDX-License-Identifier: MIT */
/* Checks a trace's timestamps against the writer's ordering guarantees,
 * straight from the bytes (format.h only, no reader: the reader's merge
 * would hide what it must tolerate):
 *   every claim_ns >= the header's start_monotonic_ns;
 *   W2  claim_ns never decreases in file order (event and metadata chunks);
 *   W1  every event's ts >= its chunk's claim_ns;
 *   W3  ts never decreases inside an event chunk;
 *   a thread's chunk is claimed no earlier than the last event of its
 *       previous chunk (so its events never go back in time), and its
 *       thread_seq counts up from 0;
 *   the END record's time is not before any claim, nor the exit sample
 *       (written by the thread that writes END), nor any event by more than
 *       the slack given (default 0: nor any event).
 * Prints "start NS", one line per event record:
 *   "event THREAD TYPE API KIND SIZE RESULT DEVICE ADDR AUX0 AUX1"
 * with THREAD the index of the thread's first chunk among threads (file
 * order), "last NS" (the latest event), "end NS" (or "end none"), one
 * "violation WHAT" line per broken guarantee, and exits 1 when
 * there was any (2 when the file cannot be read). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cumemtrace/format.h"

struct thread {
    uint32_t tid;
    uint32_t next_seq;
    uint64_t last_ts;
};

static struct thread threads[4096];
static unsigned n_threads;
static unsigned violations;
static uint64_t max_event_ts, max_claim_ns, end_ts, exit_sample_ts;
static int has_end;

#define VIOLATION(...)                     \
    do {                                   \
        printf("violation " __VA_ARGS__);  \
        putchar('\n');                     \
        violations++;                      \
    } while (0)

static unsigned thread_index(uint32_t tid)
{
    for (unsigned i = 0; i < n_threads; i++)
        if (threads[i].tid == tid)
            return i;
    if (n_threads == sizeof threads / sizeof threads[0]) {
        fprintf(stderr, "too many threads\n");
        exit(2);
    }
    threads[n_threads].tid = tid;
    return n_threads++;
}

static void damaged(uint64_t off)
{
    fprintf(stderr, "damaged record at offset %" PRIu64 "\n", off);
    exit(2);
}

static void event_chunk(const uint8_t *data, uint64_t off, const struct cmt_chunk_header *c)
{
    unsigned ti = thread_index(c->tid);
    struct thread *t = &threads[ti];
    if (c->thread_seq != t->next_seq)
        VIOLATION("thread %u: chunk seq %u, expected %u", c->tid, c->thread_seq, t->next_seq);
    if (t->next_seq > 0 && c->claim_ns < t->last_ts)
        VIOLATION("thread %u: chunk %u claimed at %" PRIu64 ", before the thread's previous event at %" PRIu64,
                  c->tid, c->thread_seq, c->claim_ns, t->last_ts);
    t->next_seq = c->thread_seq + 1;
    uint64_t ts = c->claim_ns, addr = c->base_addr;
    int64_t device = 0;
    const uint8_t *p = data + off + CMT_CHUNK_HEADER_SIZE, *end = data + off + c->size;
    while (p + 2 < end && p[0] != CMT_REC_NONE) {
        const uint8_t *rec = p;
        uint8_t type = p[0], api = p[1];
        p += 2;
        uint64_t mask, v, size = 0, result = 0, kind = cmt_api_default_kind(api), aux[4] = {0};
        if (cmt_varint_get(&p, end, &mask) != 0)
            damaged((uint64_t)(rec - data));
        uint64_t prev = ts;
        for (unsigned bit = 0; bit < 32; bit++) {
            if (!(mask & (1ull << bit)))
                continue;
            if (cmt_varint_get(&p, end, &v) != 0)
                damaged((uint64_t)(rec - data));
            switch (1u << bit) {
            case CMT_F_TS: ts += (uint64_t)cmt_zigzag_decode(v); break;
            case CMT_F_DEVICE: device = cmt_zigzag_decode(v); break;
            case CMT_F_ADDR: addr += (uint64_t)cmt_zigzag_decode(v); break;
            case CMT_F_SIZE: size = v; break;
            case CMT_F_RESULT: result = v; break;
            case CMT_F_KIND: kind = v; break;
            case CMT_F_AUX0: aux[0] = v; break;
            case CMT_F_AUX1: aux[1] = v; break;
            case CMT_F_AUX2: aux[2] = v; break;
            case CMT_F_AUX3: aux[3] = v; break;
            default: break; /* stream, stack, fields of a newer writer */
            }
        }
        p += CMT_RECORD_CHECK_SIZE; /* the reader verifies it; this tool reads the order */
        if (ts < c->claim_ns)
            VIOLATION("W1: event at offset %" PRIu64 " (ts %" PRIu64 ") before its chunk's claim %" PRIu64,
                      (uint64_t)(rec - data), ts, c->claim_ns);
        if (ts < prev)
            VIOLATION("W3: event at offset %" PRIu64 " (ts %" PRIu64 ") before the previous one (%" PRIu64 ")",
                      (uint64_t)(rec - data), ts, prev);
        if (ts > max_event_ts)
            max_event_ts = ts;
        if (type == CMT_REC_SAMPLE && api == CMT_API_SAMPLE_EXIT)
            exit_sample_ts = ts;
        t->last_ts = ts;
        printf("event %u %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRIx64 " %" PRIu64 " %" PRIu64
               "\n",
               ti, type, api, kind, size, result, device, addr, aux[0], aux[1]);
    }
}

static void meta_chunk(const uint8_t *data, uint64_t off, const struct cmt_chunk_header *c)
{
    const uint8_t *p = data + off + CMT_CHUNK_HEADER_SIZE, *end = data + off + c->size;
    while (p < end && p[0] != CMT_META_NONE) {
        const uint8_t *rec = p;
        uint8_t type = *p++;
        uint64_t len, v;
        if (cmt_varint_get(&p, end, &len) != 0 || len > (uint64_t)(end - p))
            damaged((uint64_t)(rec - data));
        const uint8_t *payload = p, *payload_end = p + len;
        p = payload_end + CMT_RECORD_CHECK_SIZE;
        if (type != CMT_META_END)
            continue;
        if (cmt_varint_get(&payload, payload_end, &v) != 0)
            damaged((uint64_t)(rec - data));
        has_end = 1;
        end_ts = v;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: clock_check TRACE [END_SLACK_NS]\n");
        return 2;
    }
    uint64_t slack = argc == 3 ? strtoull(argv[2], NULL, 10) : 0;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    if (!data || size < (long)CMT_FILE_HEADER_SIZE || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read a trace header\n", argv[1]);
        return 2;
    }
    fclose(f);
    struct cmt_file_header h;
    memcpy(&h, data, sizeof h);
    if (memcmp(h.magic, CMT_FILE_MAGIC, CMT_FILE_MAGIC_SIZE) != 0 || h.version_major != CMT_VERSION_MAJOR) {
        fprintf(stderr, "%s: not a version %d trace\n", argv[1], CMT_VERSION_MAJOR);
        return 2;
    }
    printf("start %" PRIu64 "\n", h.start_monotonic_ns);
    uint64_t last_claim = h.start_monotonic_ns;
    for (uint64_t off = h.header_size; off + CMT_CHUNK_HEADER_SIZE <= (uint64_t)size;) {
        struct cmt_chunk_header c;
        memcpy(&c, data + off, sizeof c);
        if (c.magic == 0)
            break;
        if (c.size < CMT_CHUNK_HEADER_SIZE || c.size % CMT_CHUNK_ALIGN || off + c.size > (uint64_t)size)
            damaged(off);
        if (c.magic == CMT_CHUNK_MAGIC_EVENTS || c.magic == CMT_CHUNK_MAGIC_META) {
            if (c.claim_ns < h.start_monotonic_ns)
                VIOLATION("chunk at offset %" PRIu64 " claimed at %" PRIu64 ", before the trace started",
                          off, c.claim_ns);
            if (c.claim_ns < last_claim)
                VIOLATION("W2: chunk at offset %" PRIu64 " claimed at %" PRIu64 ", before the previous claim %"
                          PRIu64, off, c.claim_ns, last_claim);
            last_claim = c.claim_ns;
            if (c.claim_ns > max_claim_ns)
                max_claim_ns = c.claim_ns;
            if (c.magic == CMT_CHUNK_MAGIC_EVENTS)
                event_chunk(data, off, &c);
            else
                meta_chunk(data, off, &c);
        }
        off += c.size;
    }
    printf("last %" PRIu64 "\n", max_event_ts);
    if (has_end) {
        printf("end %" PRIu64 "\n", end_ts);
        if (end_ts + slack < max_event_ts)
            VIOLATION("END at %" PRIu64 ", before an event at %" PRIu64, end_ts, max_event_ts);
        if (end_ts < exit_sample_ts)
            VIOLATION("END at %" PRIu64 ", before the exit sample at %" PRIu64, end_ts, exit_sample_ts);
        if (end_ts < max_claim_ns)
            VIOLATION("END at %" PRIu64 ", before a claim at %" PRIu64, end_ts, max_claim_ns);
    } else {
        printf("end none\n");
    }
    free(data);
    return violations ? 1 : 0;
}
