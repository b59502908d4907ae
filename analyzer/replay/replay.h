/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPLAY_H
#define CUMEMTRACE_ANALYZER_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipc.h"
#include "live_set.h"
#include "timeline.h"
#include "trace_model.h"
#include "trace_reader.h"

/* The replay engine: applies events in time order to the live set and keeps
 * what every analysis needs, incrementally, so one pass over the trace feeds
 * every renderer. Memory grows with live allocations and unique stacks. */

#define CMT_MAX_DEVICES 64
#define CMT_MAX_STACK_ID (1u << 26)
#define CMT_MAX_FAILURES_KEPT 1000

/* Where an allocation's bytes count. */
enum cmt_account_class {
    CMT_CLASS_DEVICE = 0,  /* device-resident: plain, pool, VMM physical, arrays */
    CMT_CLASS_MANAGED = 1, /* managed memory, attributed to the current device */
    CMT_CLASS_HOST = 2,    /* pinned host memory */
    CMT_CLASS_COUNT
};

struct cmt_site_cell {
    uint64_t bytes;
    uint64_t count;
};

/* One call site of an account: a slot of its site table. */
struct cmt_account_site {
    uint32_t key;   /* stack id + 1; 0: empty slot */
    uint32_t dirty; /* changed since the last peak (listed in dirty_list) */
    struct cmt_site_cell live;
} __attribute__((aligned(32)));

/* Live bytes of one (device, class), its peak and what was live then. */
struct cmt_account {
    bool seen;
    int32_t device; /* -1: host */
    uint8_t cls;
    uint64_t live;
    uint64_t live_count;
    uint64_t peak;
    uint64_t peak_ts;
    uint64_t peak_count;
    /* The highest live since a reader last set it (to live): a live view's
     * peak of a phase or a step (analyzer/top/), one compare per
     * allocation. */
    uint64_t high;
    uint64_t live_by_kind[8];
    uint64_t peak_by_kind[8];
    /* Its timeline series, found once: per kind, and its total (not for
     * managed memory, which has no total). */
    struct cmt_timeline_series *tl_kind[CMT_KIND_COUNT];
    struct cmt_timeline_series *tl_total;
    /* Its call sites, keyed by stack id in an open-addressing table (at
     * most half full, multiply-shift hashing with a random odd multiplier:
     * hash_seed.h), so memory grows with the sites this account saw, never
     * with the largest stack id a trace names: a few hostile bytes naming
     * id 2^26 - 1 in every account used to cost gigabytes. sites[i] is bytes
     * and count live now, site_peak[i] those at the peak, kept lazily: slots
     * changed since the last peak are listed in dirty_list and copied over
     * when a new peak is reached, so each event costs O(1). Iterate with
     * cmt_account_site_stack(). */
    struct cmt_account_site *sites;
    struct cmt_site_cell *site_peak;
    size_t sites_cap; /* power of two */
    size_t n_sites;
    /* Cells changed since the last peak: table slots, and (with
     * CMT_DIRTY_HOME set) stack ids of sites whose home this account is. */
    uint32_t *dirty_list;
    size_t n_dirty, dirty_cap;
    uint32_t n_home;  /* sites whose home account this is (struct cmt_site_stats) */
    uint8_t index;    /* cmt_account_index() */
    uint64_t hash_mult;
    unsigned hash_shift; /* 64 - log2(sites_cap) */
};

#define CMT_DIRTY_HOME (1u << 31)

/* The stack id held in slot i of an account's site table, or -1 when the
 * slot is empty. Slots are in no useful order: sort what you list. During
 * the replay a site's cell in its home account (struct cmt_site_stats) is
 * not in the table: cmt_replay_account_cell reads either; after
 * cmt_replay_finish the tables hold every cell. */
static inline int64_t cmt_account_site_stack(const struct cmt_account *a, size_t i)
{
    return a->sites[i].key ? (int64_t)a->sites[i].key - 1 : -1;
}

