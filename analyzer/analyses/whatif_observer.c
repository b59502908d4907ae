/* SPDX-License-Identifier: MIT */
/* The what-if engine following the replay (whatif.h): PyTorch's BLOCK
 * records become requests and releases; the accounts and device samples
 * say what the device held outside the cache; releases of segments the
 * program asked for become empty_cache() calls; an out-of-memory failure
 * no device shortage explains reveals a memory fraction. */
#include <string.h>

#include "ta_rounding.h"
#include "trace_model.h"
#include "whatif.h"

static bool in_range(int32_t device)
{
    return device >= 0 && device < CMT_WHATIF_MAX_DEVICES;
}

/* Reader's side: the recorded settings and the device's size, once each. */
static void on_block_read(void *ctx, const struct cmt_trace_model *m, const struct cmt_event_in *e)
{
    struct cmt_whatif *w = ctx;
    if (!w->staged_settings && m->has_allocator) {
        w->staged_settings = true;
        const struct cmt_allocator_in *a = &m->allocator;
        /* PyTorch 2.11 reads PYTORCH_CUDA_ALLOC_CONF first, PYTORCH_ALLOC_CONF
         * when that is unset (c10/core/AllocatorConfig.cpp) */
        const char *cuda = a->cuda_alloc_conf_id ? cmt_model_string(m, a->cuda_alloc_conf_id) : "";
        const char *any = a->alloc_conf_id ? cmt_model_string(m, a->alloc_conf_id) : "";
        if (a->settings_known)
            cmt_whatif_set_recorded(w, cuda[0] ? cuda : any,
                                    cuda[0] ? "PYTORCH_CUDA_ALLOC_CONF" : any[0] ? "PYTORCH_ALLOC_CONF" : NULL, true);
    }
    if (in_range(e->device) && !w->staged_device[e->device]) {
        w->staged_device[e->device] = true;
        if (e->device < CMT_MODEL_MAX_DEVICES && m->has_device[e->device])
            w->staged_total[e->device] = m->device[e->device].total;
    }
}

static uint64_t device_live(const struct cmt_replay *r, int32_t device)
{
    const struct cmt_account *a = r->accounts[device + 1][CMT_CLASS_DEVICE];
    return a ? a->live : 0;
}

static void on_sample(struct cmt_whatif *w, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    uint64_t free_bytes = rec->aux[0], total = rec->aux[1];
    if (!in_range(rec->device) || total < free_bytes)
        return;
    uint64_t used = total - free_bytes, live = device_live(r, rec->device);
    w->total_by_ordinal[rec->device] = total;
    /* the context, other processes: used memory no allocation of ours explains */
    w->context_by_ordinal[rec->device] = used > live ? used - live : 0;
}

static bool releases_segment(uint8_t api)
{
    return api == CMT_API_TORCH_SEGMENT_FREE || api == CMT_API_TORCH_SEGMENT_UNMAP;
}

/* A run of segment releases ends at the next BLOCK record. PyTorch gives
 * segments back on its own only inside a request: after cudaMalloc (or
 * cuMemCreate) failed, or, under a memory fraction, before the request's
 * new segment or its out-of-memory error. Any other run was the program's
 * empty_cache() (or a call that frees as it does). */
static void end_burst(struct cmt_whatif *w, const struct cmt_replay_record *next, uint64_t ts)
{
    if (!w->burst_open)
        return;
    w->burst_open = false;
    if (w->burst_failed)
        return;
    const struct cmt_ta_settings *rec = &w->settings[0];
    bool fraction = rec->fraction_set || rec->garbage_collection_threshold > 0;
    for (size_t i = 0; i < w->n_devices && !fraction; i++)
        fraction = w->devices[i].fraction_inferred;
    bool same = next && next->device == w->burst_device && next->tid == w->burst_tid;
    if (same && next->api == CMT_API_TORCH_OOM)
        return; /* the request failed after all: its own releases */
    if (same && fraction && (next->api == CMT_API_TORCH_SEGMENT_ALLOC || next->api == CMT_API_TORCH_SEGMENT_MAP))
        return; /* the fraction's retry, or the garbage collection */
    cmt_whatif_empty_cache(w, ts);
}

/* A request the recorded run failed with no failed allocation before it:
 * the memory fraction refused it, so the fraction's limit lies below what
 * was reserved then plus the segment it wanted. */
static void infer_fraction(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t size, bool failed_before)
{
    if (w->settings[0].fraction_set || failed_before)
        return;
    const struct cmt_ta_settings *s = &w->settings[0];
    uint64_t want = cmt_ta_allocation_size(s, cmt_ta_round_size(s, size));
    uint64_t allowed = d->recorded_reserved + want - 1;
    if (!d->fraction_inferred || allowed < d->allowed)
        cmt_whatif_set_allowed(w, d, allowed);
}

