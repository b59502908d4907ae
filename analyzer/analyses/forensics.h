/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FORENSICS_H
#define CUMEMTRACE_ANALYZER_FORENSICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr_index.h"
#include "churn.h"
#include "holes.h"
#include "oom_verdict.h"
#include "replay.h"

/* Out-of-memory and fragmentation forensics (docs/fragmentation.md), fed by
 * the replay engine through its observer (replay.h): what a failed
 * allocation met, holes in each device's address span over time, internal
 * waste, size churn, pools and the device samples. Memory is bounded: series
 * keep at most CMT_SERIES_MAX points (halving their resolution when full),
 * failures are examined in detail up to CMT_OOM_CASES_MAX, the rest grows
 * with live allocations and call sites only.
 *
 * Costs per event: a counter for the checkpoint clock, the churn and waste
 * tallies (a hash-set probe for a size new to the call site); with
 * track_holes also one ordered insert or remove. Checkpoints walk
 * (track_holes) or sort (otherwise) one device's live allocations, and are
 * spaced so that this stays a few steps per event on average
 * (docs/fragmentation.md, "Cost in the analyzer", has the figures). */

#define CMT_SERIES_MAX 256
#define CMT_POOL_SERIES_MAX 128
#define CMT_OOM_CASES_MAX 64
#define CMT_OOM_TOP_SITES 32
#define CMT_OOM_POOLS_MAX 16
#define CMT_TOP_HOLES 10
#define CMT_TOP_PINS 16
#define CMT_POOLS_MAX 1024

struct cmt_forensics_options {
    /* Keep each device's allocations ordered event by event: each release
     * knows the hole it opens (who opened the holes, `cumemtrace frag`) and
     * checkpoints walk instead of sorting. */
    bool track_holes;
};

/* A fragmentation checkpoint of one device. */
struct cmt_frag_point {
    uint64_t ts;
    uint64_t live; /* the device's live device-resident bytes (all kinds) */
    struct cmt_hole_stats holes;
    /* the device's VMM address space then (replay.h's cmt_virtual_stats):
     * reserved ranges and mappings, not memory */
    uint64_t vmm_reserved, vmm_mapped;
};

/* A hole at the worst instant and what bounds it. */
struct cmt_hole_view {
    uint64_t addr, size;
    struct cmt_interval left, right; /* the live allocations on either side */
    bool left_live_at_exit, right_live_at_exit;
};

/* A call site whose live allocations bound holes at the worst instant. */
struct cmt_pin_site {
    uint32_t stack;
    uint64_t pinned_bytes; /* bytes of the holes its allocations bound, each hole once */
    uint64_t holes;        /* those holes, each once (a hole between two of its allocations too) */
    uint64_t allocations;  /* its allocations beside a hole, each once (one between two holes too) */
    uint64_t oldest_ts;    /* its oldest bounding allocation */
};

struct cmt_frag_worst {
    bool valid;
    struct cmt_frag_point point;
    struct cmt_hole_view top[CMT_TOP_HOLES];
    size_t n_top;
    struct cmt_pin_site pins[CMT_TOP_PINS];
    size_t n_pins;
};

/* A device sample (SAMPLE record) with this process's live bytes then. */
struct cmt_sample_point {
    uint64_t ts;
    uint8_t api;
    uint64_t free, total, pool_reserved, pool_used;
    uint64_t live; /* this process's device-resident live bytes */
};

/* Pools' reserved but unused bytes: device memory this process holds
 * without an allocation in it. */
static inline uint64_t cmt_sample_pool_unused(const struct cmt_sample_point *s)
{
    return s->pool_reserved > s->pool_used ? s->pool_reserved - s->pool_used : 0;
}

/* Device memory in use that neither this process's live allocations nor its
 * pools' unused bytes explain: context, module images, libraries' own
 * memory, other processes. */
static inline uint64_t cmt_sample_gap(const struct cmt_sample_point *s)
{
    uint64_t used = s->total > s->free ? s->total - s->free : 0;
    uint64_t explained = s->live + cmt_sample_pool_unused(s);
    return used > explained ? used - explained : 0;
}

/* Series with bounded memory: when full, every other point is dropped and
 * only every stride-th later candidate is kept. */
struct cmt_series {
    size_t n, cap;
    uint64_t stride, offered;
};

