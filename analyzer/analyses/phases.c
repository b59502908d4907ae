/* SPDX-License-Identifier: MIT */
/* The phases and steps observer (phases.h). */
#include "phases.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"
#include "trace_model.h"
#include "xla_names.h"

/* A range open now: on a thread's stack, or process-wide. */
struct open_range {
    uint64_t seq;      /* opening order, process-wide, from 1 */
    uint64_t range_id; /* start/end ranges: the id their end names */
    uint32_t node;
    uint32_t domain;
    uint32_t step;     /* index + 1 of the step it is (0: not one) */
    uint32_t in_step;  /* index + 1 of the step it is in (its own when a step) */
    bool compiler;     /* XLA's compiler: a compile range or one inside it */
    bool folded;       /* a range inside a compile range: counted as that one (its node) */
    uint64_t start_ts;
    uint64_t peak, peak_ts;
    uint64_t alloc_bytes, alloc_count;
    uint64_t net_bytes, net_count; /* allocated while open, not released since */
};

struct range_stack {
    struct open_range *v;
    size_t n, cap;
};

struct thread_slot {
    uint32_t tid;
    bool active; /* listed in active_slots */
    struct range_stack stack;
};

/* What an allocation made while ranges were open carries: the stack it was
 * counted in and the opening order then (every range opened up to then and
 * still open now contains it). */
struct alloc_tag {
    uint64_t addr;
    uint64_t seq;
    uint32_t slot;      /* thread slot + 1; 0: none (process-wide ranges only) */
    uint32_t step_slot; /* slot + 1 of another thread's step it counts in too; 0: none */
    uint8_t ns;
    uint8_t used;
};

struct node_key_slot {
    uint32_t node_plus_one;
};

struct cmt_phases {
    struct cmt_replay_observer observer;
    struct cmt_replay *replay; /* attached to (cmt_phases_attach) */
    /* Following the allocations (its on_change called): from the first
     * mark on. Until then nothing is open, and what the allocations would
     * have told (each device's live bytes and peak, at no phase) is the
     * replay's accounts' (wake_up). */
    bool awake;
    bool any;
    uint64_t marks, unmatched;
    uint64_t seq;
    /* device-resident bytes live: in total, per device, and where each
     * device's peak was */
    uint64_t live_total;
    uint64_t live[CMT_MAX_DEVICES + 1], peak[CMT_MAX_DEVICES + 1];
    struct cmt_phase_where peak_where[CMT_MAX_DEVICES + 1];
    bool peak_seen[CMT_MAX_DEVICES + 1];
    struct cmt_phase_node *nodes;
    size_t n_nodes, nodes_cap;
    uint32_t *node_table; /* node index + 1, open addressing by (parent, name, domain, global) */
    size_t node_table_cap;
    struct thread_slot *slots;
    size_t n_slots, slots_cap;
    uint32_t *active_slots;
    size_t n_active, active_cap;
    struct range_stack global; /* start/end ranges and the current cumemtrace_step step */
    uint32_t call_step;        /* step index + 1 of the open cumemtrace_step step */
    struct cmt_phase_step *steps;
    size_t n_steps, steps_cap;
    struct alloc_tag *tags;
    size_t tags_cap, n_tags;
    uint64_t hash_mult;
    struct cmt_phase_where failures[CMT_MAX_FAILURES_KEPT];
    bool failure_seen[CMT_MAX_FAILURES_KEPT];
    /* per-step samples (phases.h) */
    uint64_t closed_steps, stride;
    size_t n_samples;
    uint32_t sample_steps[CMT_STEP_SAMPLES];
    uint64_t sample_total[CMT_STEP_SAMPLES];
    uint64_t **site_samples; /* by stack id */
    size_t site_samples_cap;
    bool out_of_memory;
};

/* ---- the step rule, XLA's compiler ------------------------------------------------- */

/* aux3 of a mark (cmt_phases_classify): bit 63 a step, its number below;
 * bit 62 a range of XLA's compiler. */
#define MARK_STEP (1ull << 63)
#define MARK_COMPILER (1ull << 62)
#define MARK_NUMBER (MARK_COMPILER - 1)



