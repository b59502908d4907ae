/* SPDX-License-Identifier: MIT */
/* The tensor pass (tensor_pass.h): the trace read a second time, its block
 * layer replayed again with every tensor's category followed. */
#include "tensor_pass.h"

#include <stdlib.h>
#include <string.h>

#include "addr_table.h"
#include "block_layer.h"
#include "phases.h"
#include "trace_reader.h"

const char *cmt_tensor_category_name(enum cmt_tensor_category c)
{
    static const char *const names[CMT_CAT_COUNT] = {
        "parameters",  "gradients",         "optimizer state",  "activations",  "temporaries",
        "cuBLAS workspaces", "cuDNN workspaces", "NCCL buffers", "the rest", "the cache's reserve"};
    return c < CMT_CAT_COUNT ? names[c] : "the rest";
}

const char *cmt_tensor_category_key(enum cmt_tensor_category c)
{
    static const char *const keys[CMT_CAT_COUNT] = {"parameters", "gradients", "optimizer_state", "activations",
                                                    "temporaries", "cublas",   "cudnn",           "nccl",
                                                    "other",       "reserve"};
    return c < CMT_CAT_COUNT ? keys[c] : "other";
}

const char *cmt_tensor_phase_name(enum cmt_tensor_phase p)
{
    static const char *const names[CMT_TPHASE_COUNT] = {"setup", "forward", "backward", "optimizer"};
    return p < CMT_TPHASE_COUNT ? names[p] : "setup";
}

/* ---- groups ----------------------------------------------------------------------------------- */

enum group_kind { KIND_PROGRAM, KIND_BACKWARD, KIND_OPTIMIZER, KIND_NONE };
#define UNDECIDED 0xff

struct group {
    uint8_t kind;    /* enum group_kind */
    uint8_t outcome; /* enum cmt_tensor_category, UNDECIDED */
    uint64_t bytes, requested; /* its tensors live now */
};

/* A peak being followed: the instant, and the group undecided then. */
struct tracker {
    struct cmt_tensor_instant at;
    uint64_t seq;       /* the device's tensors allocated up to the instant */
    uint32_t group;     /* index + 1 of the group undecided then; 0: none */
    uint64_t p_bytes, p_requested; /* its tensors live then */
    uint64_t f_bytes, f_requested; /* of those, released since */
};

struct dev_state {
    int32_t ordinal;
    const struct cmt_bl_device *bl; /* the replayed block layer's device (its allocated and reserved) */
    uint64_t cat[CMT_CAT_COUNT], cat_req[CMT_CAT_COUNT]; /* decided tensors live */
    uint64_t outside[CMT_CAT_COUNT];                    /* device memory outside the cache live */
    uint64_t outside_total;
    struct group *groups;
    size_t n_groups, cap_groups;
    uint32_t open;            /* index + 1 of the undecided group; 0: none */
    size_t step_first_group;  /* groups made since the current step began start here */
    enum cmt_tensor_phase phase;
    struct tracker peak, phase_peak[CMT_TPHASE_COUNT];
    struct cmt_tensor_cell *cells;
    size_t n_cells; /* buckets begun so far */
    struct cmt_tensor_cell last; /* the figures after the latest change */
    bool has_tensors;
};

/* A device allocation outside the block layer, live. */
struct pass {
    struct cmt_tensor_pass *out;
    const struct cmt_tensor_pass_input *in;
    struct cmt_block_layer bl;
    struct dev_state *devs;
    size_t n_devs;
    /* origins and outside categories asked once per stack */
    uint32_t *origin_tid;
    uint8_t *origin; /* origin + 1; 0 not asked yet */
    uint8_t *outside_cat; /* category + 1 */
    size_t n_stacks;
    /* steps */
    const struct cmt_phase_step *marked;
    size_t n_marked;
    size_t *by_end; /* the marked steps that closed, in order of their ends */
    size_t n_closed, next_end, next_start;
    bool in_step;          /* a step is open */
    bool step_saw_backward; /* recognised steps: a backward pass or optimizer step seen in it */
    uint64_t stride, closed_steps;
    /* growth intervals */
    uint32_t interval; /* current */
    uint64_t *cur_min; /* by stack */
    uint32_t *active;  /* stacks with floors */
    size_t n_active, cap_active;
    /* the chart */
    uint64_t chart_origin, chart_width;
    /* outside allocations */
    struct cmt_addr_table outside; /* device allocations outside the cache (tag: their category) */
    uint64_t stop_ts;
    uint64_t last_ts;
    bool past_work; /* after the program's last tensor allocation: the teardown */
    uint64_t tensors_total; /* every device's tensors live, as this pass counted them */
};

