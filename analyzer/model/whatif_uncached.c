/* SPDX-License-Identifier: MIT */
#include "whatif_uncached.h"

#include <stdlib.h>
#include <string.h>

#include "memory_holder.h"

/* A device allocation live in the pass: the process's device-resident
 * bytes (what the device held outside the cache is the rest) and which of
 * them are PyTorch's tensors. */
struct live_alloc {
    uint64_t addr, size;
    uint8_t used, ns, tensor;
    int8_t device;
};

struct uncached_pass {
    const struct cmt_analysis *a;
    struct cmt_whatif *w;
    const uint8_t *tensor_stack; /* by stack id: a PyTorch tensor's cudaMalloc */
    size_t n_stacks;
    uint64_t stop_ts;
    struct live_alloc *t;
    size_t cap, count;
    uint64_t live[CMT_WHATIF_MAX_DEVICES];
    bool out_of_memory;
};

static size_t slot_hash(const struct uncached_pass *p, uint8_t ns, uint64_t addr)
{
    return (size_t)(((addr ^ ((uint64_t)ns << 59)) * 0x9e3779b97f4a7c15ull) >> 20) & (p->cap - 1);
}

static struct live_alloc *find(struct uncached_pass *p, uint8_t ns, uint64_t addr)
{
    if (!p->cap)
        return NULL;
    for (size_t i = slot_hash(p, ns, addr);; i = (i + 1) & (p->cap - 1)) {
        if (!p->t[i].used)
            return NULL;
        if (p->t[i].addr == addr && p->t[i].ns == ns)
            return &p->t[i];
    }
}

static int grow(struct uncached_pass *p)
{
    size_t cap = p->cap ? 2 * p->cap : 1024, old_cap = p->cap;
    struct live_alloc *old = p->t, *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    p->t = t;
    p->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].used)
            continue;
        size_t j = slot_hash(p, old[i].ns, old[i].addr);
        while (t[j].used)
            j = (j + 1) & (cap - 1);
        t[j] = old[i];
    }
    free(old);
    return 0;
}

static void erase(struct uncached_pass *p, struct live_alloc *e)
{
    size_t mask = p->cap - 1, hole = (size_t)(e - p->t);
    p->t[hole].used = 0;
    p->count--;
    for (size_t i = (hole + 1) & mask; p->t[i].used; i = (i + 1) & mask) {
        size_t home = slot_hash(p, p->t[i].ns, p->t[i].addr);
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (stays)
            continue;
        p->t[hole] = p->t[i];
        p->t[i].used = 0;
        hole = i;
    }
}

static struct cmt_whatif_device *device_of(struct uncached_pass *p, int32_t device)
{
    const struct cmt_trace_model *m = &p->a->model;
    uint64_t total = device < CMT_MODEL_MAX_DEVICES && m->has_device[device] ? m->device[device].total : 0;
    struct cmt_whatif_device *d = cmt_whatif_device(p->w, device, total);
    if (d)
        d->driver_live = p->live[device];
    return d;
}

static void on_sample(struct uncached_pass *p, const struct cmt_event_in *e)
{
    uint64_t free_bytes = e->aux[0], total = e->aux[1];
    if (total < free_bytes)
        return;
    uint64_t used = total - free_bytes, live = p->live[e->device];
    p->w->context_by_ordinal[e->device] = used > live ? used - live : 0;
}

static bool is_tensor(const struct uncached_pass *p, const struct cmt_event_in *e)
{
    return e->kind == CMT_KIND_DEVICE && e->stack < p->n_stacks && p->tensor_stack[e->stack];
}

static void refresh(struct uncached_pass *p, struct cmt_whatif_device *d, uint64_t ts)
{
    d->driver_live = p->live[d->ordinal];
    d->context = p->w->context_by_ordinal[d->ordinal];
    if (d->context > d->context_max)
        d->context_max = d->context;
    cmt_whatif_update_limit(p->w, d, ts);
}