struct cmt_device_forensics {
    bool seen;
    uint64_t device_bytes; /* its total memory, from its latest device sample (0: none yet) */
    /* fragmentation */
    struct cmt_addr_index index; /* track_holes */
    struct cmt_frag_point points[CMT_SERIES_MAX];
    struct cmt_series point_series;
    struct cmt_frag_worst worst;
    struct cmt_frag_point last_point; /* the latest checkpoint: at exit once finished */
    /* internal waste live now and its peak */
    uint64_t pitch_waste_live, pitch_waste_peak, pitch_waste_peak_ts;
    uint64_t round_waste_live, round_waste_peak, round_waste_peak_ts;
    /* stream-ordered (pool) allocations live now and their peak, every pool
     * of the device together: known at every event, where a pool's reserve
     * is known only at its samples */
    uint64_t async_live, async_peak, async_peak_ts;
    /* samples */
    uint64_t n_samples;
    struct cmt_sample_point samples[CMT_SERIES_MAX];
    struct cmt_series sample_series;
    struct cmt_sample_point first_sample, last_sample, max_gap_sample;
};

/* Internal waste per raw stack id. */
struct cmt_waste_site {
    uint64_t pitch_bytes, pitch_count; /* granted - requested of pitched allocations */
    uint64_t round_bytes;              /* to the next 512 bytes, plain device allocations */
};

/* Holes opened per raw stack id (track_holes): releases between two live
 * neighbours. */
struct cmt_opener_site {
    uint64_t count, bytes, largest;
};

struct cmt_pool_point {
    uint64_t ts, reserved, used;
};

struct cmt_pool_info {
    uint64_t handle;
    int32_t device;
    bool created_in_trace, destroyed, is_default, is_current;
    uint8_t create_api;
    uint32_t create_stack;
    uint64_t create_ts, destroy_ts;
    uint64_t max_size;
    uint64_t threshold;        /* last seen */
    uint64_t reserved, used;   /* last seen */
    uint64_t peak_reserved, peak_reserved_ts;
    uint64_t peak_slack, peak_slack_ts; /* reserved - used */
    uint64_t trims;
    uint32_t last_trim_stack;
    uint64_t states;           /* pool:state records */
    struct cmt_pool_point series[CMT_POOL_SERIES_MAX];
    struct cmt_series pool_series;
};

struct cmt_oom_pool {
    uint64_t handle, reserved, used, threshold, flags;
};

struct cmt_oom_site {
    uint32_t stack;
    uint64_t bytes, count;
};

/* One failed allocation, examined. */
struct cmt_oom_case {
    size_t failure_index; /* in the replay's failures, or SIZE_MAX */
    uint8_t api, kind;
    int32_t result, device;
    uint32_t tid, stack;
    uint64_t size, ts;
    uint64_t pool;        /* cudaMallocFromPoolAsync's pool; 0: the device's current pool or not a pool request */
    uint64_t live;        /* this process's device-resident bytes on the device */
    uint64_t live_by_kind[CMT_KIND_COUNT];
    struct cmt_hole_stats span;
    struct cmt_oom_site top[CMT_OOM_TOP_SITES];
    size_t n_top;
    bool has_sample;
    uint64_t sample_ts, free, total, pool_reserved, pool_used;
    struct cmt_oom_pool pools[CMT_OOM_POOLS_MAX];
    size_t n_pools;
    /* what the thread did next */
    uint64_t released_after, releases_after;
    uint64_t trims_after, trimmed_bytes; /* pool trims, and what they gave back */
    bool retried;
    int32_t retry_result;
    uint64_t next_ts; /* the thread's next allocation (the retry, when retried); 0: none seen */
};

/* A thread with a failure whose aftermath is being watched. */
struct cmt_oom_watch {
    uint32_t tid;
    size_t case_index;
    bool want_sample;   /* its failure sample has not come yet */
    bool taking_pools;  /* pool:state records after the sample belong to it */
    bool watching;      /* until the thread's next allocation */
    uint64_t trimmed_pool; /* a trim was just recorded: its pool:state follows */
};