static bool reserve(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*v, n * elem);
    if (!q)
        return false;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *v = q;
    *cap = n;
    return true;
}

static struct dev_state *dev_of(struct pass *p, int32_t ordinal)
{
    for (size_t i = 0; i < p->n_devs; i++)
        if (p->devs[i].ordinal == ordinal)
            return &p->devs[i];
    struct dev_state *n = realloc(p->devs, (p->n_devs + 1) * sizeof *n);
    if (!n) {
        p->out->out_of_memory = true;
        return NULL;
    }
    p->devs = n;
    struct dev_state *d = &p->devs[p->n_devs++];
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    d->cells = calloc(CMT_TENSOR_BUCKETS, sizeof *d->cells);
    if (!d->cells) {
        p->n_devs--;
        p->out->out_of_memory = true;
        return NULL;
    }
    return d;
}

static enum cmt_tensor_origin origin_of(struct pass *p, uint64_t stack, uint32_t tid)
{
    if (stack >= p->n_stacks)
        return p->in->origin(p->in->ctx, stack, tid);
    if (!p->origin[stack] || p->origin_tid[stack] != tid) {
        p->origin[stack] = (uint8_t)(p->in->origin(p->in->ctx, stack, tid) + 1);
        p->origin_tid[stack] = tid;
    }
    return (enum cmt_tensor_origin)(p->origin[stack] - 1);
}

static enum cmt_tensor_category outside_of(struct pass *p, uint64_t stack)
{
    if (stack >= p->n_stacks)
        return p->in->outside(p->in->ctx, stack);
    if (!p->outside_cat[stack])
        p->outside_cat[stack] = (uint8_t)(p->in->outside(p->in->ctx, stack) + 1);
    return (enum cmt_tensor_category)(p->outside_cat[stack] - 1);
}

static enum group_kind kind_of(enum cmt_tensor_origin o)
{
    switch (o) {
    case CMT_ORIGIN_PROGRAM:
        return KIND_PROGRAM;
    case CMT_ORIGIN_BACKWARD:
        return KIND_BACKWARD;
    case CMT_ORIGIN_OPTIMIZER:
        return KIND_OPTIMIZER;
    default:
        return KIND_NONE;
    }
}

/* The category of a tensor whose origin decides it at once. */
static enum cmt_tensor_category direct_category(enum cmt_tensor_origin o)
{
    switch (o) {
    case CMT_ORIGIN_PARAMETER:
        return CMT_CAT_PARAMETERS;
    case CMT_ORIGIN_RECOMPUTE:
        return CMT_CAT_ACTIVATIONS;
    case CMT_ORIGIN_CUBLAS:
        return CMT_CAT_CUBLAS;
    case CMT_ORIGIN_CUDNN:
        return CMT_CAT_CUDNN;
    case CMT_ORIGIN_NCCL:
        return CMT_CAT_NCCL;
    default:
        return CMT_CAT_OTHER;
    }
}

/* What an undecided group's tensors count as until it is decided (the
 * chart's, MemTracker's way). */
static enum cmt_tensor_category provisional(enum group_kind k)
{
    return k == KIND_PROGRAM ? CMT_CAT_ACTIVATIONS : k == KIND_BACKWARD ? CMT_CAT_TEMPORARIES : CMT_CAT_OPTIMIZER_STATE;
}

/* ---- tags: origin in the low byte, group index + 1 above ---------------------------------------- */

static uint64_t tag_of(enum cmt_tensor_origin o, uint32_t group)
{
    return (uint64_t)o | (uint64_t)group << 8;
}

static enum cmt_tensor_origin tag_origin(uint64_t tag)
{
    return (enum cmt_tensor_origin)(tag & 0xff);
}

static uint32_t tag_group(uint64_t tag)
{
    return (uint32_t)(tag >> 8);
}

/* ---- instants and peaks ------------------------------------------------------------------------ */

static uint64_t allocated_of(const struct dev_state *d)
{
    return d->bl ? d->bl->allocated : 0;
}

static uint64_t reserved_of(const struct dev_state *d)
{
    return d->bl ? d->bl->reserved : 0;
}