/* Growth checkpoints (docs/report.md, "Growing call sites"): the run is cut
 * into intervals of equal length; at the end of each, every call site that
 * has allocated records its floor, the lowest live bytes it had during the
 * interval. At most CMT_GROWTH_CHECKPOINTS intervals are kept: when they are
 * used up, neighbours merge in pairs (the floor of two intervals is the lower
 * of their floors) and the interval length doubles. Memory per site is
 * fixed; the first interval lasts 2^CMT_GROWTH_FIRST_SHIFT ns. */
#define CMT_GROWTH_CHECKPOINTS 64
#define CMT_GROWTH_FIRST_SHIFT 16

struct cmt_growth_clock {
    bool started;
    uint64_t origin;  /* absolute ns where interval 0 starts */
    unsigned shift;   /* interval length 2^shift ns */
    uint32_t n;       /* complete intervals recorded */
    uint64_t next_ts; /* absolute end of the interval in progress */
};

/* Per stack id, what every event of the site touches: one cache line.
 *
 * That line also holds the site's cell in its home account (the first
 * account it was counted in; most sites only ever count in one): a cell
 * in the account's own table was a second cache miss per event, a third
 * of the replay's time on bench/gen_trace's 50 million events (perf).
 * Cells in other accounts are in those accounts' tables. Live counts are
 * 32-bit: each live allocation takes an entry of the live set. */
struct cmt_site_stats {
    uint64_t allocs;
    uint64_t alloc_bytes;
    uint64_t frees;
    uint64_t live_bytes; /* live now, every device and kind that holds memory */
    uint64_t floor;      /* lowest live_bytes since the last checkpoint */
    uint64_t home_bytes; /* live in the home account */
    uint32_t live_count;
    uint32_t home_count;
    uint32_t first_cp;   /* checkpoint interval of its first allocation */
    uint8_t api;         /* API of the first allocation made here */
    uint8_t kind;
    bool active;         /* allocated at least once (it is in active_sites) */
    uint8_t home;        /* home account: cmt_account_index() + 1; 0: none yet; bit 7: changed since its last peak */
} __attribute__((aligned(64)));

#define CMT_SITE_HOME_DIRTY 0x80u

/* Per stack id, what is rarely touched. */
struct cmt_site_extra {
    uint64_t first_ts;  /* first successful allocation */
    uint64_t failures;
    uint64_t *samples;  /* floor per complete checkpoint interval */
};

struct cmt_failure {
    uint8_t api;
    uint8_t kind;
    int32_t result;
    int32_t device;
    uint32_t tid;
    uint64_t size;
    uint64_t ts;
    uint32_t stack;
    uint64_t live_device_bytes; /* this process's device-resident bytes then */
    /* What the thread asked for next (an allocation call): an allocator
     * that asks again for the same size right after a failure is retrying
     * (PyTorch after releasing its cache) or probing (its expandable
     * segments' first cuMemCreate). */
    uint8_t next; /* enum cmt_failure_next */
};

enum cmt_failure_next {
    CMT_NEXT_UNSEEN = 0,       /* the thread allocated nothing more (or the watch was full) */
    CMT_NEXT_SAME_SERVED,      /* the same size, served */
    CMT_NEXT_SAME_FAILED,      /* the same size, failed again (the next failure in the list) */
    CMT_NEXT_OTHER             /* another size */
};

/* VMM per device (index device + 1; -1 is host-located physical memory):
 * physical memory (cuMemCreate handles: also counted in the device's account,
 * live from cuMemCreate until released AND unmapped everywhere), reserved
 * address ranges (the device current when they were reserved) and mappings
 * (the device of the physical handle mapped). Reservations and mappings are
 * address space, not memory. */
struct cmt_virtual_stats {
    uint64_t physical_live, physical_peak, physical_count;
    uint64_t reserve_live, reserve_peak, reserve_count;
    uint64_t map_live, map_peak, map_count;
};

