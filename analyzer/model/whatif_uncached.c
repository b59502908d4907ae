/* SPDX-License-Identifier: MIT */
#include "whatif_uncached.h"

#include <stdlib.h>
#include <string.h>

#include "memory_holder.h"
#include "report.h"
#include "uncached_pass.h"

/* Stacks of PyTorch's allocations made without its cache. */
static uint8_t *tensor_stacks(const struct cmt_analysis *a, struct cmt_frames *frames, struct cmt_report *report,
                              size_t *n, bool *any)
{
    *n = a->model.n_stacks;
    *any = false;
    uint8_t *t = calloc(*n ? *n : 1, 1);
    if (!t)
        return NULL;
    const struct cmt_replay *r = &a->replay;
    bool cache_on = false;
    for (size_t i = 0; i < r->n_active; i++) {
        uint32_t s = r->active_sites[i];
        if (s >= *n || r->sites[s].kind != CMT_KIND_DEVICE)
            continue;
        enum cmt_holder cache = report ? cmt_report_cache(report, s) : cmt_cache_of(frames, s);
        if (cache == CMT_HOLDER_PYTORCH)
            cache_on = true;
        else if (cache == CMT_HOLDER_OTHER &&
                 (report ? cmt_report_holder(report, s) : cmt_holder_of(frames, s)) == CMT_HOLDER_PYTORCH) {
            t[s] = 1;
            *any = true;
        }
    }
    /* a segment of PyTorch's cache says the cache was on: its tensors are
     * inside segments the trace does not open (no block layer), and
     * replaying the few allocations that went around it would answer
     * another question */
    if (cache_on)
        *any = false;
    return t;
}

struct tensor_table {
    const uint8_t *tensor_stack; /* by stack id: a PyTorch tensor's cudaMalloc */
    size_t n_stacks;
};

static bool is_tensor(void *ctx, const struct cmt_event_in *e)
{
    const struct tensor_table *t = ctx;
    return e->kind == CMT_KIND_DEVICE && e->stack < t->n_stacks && t->tensor_stack[e->stack];
}

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    return cmt_uncached_pass_event(ctx, e);
}

/* The trace read once more (the analysis did not follow the tensors, or
 * what it followed is not what the whole trace says): w filled. */
static int read_again(const struct cmt_analysis *a, const struct tensor_table *table, struct cmt_whatif *w)
{
    struct cmt_uncached_pass *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    cmt_uncached_pass_init(p, &a->model, w, is_tensor, (void *)table,
                           a->stop_at_ns ? a->info.start_monotonic_ns + a->stop_at_ns : 0);
    struct cmt_reader *reader = NULL;
    char err[CMT_READER_MESSAGE_MAX];
    int orc = a->data ? cmt_reader_open_memory(a->data, a->data_size, &reader, err, sizeof err)
                      : cmt_reader_open(a->path, &reader, err, sizeof err);
    if (orc == 0) {
        struct cmt_reader_callbacks cb = {.on_event = on_event};
        /* damage stops this reading where it stopped the first */
        cmt_reader_run(reader, &cb, p);
        cmt_reader_close(reader);
    }
    cmt_uncached_pass_finish(p);
    int rc = cmt_uncached_pass_failed(p) ? -1 : 0;
    cmt_uncached_pass_free(p);
    free(p);
    return rc;
}

int cmt_whatif_uncached_run(struct cmt_whatif **out, const struct cmt_analysis *a, struct cmt_frames *frames,
                            struct cmt_report *report, const struct cmt_ta_settings *settings, size_t n_settings,
                            uint64_t capacity)
{
    *out = NULL;
    if (!frames || (a->blocks && a->blocks->events))
        return 0;
    struct tensor_table table;
    bool any;
    uint8_t *tensor = tensor_stacks(a, frames, report, &table.n_stacks, &any);
    if (!tensor)
        return -1;
    table.tensor_stack = tensor;
    if (!any) {
        free(tensor);
        return 0;
    }
    /* Followed during the analysis's reading, with the same answers. */
    struct cmt_whatif *w = cmt_read_passes_take_uncached(a->passes, tensor, table.n_stacks, settings, n_settings,
                                                         capacity);
    if (w) {
        free(tensor);
        *out = w;
        return 0;
    }
    w = calloc(1, sizeof *w);
    int rc = -1;
    if (w && cmt_whatif_init(w, settings, n_settings, capacity) == 0)
        rc = read_again(a, &table, w);
    else if (w) {
        free(w);
        w = NULL;
    }
    free(tensor);
    if (rc == 0) {
        *out = w;
    } else if (w) {
        cmt_whatif_free(w);
        free(w);
    }
    return rc;
}

void cmt_whatif_uncached_free(struct cmt_whatif *w)
{
    if (!w)
        return;
    cmt_whatif_free(w);
    free(w);
}