/* The figures now: decided categories, and with undecided the open
 * group's tensors as their provisional category. */
static void figures_now(const struct dev_state *d, struct cmt_tensor_figures *f, bool undecided)
{
    memcpy(f->bytes, d->cat, sizeof f->bytes);
    memcpy(f->requested, d->cat_req, sizeof f->requested);
    if (undecided && d->open) {
        const struct group *g = &d->groups[d->open - 1];
        f->bytes[provisional(g->kind)] += g->bytes;
        f->requested[provisional(g->kind)] += g->requested;
    }
    uint64_t a = allocated_of(d), r = reserved_of(d);
    f->bytes[CMT_CAT_RESERVE] = r > a ? r - a : 0;
    for (unsigned c = CMT_CAT_CUBLAS; c <= CMT_CAT_OTHER; c++)
        f->bytes[c] += d->outside[c];
}

static void capture(struct dev_state *d, struct tracker *t, uint64_t ts)
{
    memset(t, 0, sizeof *t);
    t->at.seen = true;
    t->at.ts = ts;
    t->at.phase = d->phase;
    t->at.allocated = allocated_of(d);
    t->at.reserved = reserved_of(d);
    t->at.device = reserved_of(d) + d->outside_total;
    figures_now(d, &t->at.cats, false);
    t->seq = d->bl ? d->bl->allocs : 0;
    if (d->open) {
        const struct group *g = &d->groups[d->open - 1];
        t->group = d->open;
        t->p_bytes = g->bytes;
        t->p_requested = g->requested;
    }
}

static void follow_peaks(struct dev_state *d, uint64_t ts)
{
    uint64_t a = allocated_of(d);
    if (a > d->peak.at.allocated || !d->peak.at.seen)
        capture(d, &d->peak, ts);
    struct tracker *t = &d->phase_peak[d->phase];
    if (a > t->at.allocated || !t->at.seen)
        capture(d, t, ts);
}

/* A tracker's undecided group decided: what of it was live at the instant
 * counts as the outcome, what was released since as temporaries. */
static void settle_tracker(struct tracker *t, uint32_t group, enum cmt_tensor_category outcome)
{
    if (t->group != group)
        return;
    t->at.cats.bytes[outcome] += t->p_bytes - t->f_bytes;
    t->at.cats.requested[outcome] += t->p_requested - t->f_requested;
    t->at.cats.bytes[CMT_CAT_TEMPORARIES] += t->f_bytes;
    t->at.cats.requested[CMT_CAT_TEMPORARIES] += t->f_requested;
    t->group = 0;
}

static void decide(struct dev_state *d, uint32_t group, enum cmt_tensor_category outcome)
{
    struct group *g = &d->groups[group - 1];
    g->outcome = (uint8_t)outcome;
    d->cat[outcome] += g->bytes;
    d->cat_req[outcome] += g->requested;
    settle_tracker(&d->peak, group, outcome);
    for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++)
        settle_tracker(&d->phase_peak[k], group, outcome);
    if (d->open == group)
        d->open = 0;
}

/* The open group ends: by the next group's kind (KIND_NONE: its step or the
 * trace ended). */
static void close_open(struct dev_state *d, enum group_kind next)
{
    if (!d->open)
        return;
    const struct group *g = &d->groups[d->open - 1];
    enum cmt_tensor_category outcome = g->kind == KIND_BACKWARD    ? CMT_CAT_GRADIENTS
                                       : g->kind == KIND_OPTIMIZER ? CMT_CAT_OPTIMIZER_STATE
                                       : next == KIND_BACKWARD     ? CMT_CAT_ACTIVATIONS
                                                                   : CMT_CAT_OTHER;
    decide(d, d->open, outcome);
}

/* ---- the chart --------------------------------------------------------------------------------- */

static uint64_t cell_total(const uint64_t *bytes)
{
    uint64_t t = 0;
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++)
        t += bytes[c];
    return t;
}

/* After each change of a device's figures: the bucket of ts keeps its
 * highest instant; buckets without a change hold the figures they began
 * with (the last instant before them). */
static void chart(struct pass *p, struct dev_state *d, uint64_t ts)
{
    if (!p->chart_width || ts < p->chart_origin)
        return;
    size_t b = (size_t)((ts - p->chart_origin) / p->chart_width);
    if (b >= CMT_TENSOR_BUCKETS)
        b = CMT_TENSOR_BUCKETS - 1;
    while (d->n_cells <= b)
        d->cells[d->n_cells++] = d->last;
    struct cmt_tensor_figures f;
    figures_now(d, &f, true);
    d->last.ts = ts;
    memcpy(d->last.bytes, f.bytes, sizeof d->last.bytes);
    if (cell_total(f.bytes) >= cell_total(d->cells[b].bytes))
        d->cells[b] = d->last;
}

