/* SPDX-License-Identifier: MIT */
#include "render_parts.h"

#include "blocks_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_errors.h"
#include "frames.h"
#include "json_writer.h"

/* Thread ids of the tracks this file adds to each process (real thread ids
 * are the recorded ones; these sit above every Linux tid). */
#define TID_COUNTERS 0
#define TID_STEPS 0x7ffffff0u

/* Chrome Trace Event JSON (the "JSON Array/Object Format" that
 * ui.perfetto.dev and chrome://tracing load), docs/export.md: one process
 * per trace, named; counter tracks of live bytes per account and kind, each
 * timeline bucket (at most CMT_TIMELINE_BUCKETS over the run) as two
 * samples: its highest live bytes at its start and its last at its middle;
 * the device samples (used, pool reserved and used) as recorded, at most
 * the forensics' bounded series; an instant event per failed allocation
 * kept (its stack in args); the steps as slices; with PyTorch's block
 * layer a counter track per device of its tensors (allocated) and segments
 * (reserved), each bucket of the model's series as two samples like the
 * live bytes, and an instant per failure it saw with its two-layer verdict. Times are
 * microseconds, the format's unit, to the nanosecond (three decimals,
 * written from the integer: exact however long the run) on one axis: every
 * trace is placed by its wall-clock start, the earliest at 0. */
struct cmt_perfetto {
    struct cmt_json j;
    uint64_t origin_realtime_ns; /* the earliest trace's start */
    uint32_t pids[256];          /* pids written, so a repeated one is told apart */
    size_t n_pids;
};

/* "ts": microseconds since the earliest trace's start, the format's unit,
 * with the nanoseconds as three decimals (events 300 ns apart were one
 * whole microsecond before). */
static void ts_key(struct cmt_json *j, uint64_t offset_ns, uint64_t rel_ns)
{
    cmt_json_key(j, "ts");
    cmt_json_decimal(j, offset_ns + rel_ns, 3);
}

static void head(struct cmt_json *j, const char *ph, const char *name, uint32_t pid, uint32_t tid)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "ph");
    cmt_json_string(j, ph);
    cmt_json_key(j, "name");
    cmt_json_string(j, name);
    cmt_json_key(j, "pid");
    cmt_json_uint(j, pid);
    cmt_json_key(j, "tid");
    cmt_json_uint(j, tid);
}

static void meta(struct cmt_json *j, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    head(j, "M", what, pid, tid);
    cmt_json_key(j, "args");
    cmt_json_begin_object(j);
    cmt_json_key(j, "name");
    cmt_json_string(j, name);
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void account_label(int32_t device, char *buf, size_t len)
{
    if (device < 0)
        snprintf(buf, len, "host live bytes");
    else
        snprintf(buf, len, "device %d live bytes", (int)device);
}

/* One counter event of every series of one device at one instant: bucket
 * b's max (at_max) or last. */
static void counter(struct cmt_json *j, uint32_t pid, uint64_t offset, uint64_t rel_ns, const struct cmt_timeline_model *v,
                    int32_t device, size_t b, bool at_max)
{
    char name[64];
    account_label(device, name, sizeof name);
    head(j, "C", name, pid, TID_COUNTERS);
    ts_key(j, offset, rel_ns);
    cmt_json_key(j, "args");
    cmt_json_begin_object(j);
    for (size_t s = 0; s < v->n_series; s++) {
        if (v->series[s].device != device)
            continue;
        const struct cmt_timeline_cell *c = &v->series[s].cells[b];
        cmt_json_key(j, v->series[s].name);
        cmt_json_uint(j, at_max ? c->max : c->last);
    }
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void counters(struct cmt_perfetto *p, uint32_t pid, uint64_t offset, const struct cmt_report *r)
{
    const struct cmt_timeline_model *v = &r->timeline;
    bool seen[CMT_MAX_TIMELINE_DEVICES] = {false};
    for (size_t s = 0; s < v->n_series; s++)
        seen[v->series[s].device + 1] = true;
    for (int d = -1; d < CMT_MAX_TIMELINE_DEVICES - 1; d++) {
        if (!seen[d + 1])
            continue;
        for (size_t b = 0; b < v->n; b++) {
            uint64_t start = cmt_report_rel_ns(r, v->starts[b]);
            uint64_t end = cmt_report_rel_ns(r, v->starts[b + 1]);
            counter(&p->j, pid, offset, start, v, d, b, true);
            counter(&p->j, pid, offset, start + (end - start) / 2, v, d, b, false);
        }
    }
}

/* What the driver said at each device sample: in use, and the pools. */
static void samples(struct cmt_perfetto *p, uint32_t pid, uint64_t offset, const struct cmt_report *r)
{
    for (size_t d = 0; d < r->events.n_devices; d++) {
        const struct cmt_report_device_samples *ds = &r->events.devices[d];
        char name[64];
        snprintf(name, sizeof name, "device %d as the driver saw it", ds->device);
        for (size_t i = 0; i < ds->n; i++) {
            const struct cmt_report_sample *s = &ds->samples[i];
            head(&p->j, "C", name, pid, TID_COUNTERS);
            ts_key(&p->j, offset, cmt_report_rel_ns(r, s->ts));
            cmt_json_key(&p->j, "args");
            cmt_json_begin_object(&p->j);
            cmt_json_key(&p->j, "used");
            cmt_json_uint(&p->j, s->used);
            cmt_json_key(&p->j, "unexplained");
            cmt_json_uint(&p->j, s->unexplained);
            cmt_json_key(&p->j, "pool reserved");
            cmt_json_uint(&p->j, s->pool_reserved);
            cmt_json_key(&p->j, "pool used");
            cmt_json_uint(&p->j, s->pool_used);
            cmt_json_end_object(&p->j);
            cmt_json_end_object(&p->j);
        }
    }
}

static void stack_args(struct cmt_json *j, const struct cmt_report *r, uint32_t stack)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    char buf[1024];
    cmt_json_key(j, "stack");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *f = &sf->frames[i];
        if (f->file && f->line > 0)
            snprintf(buf, sizeof buf, "%s %s:%d", f->function ? f->function : "?", f->file, f->line);
        else
            cmt_folded_frame(f, buf, sizeof buf);
        cmt_json_string(j, buf);
    }
    cmt_json_end_array(j);
}

