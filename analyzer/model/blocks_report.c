/* SPDX-License-Identifier: MIT */
#include "blocks_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "units.h"

static int by_bytes_desc(const void *a, const void *b)
{
    const struct cmt_blocks_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Sites by canonical stack, merged. */
static int merge_sites(struct cmt_frames *frames, const struct cmt_bl_site *in, size_t n,
                       struct cmt_blocks_site **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!n)
        return 0;
    struct cmt_blocks_site *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t c = frames ? cmt_frames_canonical(frames, in[i].stack) : in[i].stack;
        size_t j = 0;
        while (j < m && s[j].stack != c)
            j++;
        if (j == m)
            s[m++] = (struct cmt_blocks_site){c, 0, 0, 0};
        s[j].bytes += in[i].bytes;
        s[j].blocks += in[i].blocks;
    }
    qsort(s, m, sizeof *s, by_bytes_desc);
    *out = s;
    *n_out = m;
    return 0;
}

static int view_of(struct cmt_frames *frames, const struct cmt_bl_snapshot *s, struct cmt_blocks_view *v)
{
    memset(v, 0, sizeof *v);
    v->ts = s->ts;
    v->allocated = s->allocated;
    v->reserved = s->reserved;
    v->requested = s->requested;
    memcpy(v->classes, s->classes, sizeof v->classes);
    for (unsigned c = 0; c < CMT_BL_CLASS_COUNT; c++)
        v->class_name[c] = cmt_bl_class_name((enum cmt_bl_class)c);
    return merge_sites(frames, s->sites, s->n_sites, &v->sites, &v->n_sites);
}

static void oom_sentence(struct cmt_blocks_oom *o)
{
    char req[32], res[32], alloc[32], fr[32], dev[32], largest[32];
    uint64_t largest_free = 0;
    for (unsigned c = 0; c < CMT_BL_CLASS_COUNT; c++)
        if (o->at.classes[c].largest_free > largest_free)
            largest_free = o->at.classes[c].largest_free;
    uint64_t cache_free = o->at.reserved > o->at.allocated ? o->at.reserved - o->at.allocated : 0;
    cmt_size_str(o->rounded, req, sizeof req);
    cmt_size_str(o->at.reserved, res, sizeof res);
    cmt_size_str(o->at.allocated, alloc, sizeof alloc);
    cmt_size_str(cache_free, fr, sizeof fr);
    cmt_size_str(o->device_free, dev, sizeof dev);
    cmt_size_str(largest_free, largest, sizeof largest);
    if (o->verdict == CMT_BL_VERDICT_FRAGMENTATION)
        snprintf(o->sentence, sizeof o->sentence,
                 "reserved %s, allocated %s: fragmentation inside the cache (%s free in its segments, the largest "
                 "free range %s, %s asked); expandable_segments:True would have served it",
                 res, alloc, fr, largest, req);
    else
        snprintf(o->sentence, sizeof o->sentence,
                 "reserved %s, allocated %s, %s free on the device: capacity, the tensors themselves fill the "
                 "memory (%s asked; the cache held %s free)",
                 res, alloc, dev, req, fr);
}

static void cell_add(struct cmt_blocks_cell *c, uint64_t allocated, uint64_t reserved)
{
    if (allocated < c->allocated_min)
        c->allocated_min = allocated;
    if (allocated > c->allocated_max)
        c->allocated_max = allocated;
    if (reserved < c->reserved_min)
        c->reserved_min = reserved;
    if (reserved > c->reserved_max)
        c->reserved_max = reserved;
    c->allocated_last = allocated;
    c->reserved_last = reserved;
}

static int series_of(const struct cmt_bl_device *d, struct cmt_blocks_series *s)
{
    memset(s, 0, sizeof *s);
    if (!d->n_points)
        return 0;
    const struct cmt_bl_point *p = d->points;
    uint64_t span = p[d->n_points - 1].ts - p[0].ts + 1;
    size_t n = d->n_points < CMT_BLOCKS_BUCKETS ? d->n_points : CMT_BLOCKS_BUCKETS;
    uint64_t width = span / n + (span % n != 0);
    n = (size_t)(span / width + (span % width != 0));
    s->cells = malloc(n * sizeof *s->cells);
    if (!s->cells)
        return -1;
    s->n = n;
    s->origin = p[0].ts;
    s->width = width;
    size_t k = 0;
    uint64_t alloc = p[0].allocated, res = p[0].reserved;
    for (size_t b = 0; b < n; b++) {
        struct cmt_blocks_cell *c = &s->cells[b];
        *c = (struct cmt_blocks_cell){alloc, alloc, alloc, res, res, res};
        uint64_t end = s->origin + (b + 1) * width;
        for (; k < d->n_points && p[k].ts < end; k++)
            cell_add(c, p[k].allocated, p[k].reserved);
        alloc = c->allocated_last;
        res = c->reserved_last;
    }
    return 0;
}