/* ---- growth intervals -------------------------------------------------------------------------- */

static void interval_advance(struct pass *p, uint64_t ts)
{
    struct cmt_tensor_pass *o = p->out;
    if (!o->interval_ns || ts < o->interval_origin)
        return;
    uint64_t k = (ts - o->interval_origin) / o->interval_ns;
    if (k >= o->n_intervals)
        k = o->n_intervals - 1;
    while (p->interval < k) {
        for (size_t i = 0; i < p->n_active; i++) {
            uint32_t s = p->active[i];
            struct cmt_tensor_site *site = &o->sites[s];
            site->floors[p->interval] = p->cur_min[s];
            p->cur_min[s] = site->live_bytes;
        }
        p->interval++;
    }
}

/* ---- steps ------------------------------------------------------------------------------------- */

static void sample_step(struct pass *p, uint64_t ts)
{
    struct cmt_tensor_pass *o = p->out;
    uint64_t step = o->steps++;
    if (++p->closed_steps % p->stride)
        return;
    if (o->n_samples == CMT_TENSOR_STEP_SAMPLES) {
        size_t half = CMT_TENSOR_STEP_SAMPLES / 2;
        for (size_t i = 0; i < half; i++) {
            o->sample_step[i] = o->sample_step[2 * i + 1];
            o->sample_ts[i] = o->sample_ts[2 * i + 1];
            o->sample_total[i] = o->sample_total[2 * i + 1];
        }
        for (size_t s = 0; s < o->n_sites; s++)
            if (o->sites[s].step_samples)
                for (size_t i = 0; i < half; i++) {
                    o->sites[s].step_samples[i] = o->sites[s].step_samples[2 * i + 1];
                    o->sites[s].step_counts[i] = o->sites[s].step_counts[2 * i + 1];
                }
        o->n_samples = half;
        p->stride *= 2;
        if (p->closed_steps % p->stride)
            return;
    }
    size_t k = o->n_samples++;
    o->sample_step[k] = step;
    o->sample_ts[k] = ts;
    o->sample_total[k] = p->tensors_total;
    for (size_t i = 0; i < p->n_active; i++) {
        struct cmt_tensor_site *site = &o->sites[p->active[i]];
        if (!site->step_samples) {
            if (!site->live_bytes)
                continue;
            site->step_samples = calloc(CMT_TENSOR_STEP_SAMPLES, sizeof *site->step_samples);
            site->step_counts = calloc(CMT_TENSOR_STEP_SAMPLES, sizeof *site->step_counts);
            if (!site->step_samples || !site->step_counts) {
                o->out_of_memory = true;
                return;
            }
        }
        site->step_samples[k] = site->live_bytes;
        site->step_counts[k] = site->live_count;
    }
}

/* A step ends: each device's open group is decided, its activations still
 * alive are kept across steps from now on. */
static void end_step(struct pass *p, uint64_t ts)
{
    for (size_t i = 0; i < p->n_devs; i++) {
        struct dev_state *d = &p->devs[i];
        close_open(d, KIND_NONE);
        for (size_t g = d->step_first_group; g < d->n_groups; g++) {
            struct group *gr = &d->groups[g];
            if (gr->outcome != CMT_CAT_ACTIVATIONS)
                continue;
            d->cat[CMT_CAT_ACTIVATIONS] -= gr->bytes;
            d->cat_req[CMT_CAT_ACTIVATIONS] -= gr->requested;
            d->cat[CMT_CAT_OTHER] += gr->bytes;
            d->cat_req[CMT_CAT_OTHER] += gr->requested;
            gr->outcome = CMT_CAT_OTHER;
        }
        d->step_first_group = d->n_groups;
        chart(p, d, ts);
    }
    sample_step(p, ts);
    p->in_step = false;
    p->step_saw_backward = false;
}

static int by_end(const void *a, const void *b, void *ctx)
{
    const struct cmt_phase_step *s = ctx;
    uint64_t x = s[*(const size_t *)a].end_ts, y = s[*(const size_t *)b].end_ts;
    return x < y ? -1 : x > y;
}