struct cmt_forensics {
    struct cmt_forensics_options opt;
    struct cmt_replay_observer observer;
    struct cmt_device_forensics *devices[CMT_MAX_DEVICES];
    bool changed[CMT_MAX_DEVICES]; /* span changed since the device's last checkpoint (a record then) */
    /* checkpoint clock */
    uint64_t events_since_checkpoint, checkpoint_interval;
    uint64_t clock_floor, clock_step; /* the common path's test (cmt_frag_clock_set) */
    uint64_t span_total; /* live span allocations and VMM reservations of every device (kept with track_holes only) */
    uint32_t devices_changed; /* devices with changed set */
    uint64_t checkpoints;
    struct cmt_interval *scratch;
    size_t scratch_cap;
    /* live VMM reservations of every device, ordered by address: a gap
     * holding one is address space, not a hole (struct cmt_span_bounds);
     * copied into reserves for a checkpoint's scan when they changed */
    struct cmt_addr_index reserve_index;
    struct cmt_interval *reserves;
    size_t n_reserves, reserves_cap;
    bool reserves_changed;
    /* open mappings of another process's memory (the replay's IPC imports),
     * ordered by address, as of the replay's open_changes ipc_seen: a gap
     * holding one is none of this process's free memory either; bounds is
     * reserves and these merged, what a checkpoint's scan is given */
    struct cmt_interval *ipc_maps, *bounds;
    size_t n_ipc_maps, ipc_maps_cap, n_bounds, bounds_cap;
    uint64_t ipc_seen;
    bool bounds_stale;
    struct cmt_hole scratch_holes[CMT_TOP_HOLES];
    /* the common path of on_change (frag.c): classes of namespaces and
     * kinds ([ns | kind << 8]), and of APIs */
    uint8_t ns_kind_class[1 << 16], api_class[256];
    /* per raw stack id */
    struct cmt_churn churn;
    struct cmt_waste_site *waste;
    size_t waste_cap;
    struct cmt_opener_site *openers;
    size_t openers_cap;
    struct cmt_live_set pitched; /* live pitched allocations: size = their waste */
    /* pools */
    struct cmt_pool_info *pools;
    size_t n_pools, pools_cap;
    uint64_t pool_records_dropped; /* past CMT_POOLS_MAX pools */
    /* failures */
    struct cmt_oom_case cases[CMT_OOM_CASES_MAX];
    size_t n_cases;
    uint64_t failures_seen;
    struct cmt_oom_watch watches[CMT_OOM_CASES_MAX];
    size_t n_watches;
    /* samples */
    uint64_t samples, failure_samples_unmatched;
    bool finished;
};

struct cmt_forensics *cmt_forensics_new(const struct cmt_forensics_options *opt);
void cmt_forensics_free(struct cmt_forensics *f);
/* Attaches f to the replay (before the first event) as one of its
 * observers (replay.h), cmt_forensics_finish included at the replay's end
 * (cmt_replay_finish_observers). Returns 0, or -1 when r has no room for
 * another observer. */
int cmt_forensics_attach(struct cmt_forensics *f, struct cmt_replay *r);
/* After the last event: the final checkpoint, what was live at exit.
 * Returns 0, or -1 when out of memory. */
int cmt_forensics_finish(struct cmt_forensics *f, const struct cmt_replay *r);

/* Sets up the fragmentation part (frag.c): the observer's on_change. */
void cmt_frag_init(struct cmt_forensics *f);
struct cmt_alloc_views;
/* Follows the fragmentation tracker from v's on_change (alloc_views.h), its
 * common path inlined there: what cmt_alloc_views_then does for any
 * observer, in one call per change. f must be attached to r already; call
 * before v->observer is (the replay reads on_change as it is attached);
 * from then on the replay calls f's on_change only through v. */
void cmt_frag_follow_views(struct cmt_forensics *f, struct cmt_alloc_views *v, struct cmt_replay *r);
/* For the parts in separate files (frag.c, frag_checkpoint.c, oom.c, pools.c,
 * series.c, forensics_device.c). */
/* Checkpoint spacing, in events per live allocation examined: a walk of the
 * ordered index costs about one step per allocation, a sort about log n. */
#define CMT_CHECKPOINT_EVENTS_PER_ALLOC_WALK 1
#define CMT_CHECKPOINT_EVENTS_PER_ALLOC_SORT 32

/* True when the changed devices are due a checkpoint: at least
 * checkpoint_interval events (events_since_checkpoint: every change counts)
 * went by since the last, and at least per_alloc events per live
 * allocation examined for each changed device. */