static void failures(struct cmt_perfetto *p, uint32_t pid, uint64_t offset, const struct cmt_report *r)
{
    for (size_t i = 0; i < r->events.n_failures; i++) {
        const struct cmt_report_failure *f = &r->events.failures[i];
        char name[96];
        snprintf(name, sizeof name, "failed %s of %" PRIu64 " B", cmt_api_name(f->api), f->size);
        head(&p->j, "i", name, pid, f->tid);
        ts_key(&p->j, offset, cmt_report_rel_ns(r, f->ts));
        cmt_json_key(&p->j, "s");
        cmt_json_string(&p->j, "p"); /* drawn across the process */
        cmt_json_key(&p->j, "cat");
        cmt_json_string(&p->j, "failed allocation");
        cmt_json_key(&p->j, "args");
        cmt_json_begin_object(&p->j);
        cmt_json_key(&p->j, "api");
        cmt_json_string(&p->j, cmt_api_name(f->api));
        cmt_json_key(&p->j, "size");
        cmt_json_uint(&p->j, f->size);
        cmt_json_key(&p->j, "device");
        cmt_json_int(&p->j, f->device);
        cmt_json_key(&p->j, "error");
        cmt_json_string(&p->j, cmt_cuda_error_name(f->result, cmt_api_is_driver(f->api)));
        cmt_json_key(&p->j, "live_device_bytes");
        cmt_json_uint(&p->j, f->live_device_bytes);
        stack_args(&p->j, r, f->stack);
        cmt_json_end_object(&p->j);
        cmt_json_end_object(&p->j);
    }
}