static void first_record(struct cmt_whatif *w, const struct cmt_replay_record *rec)
{
    if (w->n_devices || w->recorded_known)
        return;
    /* a trace before format 2.4: the settings are not recorded, but the
     * first segment says whether they were expandable */
    if (rec->api == CMT_API_TORCH_SEGMENT_MAP || rec->api == CMT_API_TORCH_SEGMENT_ALLOC)
        cmt_whatif_infer_expandable(w, rec->api == CMT_API_TORCH_SEGMENT_MAP);
}

static int on_block(struct cmt_whatif *w, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    if (!in_range(rec->device))
        return 0;
    w->source = CMT_WHATIF_BLOCKS;
    if (releases_segment(rec->api)) {
        if (!w->burst_open) {
            w->burst_open = true;
            w->burst_failed = w->failed_by_ordinal[rec->device];
            w->burst_device = rec->device;
            w->burst_tid = rec->tid;
        }
    } else {
        end_burst(w, rec, rec->ts);
    }
    first_record(w, rec);
    /* the device's size: its DEVICE record, else what its samples said */
    uint64_t total = w->staged_total[rec->device] ? w->staged_total[rec->device] : w->total_by_ordinal[rec->device];
    struct cmt_whatif_device *d = cmt_whatif_device(w, rec->device, total);
    bool failed_before = w->failed_by_ordinal[rec->device];
    w->failed_by_ordinal[rec->device] = false;
    if (!d)
        return w->out_of_memory ? -1 : 0;
    if (!d->total && total) { /* a sample came after the device's first request */
        d->total = total;
        if (!d->capacity)
            d->capacity = total;
    }
    d->driver_live = device_live(r, rec->device);
    d->context = w->context_by_ordinal[rec->device];
    if (d->context > d->context_max)
        d->context_max = d->context;
    uint64_t stream = rec->aux[CMT_BLOCK_RECORD_STREAM];
    uint64_t pool0 = rec->aux[CMT_BLOCK_AUX_POOL0], pool1 = rec->aux[CMT_BLOCK_AUX_POOL1];
    switch (rec->api) {
    case CMT_API_TORCH_SEGMENT_ALLOC:
        for (size_t i = 0; i < w->n_settings; i++)
            if (d->model[i])
                cmt_ta_address_hint(d->model[i], rec->addr, rec->size);
        /* fall through */
    case CMT_API_TORCH_SEGMENT_MAP:
        d->recorded_reserved += rec->size;
        if (d->recorded_reserved > d->recorded_peak)
            d->recorded_peak = d->recorded_reserved;
        break;
    case CMT_API_TORCH_SEGMENT_FREE:
    case CMT_API_TORCH_SEGMENT_UNMAP:
        d->recorded_reserved -= d->recorded_reserved < rec->size ? d->recorded_reserved : rec->size;
        break;
    default:
        break;
    }
    switch (rec->api) {
    case CMT_API_TORCH_ALLOC:
        /* the room is taken at requests only: between a segment's release
         * record and its cudaFree the two layers disagree for a moment */
        cmt_whatif_update_limit(w, d, rec->ts);
        return cmt_whatif_request(w, d, rec->addr, rec->size, stream, pool0, pool1, rec->ts, rec->tid, rec->stack,
                                  false);
    case CMT_API_TORCH_FREE_REQUESTED:
        cmt_whatif_release(w, d, rec->addr, rec->ts);
        break;
    case CMT_API_TORCH_FREE_COMPLETED:
        cmt_whatif_complete(w, d, rec->addr, rec->ts); /* a release too, if none came before */
        break;
    case CMT_API_TORCH_OOM:
        infer_fraction(w, d, rec->size, failed_before);
        cmt_whatif_update_limit(w, d, rec->ts);
        return cmt_whatif_request(w, d, 0, rec->size, stream, pool0, pool1, rec->ts, rec->tid, rec->stack, true);
    default:
        break;
    }
    return w->out_of_memory ? -1 : 0;
}

static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    struct cmt_whatif *w = ctx;
    if (rec->type == CMT_REC_SAMPLE)
        on_sample(w, r, rec);
    else if (rec->type == CMT_REC_BLOCK)
        return on_block(w, r, rec);
    return 0;
}

static int on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    (void)r;
    struct cmt_whatif *w = ctx;
    if (in_range(e->device))
        w->failed_by_ordinal[e->device] = true;
    return 0;
}

static int on_finish(void *ctx, const struct cmt_replay *r, uint64_t end_ts)
{
    (void)r;
    struct cmt_whatif *w = ctx;
    end_burst(w, NULL, end_ts);
    return w->out_of_memory ? -1 : 0;
}

int cmt_whatif_attach(struct cmt_whatif *w, struct cmt_replay *r, struct cmt_phases *phases)
{
    w->phases = phases;
    w->observer = (struct cmt_replay_observer){.ctx = w,
                                               .on_failure = on_failure,
                                               .on_record = on_record,
                                               .on_block_read = on_block_read,
                                               .on_finish = on_finish};
    return cmt_replay_add_observer(r, &w->observer);
}