/* Marked steps that ended by ts end here; one that began by then is open. */
static void marked_steps(struct pass *p, uint64_t ts)
{
    while (p->next_end < p->n_closed && p->marked[p->by_end[p->next_end]].end_ts <= ts)
        end_step(p, p->marked[p->by_end[p->next_end++]].end_ts);
    while (p->next_start < p->n_marked && p->marked[p->next_start].start_ts <= ts) {
        const struct cmt_phase_step *s = &p->marked[p->next_start++];
        if (s->closed && s->end_ts <= ts)
            continue;
        /* what the program's code made before the step (a dataset, the
         * batch of a loader) is no activation of it */
        for (size_t i = 0; !p->in_step && i < p->n_devs; i++)
            close_open(&p->devs[i], KIND_NONE);
        p->in_step = true;
    }
}

/* ---- tensors ----------------------------------------------------------------------------------- */

static struct cmt_tensor_site *site_of(struct pass *p, uint64_t stack)
{
    struct cmt_tensor_pass *o = p->out;
    if (stack >= o->n_sites)
        stack = 0;
    struct cmt_tensor_site *s = &o->sites[stack];
    if (!s->floors) {
        s->floors = calloc(CMT_TENSOR_INTERVALS, sizeof *s->floors);
        if (!s->floors || !reserve((void **)&p->active, &p->cap_active, p->n_active + 1, sizeof *p->active)) {
            free(s->floors);
            s->floors = NULL;
            o->out_of_memory = true;
            return NULL;
        }
        p->active[p->n_active++] = (uint32_t)stack;
        s->first_interval = p->interval;
        p->cur_min[stack] = 0;
    }
    return s;
}

static void on_alloc(struct pass *p, struct dev_state *d, struct cmt_bl_block *b, uint64_t ts)
{
    enum cmt_tensor_origin o = origin_of(p, b->stack, b->tid);
    enum group_kind k = kind_of(o);
    bool marked = p->n_marked > 0;
    /* a recognised step ends when the program's code allocates after a
     * backward pass or an optimizer step */
    if (!marked && (k == KIND_PROGRAM || o == CMT_ORIGIN_PARAMETER) && p->step_saw_backward)
        end_step(p, ts);
    if (!marked && !p->in_step)
        p->in_step = true;
    if (k == KIND_BACKWARD || k == KIND_OPTIMIZER)
        p->step_saw_backward = true;
    uint32_t group = 0;
    if (k != KIND_NONE) {
        if (d->open && d->groups[d->open - 1].kind != k)
            close_open(d, k);
        if (!d->open) {
            if (!reserve((void **)&d->groups, &d->cap_groups, d->n_groups + 1, sizeof *d->groups)) {
                p->out->out_of_memory = true;
                return;
            }
            d->groups[d->n_groups++] = (struct group){.kind = (uint8_t)k, .outcome = UNDECIDED};
            d->open = (uint32_t)d->n_groups;
        }
        group = d->open;
        d->groups[group - 1].bytes += b->size;
        d->groups[group - 1].requested += b->requested;
    } else {
        enum cmt_tensor_category c = direct_category(o);
        d->cat[c] += b->size;
        d->cat_req[c] += b->requested;
    }
    b->tag = tag_of(o, group);
    d->has_tensors = true;
    p->tensors_total += b->size;
    switch (o) {
    case CMT_ORIGIN_PARAMETER:
        d->phase = CMT_TPHASE_SETUP;
        break;
    case CMT_ORIGIN_PROGRAM:
        d->phase = p->in_step ? CMT_TPHASE_FORWARD : CMT_TPHASE_SETUP;
        break;
    case CMT_ORIGIN_BACKWARD:
    case CMT_ORIGIN_RECOMPUTE:
        d->phase = CMT_TPHASE_BACKWARD;
        break;
    case CMT_ORIGIN_OPTIMIZER:
        d->phase = CMT_TPHASE_OPTIMIZER;
        break;
    default:
        break; /* a workspace: the phase that asked for it goes on */
    }
    follow_peaks(d, ts);
    struct cmt_tensor_site *s = site_of(p, b->stack);
    if (!s)
        return;
    if (!s->allocs)
        s->origin = (uint8_t)o;
    s->allocs++;
    s->live_bytes += b->size;
    s->live_requested += b->requested;
    s->live_count++;
}