bool cmt_phase_step_number(const char *name, size_t len, uint64_t *n)
{
    static const char *const words[] = {"iteration", "step", "iter", "batch"};
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && isalpha((unsigned char)name[i - 1]))
            continue;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
            size_t wl = strlen(words[w]);
            if (len - i < wl || strncasecmp(name + i, words[w], wl) != 0)
                continue;
            size_t j = i + wl;
            while (j < len && strchr(" _-:#=.", name[j]) && name[j])
                j++;
            if (j >= len || !isdigit((unsigned char)name[j]))
                continue;
            uint64_t v = 0;
            for (; j < len && isdigit((unsigned char)name[j]); j++)
                v = v * 10 + (uint64_t)(name[j] - '0');
            *n = v;
            return true;
        }
    }
    return false;
}

void cmt_phases_classify(const struct cmt_trace_model *m, struct cmt_event_in *e)
{
    e->aux[3] = 0;
    uint32_t id = (uint32_t)e->aux[CMT_MARK_AUX_NAME];
    if (!id || (e->api != CMT_API_MARK_PUSH && e->api != CMT_API_MARK_RANGE_START))
        return;
    const char *name = cmt_model_string(m, id);
    size_t len = strlen(name);
    uint64_t n;
    if (cmt_xla_compile_range_name(name, len))
        e->aux[3] = MARK_COMPILER;
    else if (cmt_phase_step_number(name, len, &n))
        e->aux[3] = MARK_STEP | (n & MARK_NUMBER);
}

/* ---- growing arrays ------------------------------------------------------------------ */

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *n = realloc(*v, c * elem);
    if (!n)
        return -1;
    memset((char *)n + *cap * elem, 0, (c - *cap) * elem);
    *v = n;
    *cap = c;
    return 0;
}

static struct open_range *stack_push(struct range_stack *s)
{
    if (grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) != 0)
        return NULL;
    struct open_range *o = &s->v[s->n++];
    memset(o, 0, sizeof *o);
    return o;
}

/* ---- nodes ---------------------------------------------------------------------------- */

static uint64_t node_hash(const struct cmt_phases *p, uint32_t parent, uint32_t name, uint32_t domain, bool global)
{
    uint64_t k = ((uint64_t)parent << 32 | name) ^ ((uint64_t)domain * 0x9e3779b97f4a7c15ull) ^ (global ? 1 : 0);
    return (k * p->hash_mult) ^ (k >> 29);
}

static int node_table_rebuild(struct cmt_phases *p, size_t cap)
{
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct cmt_phase_node *n = &p->nodes[i];
        size_t j = node_hash(p, n->parent, n->name, n->domain, n->global) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(p->node_table);
    p->node_table = t;
    p->node_table_cap = cap;
    return 0;
}

static uint32_t node_get(struct cmt_phases *p, uint32_t parent, uint32_t name, uint32_t domain, bool global)
{
    if ((p->n_nodes + 1) * 2 > p->node_table_cap &&
        node_table_rebuild(p, p->node_table_cap ? p->node_table_cap * 2 : 64) != 0)
        return CMT_PHASE_NONE;
    size_t mask = p->node_table_cap - 1;
    size_t j = node_hash(p, parent, name, domain, global) & mask;
    for (; p->node_table[j]; j = (j + 1) & mask) {
        const struct cmt_phase_node *n = &p->nodes[p->node_table[j] - 1];
        if (n->parent == parent && n->name == name && n->domain == domain && n->global == global)
            return p->node_table[j] - 1;
    }
    if (p->n_nodes >= CMT_PHASE_NONE - 1 || grow((void **)&p->nodes, &p->nodes_cap, p->n_nodes + 1, sizeof *p->nodes))
        return CMT_PHASE_NONE;
    uint32_t id = (uint32_t)p->n_nodes++;
    p->nodes[id] = (struct cmt_phase_node){.parent = parent, .name = name, .domain = domain, .global = global};
    p->node_table[j] = id + 1;
    return id;
}

/* ---- threads ----------------------------------------------------------------------------- */

static struct thread_slot *slot_of(struct cmt_phases *p, uint32_t tid)
{
    /* few threads open ranges: a linear scan, most recent first */
    for (size_t i = p->n_slots; i-- > 0;)
        if (p->slots[i].tid == tid)
            return &p->slots[i];
    if (grow((void **)&p->slots, &p->slots_cap, p->n_slots + 1, sizeof *p->slots) != 0)
        return NULL;
    struct thread_slot *s = &p->slots[p->n_slots++];
    memset(s, 0, sizeof *s);
    s->tid = tid;
    return s;
}

static struct thread_slot *find_slot(struct cmt_phases *p, uint32_t tid)
{
    for (size_t i = p->n_slots; i-- > 0;)
        if (p->slots[i].tid == tid)
            return &p->slots[i];
    return NULL;
}