/* Live VMM mappings by address, sorted: one cuMemUnmap releases every
 * mapping that starts inside its span. */
struct cmt_map_index {
    uint64_t *addrs;
    size_t n, cap;
};

struct cmt_replay;
struct cmt_replay_in;
struct cmt_replay_pairing;

/* A record the engine does not apply itself (a device sample, a pool
 * record, a mark: trace-format.md), whole, for an observer. */
struct cmt_replay_record {
    uint64_t ts;
    uint64_t addr;
    uint64_t size;
    uint64_t aux[CMT_AUX_COUNT];
    uint32_t stack; /* clamped like an event's */
    uint32_t tid;
    int32_t result;
    int32_t device; /* -1 .. CMT_MAX_DEVICES - 1; INT8_MIN: out of range */
    uint8_t type;
    uint8_t api;
};

/* An analysis that follows the replay event by event without the engine
 * knowing what it computes (the analyses of analyses/: forensics.h,
 * phases.h): one pass feeds every observer and every other view, in the
 * order they were added. Every callback may be NULL; on_change and ctx are
 * read once, when the observer is added (the replay keeps them side by side
 * for its per-event loop): set them before. A nonzero return
 * means out of memory and stops the replay. r->event is the event being
 * applied during on_change and on_failure. */
struct cmt_replay_observer {
    void *ctx;
    /* l became live (live true) or stopped being live, any kind. */
    int (*on_change)(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live);
    /* A failed allocation, before the engine counted it. */
    int (*on_failure)(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e);
    /* Samples, pool records and marks, in their place among the events. */
    int (*on_record)(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec);
    /* A mark record as the reader meets it, before it is packed for the
     * replay, with the metadata read so far (its strings): where the
     * observer may note in e->aux[3] what it needs of them later (the phases
     * name steps). On the reader's thread (feed.h). */
    void (*on_mark_read)(void *ctx, const struct cmt_trace_model *m, struct cmt_event_in *e);
    /* A BLOCK record (PyTorch's block layer) as the reader meets it, with
     * the metadata read so far: the ALLOCATOR record and the device's DEVICE
     * record come before the layer's first record (their metadata chunks
     * were claimed earlier). On the reader's thread (feed.h): what the
     * observer notes here for later, it writes once, before the record is
     * handed over, and reads on the replay's side only after it. */
    void (*on_block_read)(void *ctx, const struct cmt_trace_model *m, const struct cmt_event_in *e);
    /* Once the replay ended at end_ts (after cmt_replay_finish). */
    int (*on_finish)(void *ctx, const struct cmt_replay *r, uint64_t end_ts);
    /* on_change is not called until the observer asks for it
     * (cmt_replay_wake_changes, from one of its callbacks): an observer
     * with nothing to follow until some record comes (the phases, until the
     * first mark) then costs the events nothing, where a call that returns
     * at once was about 50 instructions per event (callgrind). */
    bool changes_later;
};

/* Observers a replay takes at most. */
#define CMT_REPLAY_MAX_OBSERVERS 12

/* An observer's on_change and its context, side by side: the replay calls
 * them for every event, one load each instead of two dependent ones. */
struct cmt_replay_change_hook {
    int (*fn)(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live);
    void *ctx;
};

