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

/* One call site in one account: live now and at the account's peak. */
struct cmt_account_site {
    uint32_t stack;
    bool used;
    bool dirty; /* changed since the last peak */
    struct cmt_site_cell live;
    struct cmt_site_cell peak;
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
    /* Call sites by stack id, in an open-addressing table, so memory grows
     * with the sites this account saw and never with the largest stack id a
     * trace names (a few hostile bytes name 2^26, once per account). Peaks
     * are kept lazily: sites changed since the last peak are listed in
     * dirty_list (by slot) and copied over when a new peak is reached, so
     * each event costs O(1). Iterate with: for (i < sites_cap) if
     * (sites[i].used). */
    struct cmt_account_site *sites;
    size_t sites_cap; /* power of two; 0 before the first site */
    size_t n_sites;
    uint32_t *dirty_list;
    size_t n_dirty;
    uint64_t hash_mult; /* random odd multiplier: crafted ids cannot pile into one probe run */
    unsigned hash_shift;
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

/* Virtual-only VMM objects per device: reserved ranges and mappings. */
struct cmt_virtual_stats {
    uint64_t reserve_live, reserve_peak, reserve_count;
    uint64_t map_live, map_peak, map_count;
};

struct cmt_replay {
    struct cmt_live_set live;
    struct cmt_account *accounts[CMT_MAX_DEVICES + 1][CMT_CLASS_COUNT]; /* [device + 1][class] */
    struct cmt_virtual_stats virt[CMT_MAX_DEVICES + 1];
    struct cmt_site_stats *sites; /* by stack id, below stack_id_limit */
    size_t sites_cap;
    uint32_t stack_id_limit;      /* larger ids count as "no stack": cmt_replay_bound_stacks */
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
/* A trace of trace_bytes bytes cannot define more stacks than fit in it; an
 * event naming a larger stack id names none. Keeps per-stack tables in
 * proportion to the trace. */
void cmt_replay_bound_stacks(struct cmt_replay *r, uint64_t trace_bytes);
void cmt_replay_free(struct cmt_replay *r);

/* Applies one event. Returns 0, or -1 when the analyzer ran out of memory. */
int cmt_replay_event(struct cmt_replay *r, const struct cmt_event_in *e);

enum cmt_account_class cmt_class_of_kind(unsigned kind);
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