static int set_active(struct cmt_phases *p, struct thread_slot *s, bool active)
{
    uint32_t idx = (uint32_t)(s - p->slots);
    if (active == s->active)
        return 0;
    if (active) {
        if (grow((void **)&p->active_slots, &p->active_cap, p->n_active + 1, sizeof *p->active_slots) != 0)
            return -1;
        p->active_slots[p->n_active++] = idx;
    } else {
        for (size_t i = 0; i < p->n_active; i++)
            if (p->active_slots[i] == idx) {
                p->active_slots[i] = p->active_slots[--p->n_active];
                break;
            }
    }
    s->active = active;
    return 0;
}

/* The stack an event of thread tid counts in (phases.h): its own, or that
 * of the thread that most recently opened a range still open. */
static struct thread_slot *attributed_slot(struct cmt_phases *p, uint32_t tid)
{
    struct thread_slot *s = find_slot(p, tid);
    if (s && s->stack.n)
        return s;
    struct thread_slot *best = NULL;
    for (size_t i = 0; i < p->n_active; i++) {
        struct thread_slot *c = &p->slots[p->active_slots[i]];
        if (!best || c->stack.v[c->stack.n - 1].seq > best->stack.v[best->stack.n - 1].seq)
            best = c;
    }
    return best;
}

static uint32_t global_step(const struct cmt_phases *p)
{
    for (size_t i = p->global.n; i-- > 0;)
        if (p->global.v[i].step)
            return p->global.v[i].step;
    return 0;
}

/* The step of the process when a thread's own stack has none: a
 * process-wide step, else the step of the thread that most recently opened
 * a range still open (PyTorch's autograd threads under emit_nvtx have
 * ranges of their own, inside the main thread's step). */
static uint32_t ambient_step(const struct cmt_phases *p)
{
    uint32_t step = global_step(p);
    uint64_t seq = 0;
    for (size_t i = 0; !step && i < p->n_active; i++) {
        const struct range_stack *s = &p->slots[p->active_slots[i]].stack;
        const struct open_range *top = &s->v[s->n - 1];
        if (top->in_step && top->seq > seq) {
            seq = top->seq;
            step = top->in_step;
        }
    }
    return step;
}

static struct cmt_phase_where where_of(struct cmt_phases *p, uint32_t tid)
{
    struct cmt_phase_where w = {.node = CMT_PHASE_NONE, .global = CMT_PHASE_NONE};
    struct thread_slot *s = attributed_slot(p, tid);
    if (s) {
        const struct open_range *top = &s->stack.v[s->stack.n - 1];
        w.node = top->node;
        w.step = top->in_step;
    }
    if (!w.step)
        w.step = ambient_step(p);
    for (size_t i = p->global.n; i-- > 0;)
        if (!p->global.v[i].step) {
            w.global = p->global.v[i].node;
            break;
        }
    return w;
}

/* ---- steps ------------------------------------------------------------------------------ */

static uint32_t step_new(struct cmt_phases *p, uint32_t name, uint64_t number, bool from_call, uint64_t ts)
{
    if (grow((void **)&p->steps, &p->steps_cap, p->n_steps + 1, sizeof *p->steps) != 0)
        return 0;
    p->steps[p->n_steps++] = (struct cmt_phase_step){
        .name = name, .number = number, .from_call = from_call, .start_ts = ts, .peak = p->live_total, .peak_ts = ts};
    return (uint32_t)p->n_steps;
}

static int site_samples_reserve(struct cmt_phases *p, size_t n)
{
    return grow((void **)&p->site_samples, &p->site_samples_cap, n, sizeof *p->site_samples);
}

/* Samples live bytes per call site at a step's end (phases.h). */
static int sample_step_end(struct cmt_phases *p, const struct cmt_replay *r, uint32_t step)
{
    p->closed_steps++;
    if (p->closed_steps % p->stride)
        return 0;
    if (p->n_samples == CMT_STEP_SAMPLES) {
        size_t half = CMT_STEP_SAMPLES / 2;
        for (size_t i = 0; i < half; i++) {
            p->sample_steps[i] = p->sample_steps[2 * i + 1];
            p->sample_total[i] = p->sample_total[2 * i + 1];
        }
        for (size_t s = 0; s < p->site_samples_cap; s++)
            if (p->site_samples[s])
                for (size_t i = 0; i < half; i++)
                    p->site_samples[s][i] = p->site_samples[s][2 * i + 1];
        p->n_samples = half;
        p->stride *= 2;
        if (p->closed_steps % p->stride)
            return 0;
    }
    size_t k = p->n_samples;
    p->sample_steps[k] = step - 1;
    p->sample_total[k] = p->live_total;
    for (size_t i = 0; i < r->n_active; i++) {
        uint32_t stack = r->active_sites[i];
        uint64_t v = r->sites[stack].live_bytes;
        if (stack >= p->site_samples_cap && site_samples_reserve(p, (size_t)stack + 1) != 0)
            return -1;
        if (!p->site_samples[stack]) {
            if (!v)
                continue;
            p->site_samples[stack] = calloc(CMT_STEP_SAMPLES, sizeof(uint64_t));
            if (!p->site_samples[stack])
                return -1;
        }
        p->site_samples[stack][k] = v;
    }
    p->n_samples++;
    return 0;
}