struct cmt_replay {
    const struct cmt_replay_observer *observers[CMT_REPLAY_MAX_OBSERVERS]; /* cmt_replay_add_observer */
    unsigned n_observers;
    /* the observers' on_change callbacks, in their order, as they were when
     * added (cmt_replay_add_observer) */
    struct cmt_replay_change_hook change_hooks[CMT_REPLAY_MAX_OBSERVERS];
    unsigned n_change_hooks;
    bool changes_awake[CMT_REPLAY_MAX_OBSERVERS]; /* by observer: on_change is in change_hooks */
    const struct cmt_replay_in *event;          /* the event being applied */
    struct cmt_live_set live;
    struct cmt_account *accounts[CMT_MAX_DEVICES + 1][CMT_CLASS_COUNT]; /* [device + 1][class] */
    /* accounts[device + 1][cmt_class_of_allocation(kind, device)] by
     * [device + 1][kind], NULL until that account exists: one load per
     * change where the class took a few tests more (issue 30) */
    struct cmt_account *account_of_kind[CMT_MAX_DEVICES + 1][CMT_KIND_COUNT];
    struct cmt_virtual_stats virt[CMT_MAX_DEVICES + 1];
    struct cmt_map_index maps;
    struct cmt_ipc_state ipc; /* memory shared with other processes (ipc.h): never in the accounts */
    struct cmt_site_stats *sites;      /* by stack id, below stack_id_limit */
    struct cmt_site_cell *home_peak;   /* by stack id: its home cell at its home account's last peak */
    bool home_cells_merged;            /* cmt_replay_finish moved the home cells into the tables */
    struct cmt_site_extra *site_extra; /* by stack id */
    size_t sites_cap;                  /* at most stack_id_limit */
    uint32_t stack_id_limit;           /* larger ids count as "no stack": cmt_replay_bound_stacks */
    uint32_t *active_sites; /* stack ids that allocated, in order of first allocation */
    size_t n_active, active_cap;
    struct cmt_growth_clock growth;
    struct cmt_timeline timeline;
    uint64_t end_ts;  /* where the replay ended (cmt_replay_finish) */
    uint64_t events;
    uint64_t events_by_api[256];
    uint64_t allocs, frees, failed_allocs, failed_frees;
    uint64_t unmatched_frees;  /* released addresses never seen allocated */
    uint64_t reused_addresses; /* allocation at a still-live address: a release was missed */
    uint64_t bad_events;       /* unknown api, device out of range */
    uint64_t first_ts, last_ts;
    uint64_t last_alloc_ts;    /* of the last successful allocation call (0: none) */
    uint64_t device_mask;      /* devices with events (bit d) */
    bool host_seen;
    struct cmt_failure failures[CMT_MAX_FAILURES_KEPT];
    size_t n_failures;
    /* threads whose last call was a kept failure, and its index (at most 8
     * at once: the oldest is dropped) */
    uint32_t failure_watch_tid[8];
    uint32_t failure_watch[8];
    size_t n_failure_watches;
    bool out_of_memory;
    /* A live view's replay (cmt_replay_live_only): no timeline, no growth
     * checkpoints; the accounts, sites and live set as always. */
    bool live_only;
    /* The reading thread's pairing of allocations and releases (pairing.h),
     * made by the first feed; NULL when none fed this replay. */
    struct cmt_replay_pairing *pairing;
};

int cmt_replay_init(struct cmt_replay *r);
/* Keeps only what a live view reads (analyzer/top/): the live set, the
 * accounts and their peaks, the call sites' cells; neither the timeline
 * nor the growth checkpoints (their work was about a tenth of the replay's
 * instructions per event). Call before the first event and instead of
 * cmt_replay_set_origin. */
void cmt_replay_live_only(struct cmt_replay *r);
/* A trace of trace_bytes bytes cannot define more stacks than fit in it; an
 * event naming a larger stack id names none. Keeps the tables by stack id in
 * proportion to the trace. Call before the first event. */
void cmt_replay_bound_stacks(struct cmt_replay *r, uint64_t trace_bytes);
void cmt_replay_free(struct cmt_replay *r);
/* Where the timeline and the growth checkpoints start (the trace's start
 * time); without it, at the first event. */
void cmt_replay_set_origin(struct cmt_replay *r, uint64_t origin);
/* The replay ends at end_ts (absolute): the timeline reaches it and the
 * checkpoint intervals complete before it are recorded. */
void cmt_replay_finish(struct cmt_replay *r, uint64_t end_ts);
/* Absolute end of checkpoint interval i; UINT64_MAX when that is past the
 * end of 64-bit time (such an interval never completes). */
uint64_t cmt_replay_checkpoint_ts(const struct cmt_replay *r, uint32_t i);