static int on_alloc(struct uncached_pass *p, const struct cmt_event_in *e)
{
    if (e->result != 0) { /* a tensor's cudaMalloc failed: PyTorch raised */
        if (!is_tensor(p, e))
            return 0;
        struct cmt_whatif_device *d = device_of(p, e->device);
        if (!d)
            return 0;
        refresh(p, d, e->ts);
        return cmt_whatif_request(p->w, d, 0, e->size, 0, 0, 0, e->ts, e->tid, e->stack, true);
    }
    if (!cmt_kind_holds_memory(e->kind) || cmt_class_of_allocation(e->kind, e->device) != CMT_CLASS_DEVICE)
        return 0;
    uint8_t ns = (uint8_t)cmt_namespace_of_kind(e->kind);
    struct live_alloc *old = find(p, ns, e->addr);
    if (old) { /* handed out again while live: its release went unrecorded */
        p->live[old->device] -= p->live[old->device] < old->size ? p->live[old->device] : old->size;
        erase(p, old);
    }
    if ((p->count + 1) * 2 > p->cap && grow(p) != 0)
        return -1;
    bool tensor = is_tensor(p, e);
    size_t i = slot_hash(p, ns, e->addr);
    while (p->t[i].used)
        i = (i + 1) & (p->cap - 1);
    p->t[i] = (struct live_alloc){e->addr, e->size, 1, ns, tensor, (int8_t)e->device};
    p->count++;
    p->live[e->device] += e->size;
    if (!tensor)
        return 0;
    struct cmt_whatif_device *d = device_of(p, e->device);
    if (!d)
        return 0;
    d->recorded_reserved += e->size;
    if (d->recorded_reserved > d->recorded_peak)
        d->recorded_peak = d->recorded_reserved;
    refresh(p, d, e->ts);
    return cmt_whatif_request(p->w, d, e->addr, e->size, 0, 0, 0, e->ts, e->tid, e->stack, false);
}

static void on_free(struct uncached_pass *p, const struct cmt_event_in *e)
{
    struct live_alloc *l = find(p, (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(e->api)), e->addr);
    if (!l)
        return;
    int32_t device = l->device;
    uint64_t size = l->size;
    bool tensor = l->tensor;
    p->live[device] -= p->live[device] < size ? p->live[device] : size;
    erase(p, l);
    if (!tensor)
        return;
    struct cmt_whatif_device *d = device_of(p, device);
    if (!d)
        return;
    d->recorded_reserved -= d->recorded_reserved < size ? d->recorded_reserved : size;
    refresh(p, d, e->ts);
    /* with the cache off PyTorch frees at once: the release asked and done */
    cmt_whatif_release(p->w, d, e->addr, e->ts);
    cmt_whatif_complete(p->w, d, e->addr, e->ts);
}

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct uncached_pass *p = ctx;
    if (p->stop_ts && e->ts > p->stop_ts)
        return 1;
    /* a release names no device: its allocation's entry does */
    if (e->type == CMT_REC_FREE && e->result == 0)
        on_free(p, e);
    else if (e->device < 0 || e->device >= CMT_WHATIF_MAX_DEVICES)
        return 0;
    else if (e->type == CMT_REC_SAMPLE)
        on_sample(p, e);
    else if (e->type == CMT_REC_ALLOC && on_alloc(p, e) != 0)
        p->out_of_memory = true;
    return p->out_of_memory || p->w->out_of_memory;
}

/* Stacks of PyTorch's allocations made without its cache. */
static uint8_t *tensor_stacks(const struct cmt_analysis *a, struct cmt_frames *frames, size_t *n, bool *any)
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
        enum cmt_holder cache = cmt_cache_of(frames, s);
        if (cache == CMT_HOLDER_PYTORCH)
            cache_on = true;
        else if (cache == CMT_HOLDER_OTHER && cmt_holder_of(frames, s) == CMT_HOLDER_PYTORCH) {
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

int cmt_whatif_uncached_run(struct cmt_whatif **out, const struct cmt_analysis *a, struct cmt_frames *frames,
                            const struct cmt_ta_settings *settings, size_t n_settings, uint64_t capacity)
{
    *out = NULL;
    if (!frames || (a->blocks && a->blocks->events))
        return 0;
    size_t n_stacks;
    bool any;
    uint8_t *tensor = tensor_stacks(a, frames, &n_stacks, &any);
    if (!tensor)
        return -1;
    if (!any) {
        free(tensor);
        return 0;
    }
    struct uncached_pass *p = calloc(1, sizeof *p);
    struct cmt_whatif *w = calloc(1, sizeof *w);
    int rc = -1;
    if (!p || !w || cmt_whatif_init(w, settings, n_settings, capacity) != 0)
        goto out;
    const struct cmt_trace_model *m = &a->model;
    if (m->has_allocator && m->allocator.settings_known) {
        const char *cuda = cmt_model_string(m, m->allocator.cuda_alloc_conf_id);
        const char *any_conf = cmt_model_string(m, m->allocator.alloc_conf_id);
        cmt_whatif_set_recorded(w, cuda[0] ? cuda : any_conf,
                                cuda[0] ? "PYTORCH_CUDA_ALLOC_CONF" : any_conf[0] ? "PYTORCH_ALLOC_CONF" : NULL, true);
    }
    w->source = CMT_WHATIF_UNCACHED;
    *p = (struct uncached_pass){.a = a, .w = w, .tensor_stack = tensor, .n_stacks = n_stacks};
    if (a->stop_at_ns)
        p->stop_ts = a->info.start_monotonic_ns + a->stop_at_ns;
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
    rc = p->out_of_memory || w->out_of_memory ? -1 : 0;
out:
    if (p)
        free(p->t);
    free(p);
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