/* ---- opening and closing ---------------------------------------------------------------- */

static void close_range(struct cmt_phases *p, const struct open_range *o, uint64_t ts, bool closed)
{
    if (o->folded)
        return; /* the compile range it is in counts it; its peak is folded into that one */
    struct cmt_phase_node *n = &p->nodes[o->node];
    if (!closed) {
        n->open_at_end++;
        n->open_retained_bytes += o->net_bytes;
        n->open_retained_count += o->net_count;
    }
    n->alloc_bytes += o->alloc_bytes;
    n->alloc_count += o->alloc_count;
    n->retained_bytes += o->net_bytes;
    n->retained_count += o->net_count;
    n->total_ns += ts > o->start_ts ? ts - o->start_ts : 0;
    if (o->peak > n->peak || !n->peak_ts) {
        n->peak = o->peak;
        n->peak_ts = o->peak_ts;
        n->peak_step = o->in_step;
    }
    if (o->step) {
        struct cmt_phase_step *s = &p->steps[o->step - 1];
        s->closed = closed;
        s->end_ts = ts;
        s->live_at_end = p->live_total;
        s->peak = o->peak;
        s->peak_ts = o->peak_ts;
        s->alloc_bytes = o->alloc_bytes;
        s->alloc_count = o->alloc_count;
        s->retained_bytes = o->net_bytes;
        s->retained_count = o->net_count;
    }
}

static void fold_peak(struct open_range *into, const struct open_range *from)
{
    if (from->peak > into->peak) {
        into->peak = from->peak;
        into->peak_ts = from->peak_ts;
    }
}

static struct open_range *open_range(struct cmt_phases *p, struct range_stack *s, uint32_t node, uint32_t domain,
                                     uint64_t ts, bool folded)
{
    struct open_range *o = stack_push(s);
    if (!o)
        return NULL;
    o->seq = ++p->seq;
    o->node = node;
    o->domain = domain;
    o->start_ts = ts;
    o->peak = p->live_total;
    o->peak_ts = ts;
    o->folded = folded;
    o->compiler = folded;
    if (!folded)
        p->nodes[node].instances++;
    return o;
}

static int on_push(struct cmt_phases *p, const struct cmt_replay_record *rec)
{
    struct thread_slot *s = slot_of(p, rec->tid);
    if (!s)
        return -1;
    uint32_t name = (uint32_t)rec->aux[CMT_MARK_AUX_NAME], domain = (uint32_t)rec->aux[CMT_MARK_AUX_DOMAIN];
    struct open_range *top = s->stack.n ? &s->stack.v[s->stack.n - 1] : NULL;
    uint32_t in_step = top ? top->in_step : 0;
    if (!in_step)
        in_step = global_step(p);
    /* XLA's compiler is not a phase of the program (issue 33 item 9): its
     * outermost range (XlaCompileBackend:#module=...#) is one, and every
     * range opened inside it counts as that one, so that where the peak
     * fell names the program's phase and the module being compiled, not
     * the compiler's passes (docs/report.md, "Phases and steps"). */
    bool folded = top && top->compiler;
    bool compiler = folded || (rec->aux[3] & MARK_COMPILER);
    /* the outermost step-named range is the step; one inside a step is a phase */
    bool is_step = !compiler && (rec->aux[3] & MARK_STEP) && !in_step;
    if (!is_step && !in_step)
        in_step = ambient_step(p); /* a helper thread's range inside another thread's step */
    uint32_t node = folded ? top->node
                           : node_get(p, top ? top->node : CMT_PHASE_NONE, is_step ? CMT_PHASE_STEP_NAME : name,
                                      domain, false);
    if (node == CMT_PHASE_NONE)
        return -1;
    uint32_t step = 0;
    if (is_step && !(step = step_new(p, name, rec->aux[3] & MARK_NUMBER, false, rec->ts)))
        return -1;
    struct open_range *o = open_range(p, &s->stack, node, domain, rec->ts, folded);
    if (!o)
        return -1;
    o->compiler = compiler;
    o->step = step;
    o->in_step = step ? step : in_step;
    return set_active(p, s, true);
}

