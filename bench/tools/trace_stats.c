/* SPDX-License-Identifier: MIT */
/* What a trace costs in bytes: the file, the events in it, and the bytes of
 * the event records themselves (the rest is the header, metadata such as
 * stacks and modules, chunk headers and chunk tails). One JSON line.
 *
 *   trace_stats TRACE */
#include <inttypes.h>
#include <stdio.h>

#include "trace_reader.h"

struct counts {
    uint64_t allocs, frees, other, stacks, stack_frames, modules;
};

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct counts *c = ctx;
    if (e->type == CMT_REC_ALLOC)
        c->allocs++;
    else if (e->type == CMT_REC_FREE)
        c->frees++;
    else
        c->other++;
    return 0;
}

static void on_stack(void *ctx, uint32_t id, uint32_t modules_known, const uint64_t *frames, uint32_t n)
{
    (void)id, (void)modules_known, (void)frames;
    struct counts *c = ctx;
    c->stacks++;
    c->stack_frames += n;
}

static void on_module(void *ctx, const struct cmt_module_in *m)
{
    (void)m;
    ((struct counts *)ctx)->modules++;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trace_stats TRACE\n");
        return 2;
    }
    struct cmt_reader *r;
    char err[256];
    if (cmt_reader_open(argv[1], &r, err, sizeof err) != 0) {
        fprintf(stderr, "trace_stats: %s: %s\n", argv[1], err);
        return 1;
    }
    struct counts c = {0};
    struct cmt_reader_callbacks cb = {.on_event = on_event, .on_stack = on_stack, .on_module = on_module};
    int rc = cmt_reader_run(r, &cb, &c);
    if (rc != 0)
        fprintf(stderr, "trace_stats: %s: %s\n", argv[1], cmt_reader_error(r));
    const struct cmt_reader_stats *s = cmt_reader_stats(r);
    uint64_t file = cmt_reader_info(r)->file_size;
    uint64_t events = s->events;
    printf("{\"file_bytes\": %" PRIu64 ", \"events\": %" PRIu64 ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64
           ", \"event_record_bytes\": %" PRIu64 ", \"stacks\": %" PRIu64 ", \"stack_frames\": %" PRIu64
           ", \"modules\": %" PRIu64 ", \"event_chunks\": %" PRIu64 ", \"file_bytes_per_event\": %.2f"
           ", \"record_bytes_per_event\": %.2f}\n",
           file, events, c.allocs, c.frees, s->bytes_of_records, c.stacks, c.stack_frames, c.modules,
           s->event_chunks, events ? (double)file / (double)events : 0.0,
           events ? (double)s->bytes_of_records / (double)events : 0.0);
    cmt_reader_close(r);
    return rc != 0;
}
