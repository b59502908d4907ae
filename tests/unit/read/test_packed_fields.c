/* SPDX-License-Identifier: MIT */
/* The packed fields the reader keeps as it decodes (struct cmt_event_in's
 * first 48 bytes, copied whole by the feed: cmt_replay_in_copy) are what
 * cmt_replay_in_from makes of the event, for every event delivered: of a
 * built trace with every field at odd values (devices out of range, kinds
 * from 0x80 up, pitched allocations, stack ids at and past the limit, the
 * rare fields coming and going), of the traces given as arguments, and of
 * copies of them with bytes changed (damage met on either decoding path).
 * Arguments: traces, or folders searched for *.bin. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay.h"
#include "test_util.h"
#include "trace_builder.h"

#define START 1000000000ull

struct check {
    uint32_t limit;
    uint64_t events;
};

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct check *c = ctx;
    struct cmt_replay_in a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    cmt_replay_in_from(&a, e, c->limit);
    cmt_replay_in_copy(&b, e);
    if (memcmp(&a, &b, sizeof a) != 0) {
        fprintf(stderr, "event %llu (type %u api %u kind %u device %d stack %llu): packed fields differ\n",
                (unsigned long long)c->events, e->type, e->api, e->kind, e->device, (unsigned long long)e->stack);
        exit(1);
    }
    c->events++;
    return 0;
}

/* Reads data with each stack limit; the events delivered. */
static uint64_t check_bytes(const void *data, size_t size)
{
    static const uint32_t limits[] = {UINT32_MAX, 1u << 26, 3, 1, 0};
    uint64_t n = 0;
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        struct cmt_reader *r;
        char err[256];
        if (cmt_reader_open_memory(data, size, &r, err, sizeof err) != 0)
            return 0;
        struct check c = {.limit = limits[i]};
        if (limits[i] != UINT32_MAX)
            cmt_reader_set_stack_limit(r, limits[i]);
        struct cmt_reader_callbacks cb = {.on_event = on_event};
        cmt_reader_run(r, &cb, &c);
        cmt_reader_close(r);
        n = c.events;
    }
    return n;
}

static uint8_t *load(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    struct stat st;
    CHECK(fstat(fileno(f), &st) == 0);
    uint8_t *d = malloc((size_t)st.st_size + 1);
    CHECK(d != NULL);
    CHECK(fread(d, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
    fclose(f);
    *size = (size_t)st.st_size;
    return d;
}

/* The trace at path, then copies with a byte changed at 64 places. */
static void check_file(const char *path, uint64_t *events)
{
    size_t size;
    uint8_t *d = load(path, &size);
    *events += check_bytes(d, size);
    uint64_t x = 88172645463325252ull;
    for (unsigned k = 0; k < 64 && size > 4096; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t at = 4096 + (size_t)(x % (size - 4096));
        uint8_t was = d[at];
        d[at] ^= (uint8_t)(1u << (x >> 61));
        *events += check_bytes(d, size);
        d[at] = was;
    }
    free(d);
}

static void write_odd_trace(const char *path)
{
    struct cmt_trace_builder_options opt = {.pid = 42, .start_monotonic_ns = START, .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    CHECK(b != NULL);
    static const int32_t devices[] = {0, 1, -1, -2, 63, 64, 127, 200, INT32_MIN, INT32_MAX, 5};
    static const uint64_t stacks[] = {0, 1, 2, 3, 4, (1u << 26) - 1, 1u << 26, UINT32_MAX, 1ull << 32, UINT64_MAX};
    static const uint8_t apis[] = {CMT_API_CUDA_MALLOC, CMT_API_CUDA_MALLOC_PITCH, CMT_API_CUDA_MALLOC_3D,
                                   CMT_API_CU_MEM_ALLOC_PITCH, CMT_API_CUDA_FREE, CMT_API_CUDA_MALLOC_ASYNC, 63, 64,
                                   200, 255};
    uint64_t ts = START;
    for (unsigned i = 0; i < 3000; i++) {
        uint8_t api = apis[i % 10];
        struct cmt_event e = {
            .type = i % 7 == 3 ? CMT_REC_FREE : i % 11 == 5 ? CMT_REC_SAMPLE : CMT_REC_ALLOC,
            .api = api,
            .kind = i % 13 == 0 ? (uint8_t)(0x7e + i % 5) : (uint8_t)cmt_api_default_kind(api),
            .has_device = i % 3 != 0,
            .device = devices[i % 11],
            .result = i % 17 == 0 ? 2 : 0,
            .ts = ts += 1 + i % 5,
            .addr = 0x7f0000000000ull + (uint64_t)(i % 97) * 4096,
            .size = i % 19 == 0 ? 0 : 256u << (i % 9),
            .stream = i % 23 == 0 ? 77 : 0,
            .stack = stacks[i % 10],
            .aux = {i % 29 == 0 ? 5 : 0, i % 4 == 0 ? 12345 + i : 0, i % 31 == 0 ? 9 : 0, 0},
        };
        CHECK(cmt_tb_event(b, 7 + i % 2, &e) == 0);
    }
    cmt_tb_end(b, ts + 10, 0);
    CHECK(cmt_tb_close(b) == 0);
}

static uint64_t dir_events;

static int visit(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t n = strlen(p);
    if (type == FTW_F && n > 4 && !strcmp(p + n - 4, ".bin"))
        check_file(p, &dir_events);
    return 0;
}

int main(int argc, char **argv)
{
    char path[] = "/tmp/cmt_packed_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_odd_trace(path);
    uint64_t events = 0;
    size_t size;
    uint8_t *d = load(path, &size);
    CHECK(check_bytes(d, size) == 3000);
    free(d);
    check_file(path, &events);
    unlink(path);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        CHECK(stat(argv[i], &st) == 0);
        if (S_ISDIR(st.st_mode))
            CHECK(nftw(argv[i], visit, 16, FTW_PHYS) == 0);
        else
            check_file(argv[i], &events);
    }
    events += dir_events;
    printf("packed fields: %llu events checked\n", (unsigned long long)events);
    return 0;
}