static int on_pop(struct cmt_phases *p, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    struct thread_slot *s = find_slot(p, rec->tid);
    uint32_t domain = (uint32_t)rec->aux[CMT_MARK_AUX_DOMAIN];
    size_t i = s ? s->stack.n : 0;
    while (i-- > 0)
        if (s->stack.v[i].domain == domain)
            break;
    if (!s || i == (size_t)-1) {
        p->unmatched++;
        return 0;
    }
    struct open_range o = s->stack.v[i];
    /* nested ranges of other domains still open inside it saw its peak too */
    for (size_t k = i + 1; k < s->stack.n; k++)
        fold_peak(&o, &s->stack.v[k]);
    close_range(p, &o, rec->ts, true);
    if (i > 0)
        fold_peak(&s->stack.v[i - 1], &o);
    memmove(&s->stack.v[i], &s->stack.v[i + 1], (s->stack.n - i - 1) * sizeof o);
    s->stack.n--;
    if (o.step && sample_step_end(p, r, o.step) != 0)
        return -1;
    return s->stack.n ? 0 : set_active(p, s, false);
}

static int close_global(struct cmt_phases *p, const struct cmt_replay *r, size_t i, uint64_t ts)
{
    struct open_range o = p->global.v[i];
    close_range(p, &o, ts, true);
    memmove(&p->global.v[i], &p->global.v[i + 1], (p->global.n - i - 1) * sizeof o);
    p->global.n--;
    return o.step ? sample_step_end(p, r, o.step) : 0;
}

static int on_range_start(struct cmt_phases *p, const struct cmt_replay_record *rec)
{
    uint32_t name = (uint32_t)rec->aux[CMT_MARK_AUX_NAME], domain = (uint32_t)rec->aux[CMT_MARK_AUX_DOMAIN];
    bool is_step = (rec->aux[3] & MARK_STEP) && !global_step(p);
    uint32_t node = node_get(p, CMT_PHASE_NONE, is_step ? CMT_PHASE_STEP_NAME : name, domain, true);
    if (node == CMT_PHASE_NONE)
        return -1;
    uint32_t step = 0;
    if (is_step && !(step = step_new(p, name, rec->aux[3] & MARK_NUMBER, false, rec->ts)))
        return -1;
    uint32_t in_step = global_step(p);
    struct open_range *o = open_range(p, &p->global, node, domain, rec->ts, false);
    if (!o)
        return -1;
    o->range_id = rec->aux[CMT_MARK_AUX_ID];
    o->step = step;
    o->in_step = step ? step : in_step;
    return 0;
}

static int on_range_end(struct cmt_phases *p, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    for (size_t i = 0; i < p->global.n; i++)
        if (p->global.v[i].range_id == rec->aux[CMT_MARK_AUX_ID] && rec->aux[CMT_MARK_AUX_ID])
            return close_global(p, r, i, rec->ts);
    p->unmatched++;
    return 0;
}

static int on_step_call(struct cmt_phases *p, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    if (p->call_step) {
        for (size_t i = 0; i < p->global.n; i++)
            if (p->global.v[i].step == p->call_step) {
                if (close_global(p, r, i, rec->ts) != 0)
                    return -1;
                break;
            }
    }
    uint32_t node = node_get(p, CMT_PHASE_NONE, CMT_PHASE_STEP_NAME, 0, true);
    if (node == CMT_PHASE_NONE)
        return -1;
    uint32_t step = step_new(p, 0, rec->aux[CMT_MARK_AUX_ID], true, rec->ts);
    struct open_range *o = step ? open_range(p, &p->global, node, 0, rec->ts, false) : NULL;
    if (!o)
        return -1;
    o->step = o->in_step = step;
    p->call_step = step;
    return 0;
}

/* ---- allocations --------------------------------------------------------------------------- */

static uint64_t tag_hash(const struct cmt_phases *p, uint8_t ns, uint64_t addr)
{
    uint64_t k = addr ^ ((uint64_t)ns << 59);
    return (k * p->hash_mult) >> 20;
}

