/* SPDX-License-Identifier: MIT */
/* Reads a trace with the analyzer's reader and checks, per thread, that
 * events came back complete and in the order the thread made them: every
 * thread of the stress programs alternates allocation and release of the same
 * address. Prints one line per thread: "tid allocs frees ok|broken". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace_reader.h"

struct thread_state {
    uint32_t tid;
    uint64_t allocs, frees;
    uint64_t last_addr;
    int expect_free;
    int broken;
    uint64_t last_ts;
};

static struct thread_state threads[4096];
static size_t n_threads;
static uint64_t out_of_order;

static struct thread_state *thread_of(uint32_t tid)
{
    for (size_t i = 0; i < n_threads; i++)
        if (threads[i].tid == tid)
            return &threads[i];
    if (n_threads == sizeof threads / sizeof threads[0]) {
        fprintf(stderr, "too many threads\n");
        exit(2);
    }
    threads[n_threads].tid = tid;
    return &threads[n_threads++];
}

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    uint64_t *last_ts = ctx;
    if (e->ts < *last_ts)
        out_of_order++;
    *last_ts = e->ts;
    struct thread_state *t = thread_of(e->tid);
    if (e->ts < t->last_ts)
        t->broken = 1;
    t->last_ts = e->ts;
    if (e->type == CMT_REC_ALLOC) {
        if (t->expect_free)
            t->broken = 1;
        t->allocs++;
        t->last_addr = e->addr;
        t->expect_free = 1;
    } else if (e->type == CMT_REC_FREE) {
        if (!t->expect_free || e->addr != t->last_addr)
            t->broken = 1;
        t->frees++;
        t->expect_free = 0;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trace_check TRACE\n");
        return 2;
    }
    struct cmt_reader *r;
    char err[256];
    if (cmt_reader_open(argv[1], &r, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 2;
    }
    uint64_t last_ts = 0;
    struct cmt_reader_callbacks cb = {.on_event = on_event};
    int rc = cmt_reader_run(r, &cb, &last_ts);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", argv[1], cmt_reader_error(r));
    cmt_reader_close(r);
    for (size_t i = 0; i < n_threads; i++)
        printf("%u %" PRIu64 " %" PRIu64 " %s\n", threads[i].tid, threads[i].allocs, threads[i].frees,
               threads[i].broken ? "broken" : "ok");
    printf("merge %s\n", out_of_order ? "unordered" : "ordered");
    return rc != 0;
}