static void release_from_tracker(struct tracker *t, uint32_t group, const struct cmt_bl_block *b)
{
    if (t->group == group && b->seq <= t->seq) {
        t->f_bytes += b->size;
        t->f_requested += b->requested;
    }
}

static void on_free(struct pass *p, struct dev_state *d, const struct cmt_bl_block *b)
{
    p->tensors_total -= b->size <= p->tensors_total ? b->size : p->tensors_total;
    uint32_t group = tag_group(b->tag);
    if (group && group <= d->n_groups) {
        struct group *g = &d->groups[group - 1];
        g->bytes -= b->size <= g->bytes ? b->size : g->bytes;
        g->requested -= b->requested <= g->requested ? b->requested : g->requested;
        if (g->outcome == UNDECIDED) {
            release_from_tracker(&d->peak, group, b);
            for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++)
                release_from_tracker(&d->phase_peak[k], group, b);
        } else {
            d->cat[g->outcome] -= b->size <= d->cat[g->outcome] ? b->size : d->cat[g->outcome];
            d->cat_req[g->outcome] -= b->requested <= d->cat_req[g->outcome] ? b->requested : d->cat_req[g->outcome];
        }
    } else {
        enum cmt_tensor_category c = direct_category(tag_origin(b->tag));
        d->cat[c] -= b->size <= d->cat[c] ? b->size : d->cat[c];
        d->cat_req[c] -= b->requested <= d->cat_req[c] ? b->requested : d->cat_req[c];
    }
    struct cmt_tensor_site *s = &p->out->sites[b->stack < p->out->n_sites ? b->stack : 0];
    if (!s->floors)
        return;
    s->frees++;
    s->live_bytes -= b->size <= s->live_bytes ? b->size : s->live_bytes;
    s->live_requested -= b->requested <= s->live_requested ? b->requested : s->live_requested;
    s->live_count -= s->live_count ? 1 : 0;
    uint64_t stack = b->stack < p->out->n_sites ? b->stack : 0;
    if (!p->past_work && s->live_bytes < p->cur_min[stack])
        p->cur_min[stack] = s->live_bytes;
}

static void on_tensor(void *ctx, const struct cmt_bl_device *bd, struct cmt_bl_block *b, bool allocated, uint64_t ts)
{
    struct pass *p = ctx;
    struct dev_state *d = dev_of(p, bd->ordinal);
    if (!d)
        return;
    d->bl = bd;
    if (allocated)
        on_alloc(p, d, b, ts);
    else
        on_free(p, d, b);
}

/* ---- device memory outside the cache ------------------------------------------------------------ */

static void outside_erase(struct pass *p, struct cmt_addr_entry *a)
{
    struct dev_state *d = dev_of(p, a->device);
    if (d) {
        d->outside[a->tag] -= a->size <= d->outside[a->tag] ? a->size : d->outside[a->tag];
        d->outside_total -= a->size <= d->outside_total ? a->size : d->outside_total;
    }
    cmt_addr_table_erase(&p->outside, a);
}

static void on_driver(struct pass *p, const struct cmt_event_in *e)
{
    if (e->result != 0 || e->addr == 0)
        return;
    if (e->type == CMT_REC_FREE) {
        struct cmt_addr_entry *a =
            cmt_addr_table_find(&p->outside, (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(e->api)), e->addr);
        if (a) {
            int32_t dev = a->device;
            outside_erase(p, a);
            struct dev_state *d = dev_of(p, dev);
            if (d)
                chart(p, d, e->ts);
        }
        return;
    }
    if (e->type != CMT_REC_ALLOC || !cmt_kind_holds_memory(e->kind) || e->device < 0 ||
        cmt_class_of_allocation(e->kind, e->device) != CMT_CLASS_DEVICE)
        return;
    uint8_t ns = (uint8_t)cmt_namespace_of_kind(e->kind);
    struct cmt_addr_entry *old = cmt_addr_table_find(&p->outside, ns, e->addr);
    if (old)
        outside_erase(p, old); /* its release went unrecorded */
    enum cmt_tensor_category c = outside_of(p, e->stack);
    if (c == CMT_CAT_RESERVE)
        return;
    struct dev_state *d = dev_of(p, e->device);
    if (!d)
        return;
    if (!cmt_addr_table_put(&p->outside, ns, e->addr, e->size, e->device, (uint8_t)c)) {
        p->out->out_of_memory = true;
        return;
    }
    d->outside[c] += e->size;
    d->outside_total += e->size;
    chart(p, d, e->ts);
}