int cmt_blocks_report_build(struct cmt_blocks_report *out, const struct cmt_block_layer *bl,
                            struct cmt_frames *frames)
{
    memset(out, 0, sizeof *out);
    out->on = bl->seen;
    out->events = bl->events;
    out->inconsistencies = bl->inconsistencies;
    out->first_inconsistency = bl->first_inconsistency;
    if (!bl->n_devices)
        return 0;
    out->devices = calloc(bl->n_devices, sizeof *out->devices);
    if (!out->devices)
        return -1;
    out->n_devices = bl->n_devices;
    for (size_t i = 0; i < bl->n_devices; i++) {
        const struct cmt_bl_device *d = &bl->devices[i];
        struct cmt_blocks_device *o = &out->devices[i];
        o->ordinal = d->ordinal;
        o->peak_allocated = d->peak_allocated;
        o->peak_reserved = d->peak_reserved;
        o->allocated_at_exit = d->allocated;
        o->reserved_at_exit = d->reserved;
        o->events = d->events;
        if (series_of(d, &o->series) != 0)
            return -1;
        if (view_of(frames, &d->peak, &o->peak) != 0)
            return -1;
        if (d->n_ooms) {
            o->ooms = calloc(d->n_ooms, sizeof *o->ooms);
            if (!o->ooms)
                return -1;
            o->n_ooms = d->n_ooms;
            for (size_t k = 0; k < d->n_ooms; k++) {
                const struct cmt_bl_oom *s = &d->ooms[k];
                struct cmt_blocks_oom *t = &o->ooms[k];
                t->request = s->request;
                t->rounded = s->rounded;
                t->device_free = s->device_free;
                t->stack = frames ? cmt_frames_canonical(frames, s->stack) : s->stack;
                t->tid = s->tid;
                t->cache_free = s->at.reserved > s->at.allocated ? s->at.reserved - s->at.allocated : 0;
                t->verdict = s->verdict;
                t->verdict_name = cmt_bl_verdict_name(s->verdict);
                t->expandable_would_serve = s->expandable_would_serve;
                if (view_of(frames, &s->at, &t->at) != 0)
                    return -1;
                oom_sentence(t);
            }
        }
        struct cmt_bl_site *raw;
        size_t n = cmt_bl_leaks(d, &raw, &o->leak_blocks, &o->leak_bytes);
        if (n == (size_t)-1)
            return -1;
        int rc = merge_sites(frames, raw, n, &o->leaks, &o->n_leaks);
        if (rc == 0 && n) {
            o->raw_leaks = malloc(n * sizeof *o->raw_leaks);
            if (!o->raw_leaks)
                rc = -1;
            for (size_t k = 0; rc == 0 && k < n; k++)
                o->raw_leaks[k] = (struct cmt_blocks_site){
                    frames ? cmt_frames_canonical(frames, raw[k].stack) : raw[k].stack, raw[k].bytes,
                    raw[k].blocks, raw[k].stack};
            o->n_raw_leaks = rc == 0 ? n : 0;
        }
        free(raw);
        if (rc != 0)
            return -1;
        out->peak_allocated += o->peak_allocated;
        out->peak_reserved += o->peak_reserved;
        out->leak_blocks += o->leak_blocks;
        out->leak_bytes += o->leak_bytes;
    }
    return 0;
}

void cmt_blocks_report_free(struct cmt_blocks_report *b)
{
    for (size_t i = 0; i < b->n_devices; i++) {
        struct cmt_blocks_device *d = &b->devices[i];
        free(d->peak.sites);
        for (size_t k = 0; k < d->n_ooms; k++)
            free(d->ooms[k].at.sites);
        free(d->ooms);
        free(d->leaks);
        free(d->raw_leaks);
        free(d->suppressed);
        free(d->series.cells);
    }
    free(b->devices);
    memset(b, 0, sizeof *b);
}
