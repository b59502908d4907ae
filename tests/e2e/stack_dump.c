/* SPDX-License-Identifier: MIT */
/* Prints, for each allocation of a trace in the order it was made, its size,
 * its stack id, device and result, and its frames as module+offset (the same in two runs of one
 * program, whatever the address space layout): two runs that recorded the
 * same stacks print the same lines. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

#define MAX_STRINGS 65536
#define MAX_MODULES 4096
#define MAX_STACKS 65536

static char *strings[MAX_STRINGS];
static struct cmt_module_in modules[MAX_MODULES];
static size_t n_modules;
static uint64_t *stack_frames[MAX_STACKS];
static uint32_t stack_len[MAX_STACKS];
static uint32_t stack_modules_known[MAX_STACKS];

static void on_string(void *ctx, uint32_t id, const char *text, size_t len)
{
    (void)ctx;
    if (id < MAX_STRINGS)
        strings[id] = strndup(text, len);
}

static void on_module(void *ctx, const struct cmt_module_in *m)
{
    (void)ctx;
    if (n_modules < MAX_MODULES)
        modules[n_modules++] = *m;
}

static void on_stack(void *ctx, uint32_t id, uint32_t modules_known, const uint64_t *frames, uint32_t n)
{
    (void)ctx;
    if (id >= MAX_STACKS)
        return;
    stack_modules_known[id] = modules_known;
    stack_frames[id] = malloc((n ? n : 1) * sizeof *frames);
    memcpy(stack_frames[id], frames, n * sizeof *frames);
    stack_len[id] = n;
}

static void print_frame(uint64_t ip, uint32_t modules_known)
{
    /* The latest module covering ip among those loaded when the stack was
     * taken: a library loaded where another was unloaded is the one that
     * ran from then on. */
    for (size_t i = n_modules; i-- > 0;) {
        if (modules[i].id <= modules_known && ip >= modules[i].lo && ip < modules[i].hi) {
            const char *path = modules[i].path_id < MAX_STRINGS ? strings[modules[i].path_id] : NULL;
            const char *slash = path ? strrchr(path, '/') : NULL;
            printf(" %s+0x%" PRIx64, slash ? slash + 1 : path ? path : "?", ip - modules[i].bias);
            return;
        }
    }
    printf(" ?+0x%" PRIx64, ip);
}

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    (void)ctx;
    if (e->type != CMT_REC_ALLOC)
        return 0;
    printf("%" PRIu64 " stack %" PRIu64 " dev %d res %d:", e->size, e->stack, e->device, e->result);
    if (e->stack < MAX_STACKS)
        for (uint32_t i = 0; i < stack_len[e->stack]; i++)
            print_frame(stack_frames[e->stack][i], stack_modules_known[e->stack]);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stack_dump TRACE\n");
        return 2;
    }
    struct cmt_reader *r;
    char err[256];
    if (cmt_reader_open(argv[1], &r, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 2;
    }
    struct cmt_reader_callbacks cb = {
        .on_string = on_string, .on_module = on_module, .on_stack = on_stack, .on_event = on_event};
    int rc = cmt_reader_run(r, &cb, NULL);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", argv[1], cmt_reader_error(r));
    cmt_reader_close(r);
    for (size_t i = 0; i < MAX_STRINGS; i++)
        free(strings[i]);
    for (size_t i = 0; i < MAX_STACKS; i++)
        free(stack_frames[i]);
    return rc != 0;
}
