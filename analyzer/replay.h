/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPLAY_H
#define CUMEMTRACE_ANALYZER_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "live_set.h"
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
    uint64_t live_by_kind[8];
    uint64_t peak_by_kind[8];
    /* Per stack id: bytes/count live now, and at the peak. site_peak is kept
     * lazily: sites that changed since the last peak are listed in dirty and
     * copied over when a new peak is reached, so each event costs O(1). */
    struct cmt_site_cell *site_live;
    struct cmt_site_cell *site_peak;
    uint8_t *dirty;
    uint32_t *dirty_list;
    size_t n_dirty;
    size_t sites_cap;
};

/* Totals per stack id over the whole run. */
struct cmt_site_stats {
    uint8_t api;  /* API of the first allocation made here */
    uint8_t kind;
    uint64_t allocs;
    uint64_t alloc_bytes;
    uint64_t frees;
    uint64_t failures;
    uint64_t first_ts;
    uint64_t last_ts;
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

/* An analysis that follows the replay event by event without the engine
 * knowing what it computes (the forensics of forensics.h). Every callback
 * may be NULL; a nonzero return means out of memory and stops the replay.
 * r->event is the event being applied during each call. */
struct cmt_replay_observer {
    void *ctx;
    /* l became live (live true) or stopped being live, any kind. */
    int (*on_change)(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live);
    /* A failed allocation, before anything else changed. */
    int (*on_failure)(void *ctx, const struct cmt_replay *r, const struct cmt_event_in *e);
    /* Records the engine itself does not apply: samples, pool records, marks. */
    int (*on_record)(void *ctx, const struct cmt_replay *r, const struct cmt_event_in *e);
};

struct cmt_replay {
    const struct cmt_replay_observer *observer; /* optional */
    const struct cmt_event_in *event;           /* the event being applied */
    struct cmt_live_set live;
    struct cmt_account *accounts[CMT_MAX_DEVICES + 1][CMT_CLASS_COUNT]; /* [device + 1][class] */
    struct cmt_virtual_stats virt[CMT_MAX_DEVICES + 1];
    struct cmt_map_index maps;
    struct cmt_site_stats *sites;
    size_t sites_cap;
    uint64_t events;
    uint64_t events_by_api[256];
    uint64_t allocs, frees, failed_allocs, failed_frees;
    uint64_t unmatched_frees;  /* released addresses never seen allocated */
    uint64_t reused_addresses; /* allocation at a still-live address: a release was missed */
    uint64_t bad_events;       /* unknown api, device out of range */
    uint64_t first_ts, last_ts;
    uint64_t device_mask;      /* devices with events (bit d) */
    bool host_seen;
    struct cmt_failure failures[CMT_MAX_FAILURES_KEPT];
    size_t n_failures;
    bool out_of_memory;
};

int cmt_replay_init(struct cmt_replay *r);
void cmt_replay_free(struct cmt_replay *r);

/* Applies one event. Returns 0, or -1 when the analyzer ran out of memory. */
int cmt_replay_event(struct cmt_replay *r, const struct cmt_event_in *e);

enum cmt_account_class cmt_class_of_kind(unsigned kind);
/* The class an allocation counts in: host memory (device -1, e.g. a
 * host-located cuMemCreate) is pinned host memory whatever its kind. */
enum cmt_account_class cmt_class_of_allocation(unsigned kind, int32_t device);
enum cmt_namespace cmt_namespace_of_kind(unsigned kind);
/* True for kinds that hold memory (not VMM reservations or mappings). */
bool cmt_kind_holds_memory(unsigned kind);

static inline struct cmt_account *cmt_replay_account(const struct cmt_replay *r, int32_t device, unsigned cls)
{
    if (device < -1 || device >= CMT_MAX_DEVICES || cls >= CMT_CLASS_COUNT)
        return NULL;
    return r->accounts[device + 1][cls];
}

#endif