static int tags_rebuild(struct cmt_phases *p, size_t cap)
{
    struct alloc_tag *old = p->tags;
    size_t old_cap = p->tags_cap;
    struct alloc_tag *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used) {
            size_t j = tag_hash(p, old[i].ns, old[i].addr) & (cap - 1);
            while (t[j].used)
                j = (j + 1) & (cap - 1);
            t[j] = old[i];
        }
    free(old);
    p->tags = t;
    p->tags_cap = cap;
    return 0;
}

static int tag_put(struct cmt_phases *p, const struct alloc_tag *tag)
{
    if ((p->n_tags + 1) * 2 > p->tags_cap && tags_rebuild(p, p->tags_cap ? p->tags_cap * 2 : 1024) != 0)
        return -1;
    size_t mask = p->tags_cap - 1;
    size_t j = tag_hash(p, tag->ns, tag->addr) & mask;
    while (p->tags[j].used) {
        if (p->tags[j].ns == tag->ns && p->tags[j].addr == tag->addr) {
            p->tags[j] = *tag; /* a missed release: the new allocation takes the address */
            return 0;
        }
        j = (j + 1) & mask;
    }
    p->tags[j] = *tag;
    p->n_tags++;
    return 0;
}

/* Removes and returns the tag of (ns, addr); false when there is none. */
static bool tag_take(struct cmt_phases *p, uint8_t ns, uint64_t addr, struct alloc_tag *out)
{
    if (!p->n_tags)
        return false;
    size_t mask = p->tags_cap - 1;
    size_t j = tag_hash(p, ns, addr) & mask;
    for (; p->tags[j].used; j = (j + 1) & mask)
        if (p->tags[j].ns == ns && p->tags[j].addr == addr)
            break;
    if (!p->tags[j].used)
        return false;
    *out = p->tags[j];
    /* backward-shift deletion keeps every probe chain whole */
    size_t hole = j;
    for (size_t k = (j + 1) & mask; p->tags[k].used; k = (k + 1) & mask) {
        size_t home = tag_hash(p, p->tags[k].ns, p->tags[k].addr) & mask;
        if (((k - home) & mask) >= ((k - hole) & mask)) {
            p->tags[hole] = p->tags[k];
            hole = k;
        }
    }
    p->tags[hole].used = 0;
    p->n_tags--;
    return true;
}

static void count_in(struct range_stack *s, uint64_t size)
{
    for (size_t i = 0; i < s->n; i++) {
        s->v[i].alloc_bytes += size;
        s->v[i].alloc_count++;
        s->v[i].net_bytes += size;
        s->v[i].net_count++;
    }
}

static void release_in(struct range_stack *s, uint64_t seq, uint64_t size)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].seq > seq)
            continue; /* opened after the allocation */
        s->v[i].net_bytes -= size;
        s->v[i].net_count--;
    }
}

static struct open_range *step_entry(struct range_stack *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].step)
            return &s->v[i];
    return NULL;
}

/* Steps are the whole process's: an allocation on a thread whose stack has
 * no step (a helper thread with ranges of its own) counts in the step open
 * on another thread. That thread's slot, or NULL when the allocation's own
 * stack or a process-wide step covers it, or no step is open. */
static struct thread_slot *other_step_slot(struct cmt_phases *p, struct thread_slot *own)
{
    if ((own && step_entry(&own->stack)) || global_step(p))
        return NULL;
    uint32_t step = ambient_step(p);
    for (size_t i = 0; step && i < p->n_active; i++) {
        struct thread_slot *c = &p->slots[p->active_slots[i]];
        struct open_range *e = step_entry(&c->stack);
        if (e && e->step == step)
            return c;
    }
    return NULL;
}

