/* SPDX-License-Identifier: MIT */
#include "uncached_pass.h"

#include <stdlib.h>
#include <string.h>

#include "replay.h"

void cmt_uncached_pass_init(struct cmt_uncached_pass *p, const struct cmt_trace_model *model, struct cmt_whatif *w,
                            cmt_tensor_fn is_tensor, void *ctx, uint64_t stop_ts)
{
    memset(p, 0, sizeof *p);
    cmt_addr_table_init(&p->allocs);
    p->model = model;
    p->w = w;
    p->is_tensor = is_tensor;
    p->tensor_ctx = ctx;
    p->stop_ts = stop_ts;
    w->source = CMT_WHATIF_UNCACHED;
}

void cmt_uncached_pass_free(struct cmt_uncached_pass *p)
{
    cmt_addr_table_free(&p->allocs);
}

bool cmt_uncached_pass_failed(const struct cmt_uncached_pass *p)
{
    return p->out_of_memory || p->w->out_of_memory;
}

/* The settings PyTorch recorded, before the engine makes its first models. */
static void take_settings(struct cmt_uncached_pass *p)
{
    if (p->settings_taken)
        return;
    p->settings_taken = true;
    const struct cmt_trace_model *m = p->model;
    if (!m->has_allocator || !m->allocator.settings_known)
        return;
    p->settings_known = true;
    p->conf_ids[0] = m->allocator.cuda_alloc_conf_id;
    p->conf_ids[1] = m->allocator.alloc_conf_id;
    const char *cuda = cmt_model_string(m, m->allocator.cuda_alloc_conf_id);
    const char *any_conf = cmt_model_string(m, m->allocator.alloc_conf_id);
    cmt_whatif_set_recorded(p->w, cuda[0] ? cuda : any_conf,
                            cuda[0] ? "PYTORCH_CUDA_ALLOC_CONF" : any_conf[0] ? "PYTORCH_ALLOC_CONF" : NULL, true);
}

void cmt_uncached_pass_finish(struct cmt_uncached_pass *p)
{
    take_settings(p);
}

bool cmt_uncached_pass_model_same(const struct cmt_uncached_pass *p)
{
    const struct cmt_trace_model *m = p->model;
    bool known = m->has_allocator && m->allocator.settings_known;
    if (known != p->settings_known ||
        (known && (p->conf_ids[0] != m->allocator.cuda_alloc_conf_id || p->conf_ids[1] != m->allocator.alloc_conf_id)))
        return false;
    for (int d = 0; d < CMT_WHATIF_MAX_DEVICES; d++) {
        if (!p->device_taken[d])
            continue;
        uint64_t total = d < CMT_MODEL_MAX_DEVICES && m->has_device[d] ? m->device[d].total : 0;
        if (total != p->total_taken[d])
            return false;
    }
    return true;
}

static struct cmt_whatif_device *device_of(struct cmt_uncached_pass *p, int32_t device)
{
    const struct cmt_trace_model *m = p->model;
    uint64_t total = device < CMT_MODEL_MAX_DEVICES && m->has_device[device] ? m->device[device].total : 0;
    take_settings(p);
    if (!p->device_taken[device]) {
        p->device_taken[device] = true;
        p->total_taken[device] = total;
    }
    struct cmt_whatif_device *d = cmt_whatif_device(p->w, device, total);
    if (d)
        d->driver_live = p->live[device];
    return d;
}

static void on_sample(struct cmt_uncached_pass *p, const struct cmt_event_in *e)
{
    uint64_t free_bytes = e->aux[0], total = e->aux[1];
    if (total < free_bytes)
        return;
    uint64_t used = total - free_bytes, live = p->live[e->device];
    p->w->context_by_ordinal[e->device] = used > live ? used - live : 0;
}

static void refresh(struct cmt_uncached_pass *p, struct cmt_whatif_device *d, uint64_t ts)
{
    d->driver_live = p->live[d->ordinal];
    d->context = p->w->context_by_ordinal[d->ordinal];
    if (d->context > d->context_max)
        d->context_max = d->context;
    cmt_whatif_update_limit(p->w, d, ts);
}

static int on_alloc(struct cmt_uncached_pass *p, const struct cmt_event_in *e)
{
    if (e->result != 0) { /* a tensor's cudaMalloc failed: PyTorch raised */
        if (!p->is_tensor(p->tensor_ctx, e))
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
    struct cmt_addr_entry *old = cmt_addr_table_find(&p->allocs, ns, e->addr);
    if (old) { /* handed out again while live: its release went unrecorded */
        p->live[old->device] -= p->live[old->device] < old->size ? p->live[old->device] : old->size;
        cmt_addr_table_erase(&p->allocs, old);
    }
    bool tensor = p->is_tensor(p->tensor_ctx, e);
    if (!cmt_addr_table_put(&p->allocs, ns, e->addr, e->size, e->device, tensor))
        return -1;
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

static void on_free(struct cmt_uncached_pass *p, const struct cmt_event_in *e)
{
    struct cmt_addr_entry *l =
        cmt_addr_table_find(&p->allocs, (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(e->api)), e->addr);
    if (!l)
        return;
    int32_t device = l->device;
    uint64_t size = l->size;
    bool tensor = l->tag;
    p->live[device] -= p->live[device] < size ? p->live[device] : size;
    cmt_addr_table_erase(&p->allocs, l);
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

int cmt_uncached_pass_event(struct cmt_uncached_pass *p, const struct cmt_event_in *e)
{
    if (p->stopped)
        return 1;
    if (p->stop_ts && e->ts > p->stop_ts) {
        p->stopped = true;
        return 1;
    }
    /* a release names no device: its allocation's entry does */
    if (e->type == CMT_REC_FREE && e->result == 0)
        on_free(p, e);
    else if (e->device < 0 || e->device >= CMT_WHATIF_MAX_DEVICES)
        return 0;
    else if (e->type == CMT_REC_SAMPLE)
        on_sample(p, e);
    else if (e->type == CMT_REC_ALLOC && on_alloc(p, e) != 0)
        p->out_of_memory = true;
    if (p->out_of_memory || p->w->out_of_memory)
        p->stopped = true;
    return p->stopped;
}