static void blocks_counter(struct cmt_json *j, uint32_t pid, uint64_t offset, uint64_t rel_ns, const char *name,
                           uint64_t allocated, uint64_t reserved)
{
    head(j, "C", name, pid, TID_COUNTERS);
    ts_key(j, offset, rel_ns);
    cmt_json_key(j, "args");
    cmt_json_begin_object(j);
    cmt_json_key(j, "allocated");
    cmt_json_uint(j, allocated);
    cmt_json_key(j, "reserved");
    cmt_json_uint(j, reserved);
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

/* PyTorch's block layer: tensors and segments over time, its failures. */
static void blocks(struct cmt_perfetto *p, uint32_t pid, uint64_t offset, const struct cmt_report *r)
{
    const struct cmt_blocks_report *b = r->blocks;
    if (!b || !b->on)
        return;
    for (size_t i = 0; i < b->n_devices; i++) {
        const struct cmt_blocks_device *d = &b->devices[i];
        const struct cmt_blocks_series *s = &d->series;
        char name[96];
        snprintf(name, sizeof name, "device %d inside PyTorch's cache", (int)d->ordinal);
        for (size_t k = 0; k < s->n; k++) {
            const struct cmt_blocks_cell *c = &s->cells[k];
            uint64_t start = cmt_report_rel_ns(r, s->origin + k * s->width);
            blocks_counter(&p->j, pid, offset, start, name, c->allocated_max, c->reserved_max);
            blocks_counter(&p->j, pid, offset, start + s->width / 2, name, c->allocated_last, c->reserved_last);
        }
        for (size_t k = 0; k < d->n_ooms; k++) {
            const struct cmt_blocks_oom *o = &d->ooms[k];
            snprintf(name, sizeof name, "PyTorch out of memory: %" PRIu64 " B (%s)", o->request, o->verdict_name);
            head(&p->j, "i", name, pid, TID_COUNTERS);
            ts_key(&p->j, offset, cmt_report_rel_ns(r, o->at.ts));
            cmt_json_key(&p->j, "s");
            cmt_json_string(&p->j, "p");
            cmt_json_key(&p->j, "cat");
            cmt_json_string(&p->j, "block layer failure");
            cmt_json_key(&p->j, "args");
            cmt_json_begin_object(&p->j);
            cmt_json_key(&p->j, "device");
            cmt_json_int(&p->j, d->ordinal);
            cmt_json_key(&p->j, "requested");
            cmt_json_uint(&p->j, o->request);
            cmt_json_key(&p->j, "rounded");
            cmt_json_uint(&p->j, o->rounded);
            cmt_json_key(&p->j, "allocated");
            cmt_json_uint(&p->j, o->at.allocated);
            cmt_json_key(&p->j, "reserved");
            cmt_json_uint(&p->j, o->at.reserved);
            cmt_json_key(&p->j, "device_free");
            cmt_json_uint(&p->j, o->device_free);
            cmt_json_key(&p->j, "verdict");
            cmt_json_string(&p->j, o->verdict_name);
            cmt_json_key(&p->j, "explanation");
            cmt_json_string(&p->j, o->sentence);
            stack_args(&p->j, r, (uint32_t)o->stack);
            cmt_json_end_object(&p->j);
            cmt_json_end_object(&p->j);
        }
    }
}

static void steps(struct cmt_perfetto *p, uint32_t pid, uint64_t offset, const struct cmt_report *r)
{
    size_t n = r->events.n_steps;
    const struct cmt_report_step *st = r->events.steps;
    if (!n)
        return;
    meta(&p->j, "thread_name", pid, TID_STEPS, "steps");
    for (size_t i = 0; i < n; i++) {
        char name[160];
        const char *s = st[i].name;
        if (s && *s)
            snprintf(name, sizeof name, "%s", s);
        else
            snprintf(name, sizeof name, "step %" PRIu64, st[i].number);
        head(&p->j, "X", name, pid, TID_STEPS);
        uint64_t start = cmt_report_rel_ns(r, st[i].start_ts), end = cmt_report_rel_ns(r, st[i].end_ts);
        ts_key(&p->j, offset, start);
        cmt_json_key(&p->j, "dur");
        cmt_json_decimal(&p->j, end > start ? end - start : 0, 3);
        cmt_json_key(&p->j, "cat");
        cmt_json_string(&p->j, "step");
        cmt_json_key(&p->j, "args");
        cmt_json_begin_object(&p->j);
        cmt_json_key(&p->j, "peak_bytes");
        cmt_json_uint(&p->j, st[i].peak);
        cmt_json_key(&p->j, "live_at_end_bytes");
        cmt_json_uint(&p->j, st[i].live_at_end);
        cmt_json_key(&p->j, "allocated_bytes");
        cmt_json_uint(&p->j, st[i].alloc_bytes);
        cmt_json_end_object(&p->j);
        cmt_json_end_object(&p->j);
    }
}

static uint32_t unique_pid(struct cmt_perfetto *p, uint32_t pid)
{
    for (bool clash = true; clash;) {
        clash = false;
        for (size_t i = 0; i < p->n_pids; i++)
            if (p->pids[i] == pid) {
                pid = pid + 1000000u;
                clash = true;
            }
    }
    if (p->n_pids < sizeof p->pids / sizeof p->pids[0])
        p->pids[p->n_pids++] = pid;
    return pid;
}

static void trace(struct cmt_perfetto *p, const struct cmt_report *r)
{
    const struct cmt_report_trace *t = &r->trace;
    uint32_t pid = unique_pid(p, (uint32_t)t->pid);
    uint64_t start = t->start_realtime_ns;
    uint64_t offset = start > p->origin_realtime_ns ? start - p->origin_realtime_ns : 0;
    char name[600];
    const char *exe = t->has_process ? t->exe : NULL;
    if (t->has_process && t->rank >= 0)
        snprintf(name, sizeof name, "rank %" PRId64 ": %s (%s)", t->rank, exe ? cmt_basename(exe) : "?", t->path);
    else
        snprintf(name, sizeof name, "%s (%s)", exe ? cmt_basename(exe) : "?", t->path);
    meta(&p->j, "process_name", pid, 0, name);
    for (size_t i = 0; i < r->events.n_threads; i++) {
        const char *tn = r->events.threads[i].name;
        if (tn && *tn)
            meta(&p->j, "thread_name", pid, r->events.threads[i].tid, tn);
    }
    counters(p, pid, offset, r);
    samples(p, pid, offset, r);
    failures(p, pid, offset, r);
    blocks(p, pid, offset, r);
    steps(p, pid, offset, r);
}

void cmt_perfetto_render(const struct cmt_perfetto_model *m, FILE *out)
{
    struct cmt_perfetto p = {.origin_realtime_ns = m->origin_realtime_ns};
    cmt_json_init(&p.j, out, false);
    cmt_json_begin_object(&p.j);
    cmt_json_key(&p.j, "displayTimeUnit");
    cmt_json_string(&p.j, "ms");
    cmt_json_key(&p.j, "traceEvents");
    cmt_json_begin_array(&p.j);
    for (size_t i = 0; i < m->set.n; i++) {
        const struct cmt_report *r = m->set.report(m->set.ctx, i);
        if (r)
            trace(&p, r);
        m->set.done(m->set.ctx, i);
    }
    cmt_json_end_array(&p.j);
    cmt_json_end_object(&p.j);
    cmt_json_finish(&p.j);
}