static void update_peaks(struct cmt_phases *p, uint64_t ts)
{
    for (size_t i = 0; i < p->n_active; i++) {
        struct range_stack *s = &p->slots[p->active_slots[i]].stack;
        struct open_range *top = &s->v[s->n - 1];
        if (p->live_total > top->peak) {
            top->peak = p->live_total;
            top->peak_ts = ts;
        }
    }
    for (size_t i = 0; i < p->global.n; i++)
        if (p->live_total > p->global.v[i].peak) {
            p->global.v[i].peak = p->live_total;
            p->global.v[i].peak_ts = ts;
        }
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct cmt_phases *p = ctx;
    if (cmt_kind_holds_memory(l->kind) && cmt_class_of_allocation(l->kind, l->device) == CMT_CLASS_DEVICE &&
        l->device >= -1 && l->device < CMT_MAX_DEVICES) {
        size_t d = (size_t)(l->device + 1);
        uint32_t tid = r->event ? r->event->tid : 0;
        uint64_t ts = r->event ? r->event->ts : l->ts;
        if (live) {
            p->live_total += l->size;
            p->live[d] += l->size;
            if (p->live[d] > p->peak[d] || !p->peak_seen[d]) {
                p->peak[d] = p->live[d];
                p->peak_seen[d] = true;
                p->peak_where[d] = p->n_active || p->global.n ? where_of(p, tid)
                                                              : (struct cmt_phase_where){CMT_PHASE_NONE, 0, CMT_PHASE_NONE};
            }
            if (p->n_active || p->global.n) {
                struct thread_slot *s = attributed_slot(p, tid);
                if (s)
                    count_in(&s->stack, l->size);
                count_in(&p->global, l->size);
                struct thread_slot *ss = other_step_slot(p, s);
                if (ss) {
                    struct open_range *e = step_entry(&ss->stack);
                    e->alloc_bytes += l->size;
                    e->alloc_count++;
                    e->net_bytes += l->size;
                    e->net_count++;
                }
                update_peaks(p, ts);
                struct alloc_tag tag = {.addr = l->addr,
                                        .seq = p->seq,
                                        .slot = s ? (uint32_t)(s - p->slots) + 1 : 0,
                                        .step_slot = ss ? (uint32_t)(ss - p->slots) + 1 : 0,
                                        .ns = l->ns,
                                        .used = 1};
                if (tag_put(p, &tag) != 0)
                    return -1;
            }
        } else {
            p->live_total -= l->size;
            p->live[d] -= l->size;
            struct alloc_tag tag;
            if (tag_take(p, l->ns, l->addr, &tag)) {
                if (tag.slot)
                    release_in(&p->slots[tag.slot - 1].stack, tag.seq, l->size);
                release_in(&p->global, tag.seq, l->size);
                struct open_range *e = tag.step_slot ? step_entry(&p->slots[tag.step_slot - 1].stack) : NULL;
                if (e && e->seq <= tag.seq) {
                    e->net_bytes -= l->size;
                    e->net_count--;
                }
            }
        }
    }
    return 0;
}

static int on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    struct cmt_phases *p = ctx;
    if (p->n_active || p->global.n) {
        struct cmt_phase_where w = where_of(p, e->tid);
        if (r->n_failures < CMT_MAX_FAILURES_KEPT) {
            p->failures[r->n_failures] = w;
            p->failure_seen[r->n_failures] = true;
        }
        if (w.node != CMT_PHASE_NONE)
            p->nodes[w.node].failures++;
    }
    return 0;
}

/* The figures the allocations gave while no mark had come: each device's
 * device-resident bytes live and peak are its account's (the same
 * allocations, counted the same way: on_change's test is the account's
 * class), reached at no phase. */
static void take_accounts(struct cmt_phases *p, const struct cmt_replay *r)
{
    p->live_total = 0;
    for (int d = -1; d < CMT_MAX_DEVICES; d++) {
        const struct cmt_account *a = cmt_replay_account(r, d, CMT_CLASS_DEVICE);
        if (!a)
            continue;
        p->live[d + 1] = a->live;
        p->peak[d + 1] = a->peak;
        p->peak_seen[d + 1] = true;
        p->peak_where[d + 1] = (struct cmt_phase_where){CMT_PHASE_NONE, 0, CMT_PHASE_NONE};
        p->live_total += a->live;
    }
}

/* The first mark: from here on the allocations are followed. */
static void wake_up(struct cmt_phases *p, const struct cmt_replay *r)
{
    p->awake = true;
    take_accounts(p, r);
    cmt_replay_wake_changes(p->replay, &p->observer);
}

static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    struct cmt_phases *p = ctx;
    if (rec->type != CMT_REC_MARK)
        return 0;
    if (!p->awake)
        wake_up(p, r);
    p->any = true;
    int rc = 0;
    switch (rec->api) {
    case CMT_API_MARK_PUSH:
        rc = on_push(p, rec);
        break;
    case CMT_API_MARK_POP:
        rc = on_pop(p, r, rec);
        break;
    case CMT_API_MARK_RANGE_START:
        rc = on_range_start(p, rec);
        break;
    case CMT_API_MARK_RANGE_END:
        rc = on_range_end(p, r, rec);
        break;
    case CMT_API_MARK_STEP:
        rc = on_step_call(p, r, rec);
        break;
    case CMT_API_MARK_INSTANT:
        p->marks++;
        break;
    default:
        break; /* a mark of a newer writer */
    }
    if (rc != 0)
        p->out_of_memory = true;
    return rc;
}