/* What the replay reads of an event, in 48 bytes: batches of these travel
 * from the reading thread to the replaying one, and their size is what that
 * costs. */
struct cmt_replay_in {
    uint64_t ts;
    uint64_t addr;
    uint64_t size;
    uint64_t aux0;   /* the one aux word an allocation needs: VMM mapping: the
                      * physical handle; pool allocations: the pool;
                      * pitched and 3D: the bytes asked for (the record's aux1) */
    uint32_t stack;  /* ids from the replay's stack_id_limit up read as 0 (no stack) */
    uint32_t tid;
    int32_t result;  /* paired (kind & CMT_REPLAY_IN_PAIRED): the live set's slot id; the call succeeded */
    int8_t device;   /* -1 .. CMT_MAX_DEVICES - 1; INT8_MIN: out of range */
    uint8_t type;
    uint8_t api;
    uint8_t kind;    /* below 0x80 as packed (kinds from 0x80 up read as 0x7f: unknown) */
};

/* Set in kind by the reading thread's pairing (pairing.h): result holds the
 * slot id of the allocation in the live set. Observers reading r->event see
 * it as packed: they read neither its kind nor its result (the engine's
 * figures and the cmt_live they get say those). */
#define CMT_REPLAY_IN_PAIRED 0x80u

static inline void cmt_replay_in_from(struct cmt_replay_in *o, const struct cmt_event_in *e,
                                      uint32_t stack_id_limit)
{
    /* The reader has just stored ts, addr and size one by one; the compiler
     * would load neighbours of them as one 16-byte vector, which cannot be
     * forwarded from two 8-byte stores and stalls until they retire (about
     * 10 ns per event, measured with perf). Loading each into a register
     * first keeps the loads scalar. */
    uint64_t ts = e->ts, addr = e->addr, size = e->size;
    __asm__("" : "+r"(ts), "+r"(addr), "+r"(size));
    *o = (struct cmt_replay_in){
        .ts = ts,
        .addr = addr,
        .size = size,
        .aux0 = e->aux[cmt_event_packed_aux_index(e->api)],
        .stack = e->stack < stack_id_limit ? (uint32_t)e->stack : 0,
        .tid = e->tid,
        .result = e->result,
        .device = e->device >= -1 && e->device < CMT_MAX_DEVICES ? (int8_t)e->device : INT8_MIN,
        .type = e->type,
        .api = e->api,
        .kind = e->kind & CMT_REPLAY_IN_PAIRED ? 0x7f : e->kind,
    };
}

/* What cmt_replay_in_from makes of an event the reader delivered, from
 * the packed fields the reader keeps (trace_reader.h), for a reader whose
 * stack limit (cmt_reader_set_stack_limit) is the replay's stack_id_limit.
 * Loaded in the widths the reader stored them in: a load that spans two
 * stores just made cannot be forwarded from them and waits until they
 * retire (cmt_replay_in_from). */
