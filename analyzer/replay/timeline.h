/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TIMELINE_H
#define CUMEMTRACE_ANALYZER_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* Live bytes over time, per device and memory kind, in memory that does not
 * grow with the trace: a fixed number of buckets covers the run so far; when
 * an event falls past the last bucket, neighbouring buckets are merged in
 * pairs and the bucket width doubles. Each bucket keeps, per series, the
 * lowest, highest and last live bytes within it, so merging loses no
 * extreme; each series also keeps its exact peak and when it happened.
 *
 * Series: one per (device, kind) for the kinds that hold memory (device,
 * async-pool, vmm-physical, array on a device; managed on a device;
 * pinned-host, and vmm-physical located on the host, on "device" -1), plus
 * per device the total of everything but managed memory (CMT_TIMELINE_TOTAL:
 * on a device its device-resident memory, on the host its pinned memory),
 * which is what the report's peak of that device (or of pinned host memory)
 * measures. Callers pass device -1 for host memory. */

#define CMT_TIMELINE_BUCKETS 1024u        /* even; buckets kept while replaying */
#define CMT_TIMELINE_FIRST_WIDTH_SHIFT 10 /* first bucket width 2^10 ns (about 1 us) */
#define CMT_TIMELINE_TOTAL CMT_KIND_COUNT /* series kind: device-resident total */
/* Series are kept for devices -1 .. CMT_MAX_TIMELINE_DEVICES - 2 (the
 * replay's devices). */
#define CMT_MAX_TIMELINE_DEVICES 65

struct cmt_timeline_cell {
    uint64_t min, max, last;
};

struct cmt_timeline_series {
    int32_t device; /* -1: host */
    uint8_t kind;   /* enum cmt_kind, or CMT_TIMELINE_TOTAL */
    uint64_t live;
    uint64_t peak;
    uint64_t peak_ts; /* absolute (monotonic ns) */
    struct cmt_timeline_cell *cells;
    /* cells + the timeline's cur, moved with it (advance): the per-change
     * update loads one pointer, not cur, cells and an index product */
    struct cmt_timeline_cell *cur_cell;
};

struct cmt_timeline_counts {
    union {
        struct {
            uint64_t allocs, frees, failures;
        };
        uint64_t by_outcome[3]; /* the same three, indexed without a branch */
    };
};

struct cmt_timeline {
    bool started;
    bool origin_set;
    uint64_t origin;   /* absolute ns of bucket 0's start */
    unsigned shift;    /* bucket width = 1 << shift ns */
    uint64_t cur_end;  /* absolute end of the current bucket */
    size_t cur;        /* current bucket */
    struct cmt_timeline_counts *cur_counts; /* counts + cur (as cur_cell) */
    uint64_t end_ts;   /* last time the replay reached (absolute) */
    struct cmt_timeline_counts *counts; /* per bucket */
    struct cmt_timeline_series **series; /* each allocated apart: pointers to them stay valid */
    size_t n_series;
    int16_t slot[CMT_MAX_TIMELINE_DEVICES][CMT_KIND_COUNT + 1]; /* series index + 1; 0: none */
    bool out_of_memory;
};

void cmt_timeline_init(struct cmt_timeline *t);
void cmt_timeline_free(struct cmt_timeline *t);
/* Where bucket 0 starts (the trace's start); without it, the first event. */
void cmt_timeline_set_origin(struct cmt_timeline *t, uint64_t origin);

/* Moves the timeline to ts (events must come in time order) and counts one
 * event of the given record type; failed allocations count apart. */
static inline void cmt_timeline_event(struct cmt_timeline *t, uint64_t ts, unsigned type, bool failed);
/* Live bytes of (device, kind) change by +bytes or -bytes at the current
 * time (after cmt_timeline_event for the same event). device: -1 .. 63.
 * Callers that know the series (cmt_timeline_series_of) can update it with
 * cmt_timeline_series_change directly. */
/* The replay ended (or stopped) at ts: the last bucket reaches it. */
void cmt_timeline_finish(struct cmt_timeline *t, uint64_t ts);

/* Buckets in use: 0 .. cmt_timeline_used(t) - 1. */
size_t cmt_timeline_used(const struct cmt_timeline *t);
uint64_t cmt_timeline_width(const struct cmt_timeline *t);
const struct cmt_timeline_series *cmt_timeline_find(const struct cmt_timeline *t, int32_t device, unsigned kind);
const char *cmt_timeline_kind_name(unsigned kind);