/* ---- life cycle -------------------------------------------------------------------------------- */

static void on_mark_read(void *ctx, const struct cmt_trace_model *m, struct cmt_event_in *e)
{
    (void)ctx;
    cmt_phases_classify(m, e);
}

static int on_finish(void *ctx, const struct cmt_replay *r, uint64_t end_ts)
{
    struct cmt_phases *p = ctx;
    if (!p->awake)
        take_accounts(p, r);
    return cmt_phases_finish(p, r, end_ts);
}

struct cmt_phases *cmt_phases_new(void)
{
    struct cmt_phases *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->observer = (struct cmt_replay_observer){.ctx = p, .on_change = on_change, .on_failure = on_failure,
                                                .on_record = on_record, .on_mark_read = on_mark_read,
                                                .on_finish = on_finish, .changes_later = true};
    p->hash_mult = cmt_hash_multiplier();
    p->stride = 1;
    return p;
}

int cmt_phases_attach(struct cmt_phases *p, struct cmt_replay *r)
{
    p->replay = r;
    return cmt_replay_add_observer(r, &p->observer);
}

int cmt_phases_finish(struct cmt_phases *p, const struct cmt_replay *r, uint64_t end_ts)
{
    (void)r;
    /* innermost first, so a step's figures include what its phases saw */
    for (size_t i = 0; i < p->n_slots; i++) {
        struct range_stack *s = &p->slots[i].stack;
        while (s->n) {
            struct open_range o = s->v[--s->n];
            close_range(p, &o, end_ts, false);
            if (s->n)
                fold_peak(&s->v[s->n - 1], &o);
        }
    }
    while (p->global.n) {
        struct open_range o = p->global.v[--p->global.n];
        close_range(p, &o, end_ts, false);
        /* the last cumemtrace_step step ends with the trace: not left open */
        if (o.step && p->steps[o.step - 1].from_call) {
            p->nodes[o.node].open_at_end--;
            p->nodes[o.node].open_retained_bytes -= o.net_bytes;
            p->nodes[o.node].open_retained_count -= o.net_count;
        }
    }
    p->n_active = 0;
    return p->out_of_memory ? -1 : 0;
}

void cmt_phases_free(struct cmt_phases *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_slots; i++)
        free(p->slots[i].stack.v);
    for (size_t i = 0; i < p->site_samples_cap; i++)
        free(p->site_samples[i]);
    free(p->site_samples);
    free(p->slots);
    free(p->active_slots);
    free(p->global.v);
    free(p->nodes);
    free(p->node_table);
    free(p->steps);
    free(p->tags);
    free(p);
}

/* ---- results ---------------------------------------------------------------------------------- */

bool cmt_phases_any(const struct cmt_phases *p)
{
    return p && p->any;
}

const struct cmt_phase_node *cmt_phases_nodes(const struct cmt_phases *p, size_t *n)
{
    *n = p->n_nodes;
    return p->nodes;
}

const struct cmt_phase_step *cmt_phases_steps(const struct cmt_phases *p, size_t *n)
{
    *n = p->n_steps;
    return p->steps;
}

bool cmt_phases_at_peak(const struct cmt_phases *p, int32_t device, struct cmt_phase_where *w)
{
    if (device < -1 || device >= CMT_MAX_DEVICES || !p->peak_seen[device + 1])
        return false;
    *w = p->peak_where[device + 1];
    return true;
}

bool cmt_phases_at_failure(const struct cmt_phases *p, size_t i, struct cmt_phase_where *w)
{
    if (i >= CMT_MAX_FAILURES_KEPT || !p->failure_seen[i])
        return false;
    *w = p->failures[i];
    return true;
}

bool cmt_phases_where_now(struct cmt_phases *p, uint32_t tid, struct cmt_phase_where *w)
{
    if (!p->n_active && !p->global.n)
        return false;
    *w = where_of(p, tid);
    return true;
}

uint64_t cmt_phases_marks(const struct cmt_phases *p)
{
    return p->marks;
}

uint64_t cmt_phases_unmatched(const struct cmt_phases *p)
{
    return p->unmatched;
}

size_t cmt_phases_step_samples(const struct cmt_phases *p, const uint32_t **steps, const uint64_t **total)
{
    *steps = p->sample_steps;
    *total = p->sample_total;
    return p->n_samples;
}

const uint64_t *cmt_phases_site_step_samples(const struct cmt_phases *p, uint32_t stack)
{
    return stack < p->site_samples_cap ? p->site_samples[stack] : NULL;
}