/* ---- the reading ------------------------------------------------------------------------------- */

static void work_ended(struct pass *p);

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct pass *p = ctx;
    if (p->stop_ts && e->ts > p->stop_ts)
        return 1;
    if (p->out->out_of_memory)
        return 1;
    p->last_ts = e->ts;
    if (!p->past_work && p->out->work_end_ts && e->ts > p->out->work_end_ts)
        work_ended(p);
    if (!p->past_work)
        interval_advance(p, e->ts);
    if (p->n_marked)
        marked_steps(p, e->ts);
    if (e->type == CMT_REC_BLOCK) {
        p->bl.event_tid = e->tid;
        cmt_block_layer_event(&p->bl, e->api, e->device, e->ts, e->addr, e->size, e->stack, e->aux);
        struct dev_state *d = dev_of(p, e->device);
        if (d) {
            for (size_t i = 0; i < p->bl.n_devices; i++)
                if (p->bl.devices[i].ordinal == e->device)
                    d->bl = &p->bl.devices[i];
            chart(p, d, e->ts);
        }
        if (p->bl.out_of_memory)
            p->out->out_of_memory = true;
        return 0;
    }
    if (e->type == CMT_REC_ALLOC || e->type == CMT_REC_FREE)
        on_driver(p, e);
    return 0;
}

/* The first reading's span of block events: the intervals and the chart's. */
static void spans(struct pass *p, const struct cmt_block_layer *first)
{
    uint64_t lo = UINT64_MAX, hi = 0, work = 0;
    for (size_t i = 0; i < first->n_devices; i++) {
        const struct cmt_bl_device *d = &first->devices[i];
        if (!d->n_points)
            continue;
        if (d->points[0].ts < lo)
            lo = d->points[0].ts;
        if (d->points[d->n_points - 1].ts > hi)
            hi = d->points[d->n_points - 1].ts;
        if (d->last_alloc_ts > work)
            work = d->last_alloc_ts;
    }
    if (lo > hi)
        return;
    struct cmt_tensor_pass *o = p->out;
    o->work_end_ts = work;
    uint64_t span = (work > lo ? work : lo) - lo + 1;
    o->interval_origin = lo;
    o->interval_ns = span / CMT_TENSOR_INTERVALS + (span % CMT_TENSOR_INTERVALS != 0);
    o->n_intervals = CMT_TENSOR_INTERVALS;
    span = hi - lo + 1;
    p->chart_origin = lo;
    p->chart_width = span / CMT_TENSOR_BUCKETS + (span % CMT_TENSOR_BUCKETS != 0);
}

/* The program's work ends with its last tensor allocation: each call site's
 * tensors then, and its floors, stay as they were through the teardown. */
static void work_ended(struct pass *p)
{
    struct cmt_tensor_pass *o = p->out;
    p->past_work = true;
    for (size_t i = 0; i < p->n_active; i++) {
        uint32_t s = p->active[i];
        struct cmt_tensor_site *site = &o->sites[s];
        site->work_bytes = site->live_bytes;
        site->work_count = site->live_count;
        for (uint32_t k = p->interval; k < o->n_intervals; k++)
            site->floors[k] = k == p->interval ? p->cur_min[s] : site->live_bytes;
    }
}

static int setup(struct pass *p, const struct cmt_analysis *a)
{
    struct cmt_tensor_pass *o = p->out;
    p->n_stacks = (size_t)a->model.n_stacks + 1;
    o->n_sites = p->n_stacks;
    o->sites = calloc(o->n_sites, sizeof *o->sites);
    p->origin = calloc(p->n_stacks, 1);
    p->origin_tid = calloc(p->n_stacks, sizeof *p->origin_tid);
    p->outside_cat = calloc(p->n_stacks, 1);
    p->cur_min = calloc(p->n_stacks, sizeof *p->cur_min);
    if (!o->sites || !p->origin || !p->origin_tid || !p->outside_cat || !p->cur_min)
        return -1;
    p->stride = 1;
    size_t n = 0;
    const struct cmt_phase_step *s = a->phases ? cmt_phases_steps(a->phases, &n) : NULL;
    if (n) {
        p->by_end = malloc(n * sizeof *p->by_end);
        if (!p->by_end)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (s[i].closed)
                p->by_end[p->n_closed++] = i;
        qsort_r(p->by_end, p->n_closed, sizeof *p->by_end, by_end, (void *)s);
        p->marked = s;
        p->n_marked = n;
        o->step_source = CMT_STEPS_MARKED;
    }
    spans(p, a->blocks);
    if (a->stop_at_ns)
        p->stop_ts = a->info.start_monotonic_ns + a->stop_at_ns;
    return 0;
}