static inline void cmt_replay_in_copy(struct cmt_replay_in *o, const struct cmt_event_in *e)
{
    _Static_assert(offsetof(struct cmt_event_in, ts) == offsetof(struct cmt_replay_in, ts) &&
                       offsetof(struct cmt_event_in, addr) == offsetof(struct cmt_replay_in, addr) &&
                       offsetof(struct cmt_event_in, size) == offsetof(struct cmt_replay_in, size) &&
                       offsetof(struct cmt_event_in, packed_aux) == offsetof(struct cmt_replay_in, aux0) &&
                       offsetof(struct cmt_event_in, packed_stack) == offsetof(struct cmt_replay_in, stack) &&
                       offsetof(struct cmt_event_in, tid) == offsetof(struct cmt_replay_in, tid) &&
                       offsetof(struct cmt_event_in, result) == offsetof(struct cmt_replay_in, result) &&
                       offsetof(struct cmt_event_in, packed_device) == offsetof(struct cmt_replay_in, device) &&
                       offsetof(struct cmt_event_in, type) == offsetof(struct cmt_replay_in, type) &&
                       offsetof(struct cmt_event_in, api) == offsetof(struct cmt_replay_in, api) &&
                       offsetof(struct cmt_event_in, packed_kind) == offsetof(struct cmt_replay_in, kind) &&
                       sizeof(struct cmt_replay_in) == 48,
                   "the reader's packed fields lie as the replay's entry");
    _Static_assert(CMT_READER_PACKED_DEVICES == CMT_MAX_DEVICES, "the same devices packed");
    uint64_t ts = e->ts, addr = e->addr, size = e->size, aux0 = e->packed_aux;
    uint32_t stack = e->packed_stack, tid = e->tid, result = (uint32_t)e->result, tail;
    memcpy(&tail, &e->packed_device, sizeof tail); /* device, type, api, kind: one store of the reader's */
    __asm__("" : "+r"(ts), "+r"(addr), "+r"(size), "+r"(aux0));
    __asm__("" : "+r"(stack), "+r"(tid), "+r"(result), "+r"(tail));
    o->ts = ts;
    o->addr = addr;
    o->size = size;
    o->aux0 = aux0;
    uint64_t stack_tid = stack | (uint64_t)tid << 32, result_tail = result | (uint64_t)tail << 32;
    memcpy(&o->stack, &stack_tid, sizeof stack_tid);
    memcpy(&o->result, &result_tail, sizeof result_tail);
}

/* Records for an observer (samples, pools, marks) travel in batches too, as two
 * entries: the event packed as above (aux0 = aux[0]), then one whose ts,
 * addr and size carry aux[1], aux[2] and aux[3]. */
static inline bool cmt_replay_is_record(uint8_t type)
{
    return type == CMT_REC_SAMPLE || type == CMT_REC_POOL || type == CMT_REC_MARK || type == CMT_REC_BLOCK ||
           type == CMT_REC_IPC;
}

/* Entries e takes in a batch: 1 for allocations and releases, 2 for
 * records when observed and for IPC records (the engine keeps those
 * itself: ipc.h), 0 for what the replay has no use for. */
static inline size_t cmt_replay_in_entries(const struct cmt_event_in *e, bool observed)
{
    if (e->type == CMT_REC_ALLOC || e->type == CMT_REC_FREE)
        return 1;
    if (e->type == CMT_REC_IPC)
        return 2;
    return observed && cmt_replay_is_record(e->type) ? 2 : 0;
}

/* Packs e into o (room for cmt_replay_in_entries entries). */
/* A BLOCK record leaves aux3 unused (format.h): in the replay's records it
 * carries the block's stream instead, which an entry has no room for. */
#define CMT_BLOCK_RECORD_STREAM 3

static inline uint64_t cmt_replay_record_aux3(const struct cmt_event_in *e)
{
    return e->type == CMT_REC_BLOCK ? e->stream : e->aux[3];
}

static inline void cmt_replay_in_pack(struct cmt_replay_in *o, const struct cmt_event_in *e,
                                      uint32_t stack_id_limit)
{
    cmt_replay_in_from(o, e, stack_id_limit);
    if (cmt_replay_is_record(e->type)) {
        o[0].aux0 = e->aux[0];
        o[1] = (struct cmt_replay_in){.ts = e->aux[1], .addr = e->aux[2], .size = cmt_replay_record_aux3(e)};
    }
}

/* Applies one event. Returns 0, or -1 when the analyzer ran out of memory. */
int cmt_replay_event(struct cmt_replay *r, const struct cmt_event_in *e);
/* Applies n packed entries in order (a record's two entries are never
 * split between calls). Returns 0, or -1 when out of memory. */
int cmt_replay_events(struct cmt_replay *r, const struct cmt_replay_in *ev, size_t n);
/* Adds an observer, after those added before (before the first event).
 * Returns 0, or -1 when CMT_REPLAY_MAX_OBSERVERS are there. */