static inline bool cmt_frag_checkpoint_due(const struct cmt_forensics *f, const struct cmt_replay *r)
{
    if (f->events_since_checkpoint < f->checkpoint_interval || f->devices_changed == 0)
        return false;
    uint64_t per_alloc = f->opt.track_holes ? CMT_CHECKPOINT_EVENTS_PER_ALLOC_WALK : CMT_CHECKPOINT_EVENTS_PER_ALLOC_SORT;
    /* Without the index a checkpoint scans the whole live set. */
    uint64_t examined = f->opt.track_holes ? f->span_total : r->live.count;
    return f->events_since_checkpoint >= per_alloc * examined * f->devices_changed;
}

/* The common path of on_change (frag.c) leaves a change to the rest, which
 * tests the clock exactly (cmt_frag_checkpoint_due), once
 * events_since_checkpoint reaches clock_floor and clock_step per allocation
 * examined: two numbers kept from checkpoint_interval, devices_changed and
 * n_watches. Never while no device changed (UINT64_MAX: the counter cannot
 * reach it), always while a failure is watched (the rest follows the
 * failing thread: cmt_oom_on_change). Call after any of the three moved. */
static inline void cmt_frag_clock_set(struct cmt_forensics *f)
{
    uint64_t per_alloc = f->opt.track_holes ? CMT_CHECKPOINT_EVENTS_PER_ALLOC_WALK : CMT_CHECKPOINT_EVENTS_PER_ALLOC_SORT;
    f->clock_floor = f->n_watches ? 0 : f->devices_changed ? f->checkpoint_interval : UINT64_MAX;
    f->clock_step = f->n_watches ? 0 : per_alloc * f->devices_changed;
}

/* Checkpoints every changed device now. Returns 0, or -1 when out of
 * memory. */
int cmt_frag_checkpoint_changed(struct cmt_forensics *f, const struct cmt_replay *r);
/* Measures device's holes now (ts), adds the point to its series and keeps
 * it when it is the worst so far; *out (may be NULL) receives the point. */
int cmt_frag_checkpoint(struct cmt_forensics *f, const struct cmt_replay *r, int32_t device, uint64_t ts,
                        struct cmt_frag_point *out);
void cmt_frag_consider_worst(struct cmt_forensics *f, int32_t device, const struct cmt_frag_point *p,
                             const struct cmt_interval *v, size_t n, const struct cmt_hole *top, size_t n_top,
                             const struct cmt_span_bounds *bounds);
/* The open mappings of another process's memory, ordered, refreshed when
 * they changed (frag_checkpoint.c); -1 when out of memory. */
int cmt_frag_ipc_maps_refresh(struct cmt_forensics *f, const struct cmt_replay *r);
/* True when [lo, hi) holds an open mapping of another process's memory. */
bool cmt_frag_ipc_maps_overlap(const struct cmt_forensics *f, uint64_t lo, uint64_t hi);
/* The device's record, created when new (its first use); NULL when out of
 * memory or out of range. */
struct cmt_device_forensics *cmt_forensics_device_new(struct cmt_forensics *f, int32_t device);
static inline struct cmt_device_forensics *cmt_forensics_device(struct cmt_forensics *f, int32_t device)
{
    if (device >= 0 && device < CMT_MAX_DEVICES && f->devices[device])
        return f->devices[device];
    return cmt_forensics_device_new(f, device);
}
int cmt_oom_on_failure(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_replay_in *e);
int cmt_oom_on_change(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_live *l, bool live);
void cmt_oom_on_record(struct cmt_forensics *f, const struct cmt_replay_record *e);
int cmt_pools_on_record(struct cmt_forensics *f, const struct cmt_replay_record *e);
const struct cmt_pool_info *cmt_pools_find(const struct cmt_forensics *f, uint64_t handle);

/* Bounded series (see struct cmt_series): the slot for the next point, or
 * NULL when this one is skipped. points is the array, elem its element size. */
void *cmt_series_next(struct cmt_series *s, void *points, size_t elem);
/* The same, never skipping: when full, every other point is dropped first
 * (*halved is then set). */
void *cmt_series_push(struct cmt_series *s, void *points, size_t elem, bool *halved);

/* The figures a failure's verdict is decided from. */
void cmt_oom_figures_of(const struct cmt_forensics *f, const struct cmt_oom_case *c, uint64_t allowance,
                        struct cmt_oom_figures *out);

#endif