/* After the last event: steps and groups still open end, the last
 * interval's floors are taken, the devices' figures are copied out. */
static int finish(struct pass *p)
{
    struct cmt_tensor_pass *o = p->out;
    if (p->n_marked)
        marked_steps(p, p->stop_ts ? p->stop_ts : UINT64_MAX);
    else if (p->in_step && p->step_saw_backward)
        o->steps++; /* the last recognised step: counted, not sampled (the trace's end is no step's end: a
                       * script that returns from main() has released its tensors by then) */
    if (o->step_source == CMT_STEPS_NONE && o->steps)
        o->step_source = CMT_STEPS_RECOGNISED;
    if (!p->past_work)
        work_ended(p);
    size_t n = 0;
    for (size_t i = 0; i < p->n_devs; i++)
        n += p->devs[i].has_tensors;
    o->devices = calloc(n ? n : 1, sizeof *o->devices);
    if (!o->devices)
        return -1;
    for (size_t i = 0; i < p->n_devs; i++) {
        struct dev_state *d = &p->devs[i];
        close_open(d, KIND_NONE);
        if (!d->has_tensors)
            continue;
        struct cmt_tensor_device *t = &o->devices[o->n_devices++];
        t->ordinal = d->ordinal;
        t->peak = d->peak.at;
        for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++)
            t->phase_peak[k] = d->phase_peak[k].at;
        memcpy(t->at_exit.bytes, d->cat, sizeof t->at_exit.bytes);
        memcpy(t->at_exit.requested, d->cat_req, sizeof t->at_exit.requested);
        t->exit_ts = p->last_ts;
        t->origin_ts = p->chart_origin;
        t->bucket_ns = p->chart_width;
        t->n_cells = d->n_cells;
        t->cells = d->cells; /* handed over */
        d->cells = NULL;
    }
    return o->out_of_memory ? -1 : 0;
}

static void pass_free(struct pass *p)
{
    for (size_t i = 0; i < p->n_devs; i++) {
        free(p->devs[i].groups);
        free(p->devs[i].cells);
    }
    free(p->devs);
    free(p->origin);
    free(p->origin_tid);
    free(p->outside_cat);
    free(p->by_end);
    free(p->cur_min);
    free(p->active);
    cmt_addr_table_free(&p->outside);
    cmt_block_layer_free(&p->bl);
}

int cmt_tensor_pass_run(struct cmt_tensor_pass *out, const struct cmt_tensor_pass_input *in)
{
    memset(out, 0, sizeof *out);
    const struct cmt_analysis *a = in->analysis;
    if (!a->blocks || !a->blocks->seen)
        return 0;
    struct pass p = {.out = out, .in = in};
    cmt_block_layer_init(&p.bl);
    cmt_block_layer_listen(&p.bl, &(struct cmt_bl_listener){.ctx = &p, .on_tensor = on_tensor});
    int rc = setup(&p, a);
    struct cmt_reader *reader = NULL;
    char err[CMT_READER_MESSAGE_MAX];
    if (rc == 0 && (a->data ? cmt_reader_open_memory(a->data, a->data_size, &reader, err, sizeof err)
                            : cmt_reader_open(a->path, &reader, err, sizeof err)) == 0) {
        struct cmt_reader_callbacks cb = {.on_event = on_event};
        /* Damage stops this reading where it stopped the first. */
        cmt_reader_run(reader, &cb, &p);
        cmt_reader_close(reader);
        cmt_block_layer_finish(&p.bl);
        out->ran = true;
        rc = finish(&p);
    }
    pass_free(&p);
    if (out->out_of_memory)
        rc = -1;
    return rc;
}

void cmt_tensor_pass_free(struct cmt_tensor_pass *p)
{
    for (size_t i = 0; i < p->n_sites; i++) {
        free(p->sites[i].step_samples);
        free(p->sites[i].step_counts);
        free(p->sites[i].floors);
    }
    free(p->sites);
    for (size_t i = 0; i < p->n_devices; i++)
        free(p->devices[i].cells);
    free(p->devices);
    memset(p, 0, sizeof *p);
}