int cmt_replay_add_observer(struct cmt_replay *r, const struct cmt_replay_observer *o);
/* From observer o's callbacks: its on_change is called from the next
 * change on (struct cmt_replay_observer's changes_later), in its place
 * among the observers'. */
void cmt_replay_wake_changes(struct cmt_replay *r, const struct cmt_replay_observer *o);
/* Observer o's on_change is no longer called by the replay: the caller
 * calls it from an on_change of its own (alloc_views.h), one call per
 * change where there were two. Before the first event. */
void cmt_replay_hand_over_changes(struct cmt_replay *r, const struct cmt_replay_observer *o);
/* Tells the observers the replay ended at end_ts (after cmt_replay_finish).
 * Returns 0, or -1 when one ran out of memory. */
int cmt_replay_finish_observers(struct cmt_replay *r, uint64_t end_ts);

/* Called for every event: inline. */
static inline enum cmt_account_class cmt_class_of_kind(unsigned kind)
{
    /* the first three kinds are their classes' numbers: a compare and a
     * conditional move (every observer asks it for every event) */
    _Static_assert(CMT_KIND_DEVICE == (int)CMT_CLASS_DEVICE && CMT_KIND_MANAGED == (int)CMT_CLASS_MANAGED &&
                       CMT_KIND_HOST_PINNED == (int)CMT_CLASS_HOST,
                   "kinds 0-2 are classes 0-2");
    return kind <= CMT_KIND_HOST_PINNED ? (enum cmt_account_class)kind : CMT_CLASS_DEVICE;
}

static inline enum cmt_namespace cmt_namespace_of_kind(unsigned kind)
{
    switch (kind) {
    case CMT_KIND_VMM_PHYSICAL:
        return CMT_NS_VMM_HANDLE;
    case CMT_KIND_VMM_RESERVE:
        return CMT_NS_VMM_RESERVE;
    case CMT_KIND_VMM_MAP:
        return CMT_NS_VMM_MAP;
    case CMT_KIND_ARRAY:
        return CMT_NS_ARRAY;
    default:
        return CMT_NS_POINTER;
    }
}

/* The class an allocation counts in: host memory (device -1, e.g. a
 * host-located cuMemCreate) is pinned host memory whatever its kind. */
static inline enum cmt_account_class cmt_class_of_allocation(unsigned kind, int32_t device)
{
    return device < 0 ? CMT_CLASS_HOST : cmt_class_of_kind(kind);
}

/* True for kinds that hold memory (not VMM reservations or mappings). */
static inline bool cmt_kind_holds_memory(unsigned kind)
{
    return kind != CMT_KIND_VMM_RESERVE && kind != CMT_KIND_VMM_MAP;
}

/* An account's number, below (CMT_MAX_DEVICES + 1) * CMT_CLASS_COUNT. */
static inline uint8_t cmt_account_index(int32_t device, unsigned cls)
{
    return (uint8_t)((device + 1) * CMT_CLASS_COUNT + cls);
}

/* Account a's cells for stack: live now and at a's last peak. False when a
 * has none for it (never counted there). Mid-replay or after it. */
bool cmt_replay_site_cells(const struct cmt_replay *r, const struct cmt_account *a, uint32_t stack,
                           struct cmt_site_cell *live, struct cmt_site_cell *peak);

/* Calls fn for every call site with a live cell in account a (its count may
 * be 0), in no useful order: mid-replay or after it. */
void cmt_replay_account_cells(const struct cmt_replay *r, const struct cmt_account *a,
                              void (*fn)(void *ctx, uint32_t stack, const struct cmt_site_cell *live), void *ctx);

static inline struct cmt_account *cmt_replay_account(const struct cmt_replay *r, int32_t device, unsigned cls)
{
    if (device < -1 || device >= CMT_MAX_DEVICES || cls >= CMT_CLASS_COUNT)
        return NULL;
    return r->accounts[device + 1][cls];
}

#endif