/* A view of the timeline with at most max_buckets buckets, merging groups
 * of neighbouring buckets (same rules: min of mins, max of maxes, last of
 * the last). Filled by cmt_timeline_resample; freed by
 * cmt_timeline_view_free. */
struct cmt_timeline_view {
    size_t n;            /* buckets */
    uint64_t origin;     /* absolute */
    uint64_t width;      /* ns per bucket (UINT64_MAX when wider) */
    uint64_t end;        /* absolute end of the data (last bucket ends here) */
    size_t n_series;
    const struct cmt_timeline_series **series; /* the source series, in timeline order */
    struct cmt_timeline_cell *cells;           /* [series][bucket] */
    struct cmt_timeline_counts *counts;        /* [bucket] */
};
int cmt_timeline_resample(const struct cmt_timeline *t, size_t max_buckets, struct cmt_timeline_view *v);
void cmt_timeline_view_free(struct cmt_timeline_view *v);
/* Absolute start of bucket b (b == n: where the last ends), UINT64_MAX when
 * past the end of 64-bit time. */
uint64_t cmt_timeline_view_start(const struct cmt_timeline_view *v, size_t b);
/* Bucket of the view holding absolute time ts. */
size_t cmt_timeline_view_bucket(const struct cmt_timeline_view *v, uint64_t ts);

/* ---- the per-event part, inline: it runs for every event ---------------- */

void cmt_timeline_event_slow(struct cmt_timeline *t, uint64_t ts, unsigned type, bool failed);
struct cmt_timeline_series *cmt_timeline_series_new(struct cmt_timeline *t, int32_t device, unsigned kind);

/* The same with the outcome as an index of struct cmt_timeline_counts's
 * by_outcome (0 allocs, 1 frees, 2 failures), which a caller may know
 * with fewer tests (the replay's paired events). */
static inline void cmt_timeline_count(struct cmt_timeline *t, uint64_t ts, unsigned outcome)
{
    /* cur_end is 0 until the first event starts the timeline */
    if (__builtin_expect(ts >= t->cur_end, 0)) {
        cmt_timeline_event_slow(t, ts, outcome == 0 ? CMT_REC_ALLOC : CMT_REC_FREE, outcome == 2);
        return;
    }
    /* allocs, frees or failures, without a branch on which */
    t->cur_counts->by_outcome[outcome]++;
    if (ts > t->end_ts)
        t->end_ts = ts;
}

static inline void cmt_timeline_event(struct cmt_timeline *t, uint64_t ts, unsigned type, bool failed)
{
    cmt_timeline_count(t, ts, failed ? 2 : type != CMT_REC_ALLOC);
}

static inline __attribute__((always_inline)) void cmt_timeline_series_change(struct cmt_timeline *t, struct cmt_timeline_series *s, uint64_t bytes,
                                              bool add, uint64_t ts)
{
    (void)t;
    struct cmt_timeline_cell *c = s->cur_cell;
    if (add) {
        s->live += bytes;
        if (s->live > c->max)
            c->max = s->live;
        if (s->live > s->peak) {
            s->peak = s->live;
            s->peak_ts = ts;
        }
    } else {
        s->live -= bytes;
        if (s->live < c->min)
            c->min = s->live;
    }
    c->last = s->live;
}

static inline struct cmt_timeline_series *cmt_timeline_series_of(struct cmt_timeline *t, int32_t device,
                                                                 unsigned kind)
{
    int16_t slot = t->slot[device + 1][kind];
    return slot ? t->series[slot - 1] : cmt_timeline_series_new(t, device, kind);
}

static inline __attribute__((always_inline)) void cmt_timeline_change(struct cmt_timeline *t, int32_t device,
                                                                      unsigned kind, uint64_t bytes, bool add,
                                                                      uint64_t ts)
{
    if (!t->counts)
        return;
    struct cmt_timeline_series *s = cmt_timeline_series_of(t, device, kind);
    if (s)
        cmt_timeline_series_change(t, s, bytes, add, ts);
    if (kind != CMT_KIND_MANAGED && (s = cmt_timeline_series_of(t, device, CMT_TIMELINE_TOTAL)) != NULL)
        cmt_timeline_series_change(t, s, bytes, add, ts);
}

#endif
