/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_WHATIF_H
#define CUMEMTRACE_ANALYZER_WHATIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caching_allocator.h"
#include "phases.h"
#include "replay.h"
#include "tensor_slots.h"

/* What if (docs/report.md, "What if"; docs/design.md, "What if"): the
 * recorded run's tensor requests and releases replayed through a model of
 * PyTorch's caching allocator (torchalloc/caching_allocator.h) under other
 * settings and on a device of another size, all in the one pass of the
 * replay, each setting its own model per device.
 *
 * The device's room for PyTorch's cache is followed as the run went: the
 * device's memory (its DEVICE record, or the capacity asked for) less
 * what was not PyTorch's cache then, that is the other allocations of the
 * process (cuBLAS workspaces, NCCL buffers: device-resident bytes the
 * replay counts outside the cache's segments) and what no allocation
 * explains (the CUDA context, other processes: the last device sample's
 * used bytes less the process's allocations then).
 *
 * Engine and inputs: whatif_observer.c follows the replay's BLOCK records
 * (and samples, failed allocations, the accounts) and calls the functions
 * below; model/whatif_uncached.c calls them for a trace of PyTorch with its
 * cache off (one cudaMalloc per tensor). */

#define CMT_WHATIF_MAX_SETTINGS 16
#define CMT_WHATIF_MAX_DEVICES 16

/* The first request a setting's model could not serve on a device. */
struct cmt_whatif_failure {
    uint64_t ts;          /* absolute */
    uint32_t tid;
    uint64_t stack;       /* the request's (the tensor's) */
    uint64_t stream;
    bool recorded_failed; /* the recorded run failed it too (PyTorch's OOM record) */
    struct cmt_ta_failure f;
    bool has_where;       /* the phases observer placed it */
    struct cmt_phase_where where;
};

struct cmt_whatif_run {
    const struct cmt_ta_stats *stats; /* the model's; NULL: the device saw no request */
    uint64_t failures;
    bool has_failure;
    struct cmt_whatif_failure first;
    /* The model's peaks right after its first failure: what PyTorch's
     * max_memory_reserved() and max_memory_allocated() would say of a
     * program that stops at its first out-of-memory error. */
    uint64_t peak_reserved_at_failure, peak_allocated_at_failure;
    uint64_t served_recorded_failures; /* requests the recorded run failed, served here */
    uint64_t min_headroom;             /* least room left (limit - reserved) after a request; UINT64_MAX: unlimited */
    uint64_t min_headroom_ts;
};

struct cmt_whatif_device {
    int32_t ordinal;
    bool started;
    uint64_t total;        /* the DEVICE record's bytes; 0 unknown */
    uint64_t capacity;     /* the device the replay is given (total, or the capacity asked); 0: unlimited */
    /* followed through the run */
    uint64_t driver_live;  /* the process's device-resident bytes (the replay's account) */
    uint64_t recorded_reserved, recorded_peak; /* the recorded run's segments (tensors, cache off) */
    uint64_t context;      /* what no allocation explains, at the last sample */
    uint64_t context_max, others_max, outside_max; /* most ever: context, other allocations, both */
    uint64_t limit;        /* the room the cache has now (UINT64_MAX: unlimited) */
    uint64_t min_limit;    /* the least it had */
    uint64_t requests, releases, recorded_ooms;
    /* The recorded requests and releases in order, hashed (FNV-1a of each
     * size, stream and slot): two runs with the same digest asked for the
     * same tensors in the same order. */
    uint64_t digest;
    uint64_t streams[8];   /* the streams requests were made on (the first 8) */
    size_t n_streams;
    uint64_t allowed;      /* a memory fraction's limit found by a recorded OOM (0: none) */
    bool fraction_inferred;
    struct cmt_ta_allocator *model[CMT_WHATIF_MAX_SETTINGS];
    struct cmt_whatif_run run[CMT_WHATIF_MAX_SETTINGS];
};

enum cmt_whatif_source {
    CMT_WHATIF_NONE,     /* no tensor requests: nothing replayed */
    CMT_WHATIF_BLOCKS,   /* PyTorch's block layer */
    CMT_WHATIF_UNCACHED, /* PyTorch with its cache off: one cudaMalloc per tensor */
};

struct cmt_whatif {
    enum cmt_whatif_source source;
    /* settings[0] is the recorded run's (once known), then the ones asked;
     * a setting equal to one before it is not replayed again: same[i] is
     * the index of the first equal one. */
    struct cmt_ta_settings settings[CMT_WHATIF_MAX_SETTINGS];
    size_t n_settings;
    size_t same[CMT_WHATIF_MAX_SETTINGS];
    size_t n_asked;
    struct cmt_ta_settings asked[CMT_WHATIF_MAX_SETTINGS];
    uint64_t capacity;     /* asked for (0: each device's own) */
    /* the recorded settings: from the trace (format 2.4), else inferred */
    bool recorded_known;    /* the trace recorded them */
    bool recorded_inferred; /* expandable segments inferred from the first segment */
    bool recorded_unparsed; /* the recorded text could not be read (recorded_error says why) */
    char recorded_error[160];
    char recorded_text[CMT_TA_SETTINGS_TEXT];
    const char *recorded_variable; /* "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF" or NULL */
    /* staged on the reader's side (on_block_read), read on the replay's */
    bool staged_settings;
    /* per ordinal, before a device has requests */
    uint64_t context_by_ordinal[CMT_WHATIF_MAX_DEVICES];
    uint64_t total_by_ordinal[CMT_WHATIF_MAX_DEVICES]; /* the device's memory as its samples say */
    bool failed_by_ordinal[CMT_WHATIF_MAX_DEVICES]; /* a failed allocation since its last BLOCK record */
    bool staged_device[CMT_WHATIF_MAX_DEVICES];
    uint64_t staged_total[CMT_WHATIF_MAX_DEVICES];
    struct cmt_whatif_device devices[CMT_WHATIF_MAX_DEVICES];
    size_t n_devices;
    uint64_t devices_dropped; /* requests on devices past CMT_WHATIF_MAX_DEVICES */
    struct cmt_tensor_slots slots;
    uint32_t oom_slot;   /* a slot for requests the recorded run failed */
    uint64_t empty_caches_inferred;
    bool burst_open, burst_failed; /* segments being released, and whether a failed allocation came first */
    int32_t burst_device;
    uint32_t burst_tid;
    bool out_of_memory;
    struct cmt_phases *phases; /* optional: where failures happened */
    struct cmt_replay_observer observer;
};

/* The settings to try, parsed (cmt_ta_settings_parse); capacity 0: each
 * device's own. Returns 0, or -1 when out of memory. */
int cmt_whatif_init(struct cmt_whatif *w, const struct cmt_ta_settings *asked, size_t n_asked, uint64_t capacity);
void cmt_whatif_free(struct cmt_whatif *w);

/* The recorded settings: the text of the variable PyTorch read (NULL or ""
 * for the defaults; known false: the trace did not record them, inferred
 * later). Call before the first request. */
void cmt_whatif_set_recorded(struct cmt_whatif *w, const char *text, const char *variable, bool known);
/* An older trace: the first segment was an expandable segment's mapping. */
void cmt_whatif_infer_expandable(struct cmt_whatif *w, bool expandable);

/* The device's state for its requests (created at its first; total its
 * memory, 0 unknown); NULL past CMT_WHATIF_MAX_DEVICES. */
struct cmt_whatif_device *cmt_whatif_device(struct cmt_whatif *w, int32_t ordinal, uint64_t total);
/* The room the cache has now, from what the device holds outside it. */
void cmt_whatif_update_limit(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t ts);

/* A tensor request of the recorded run, served there (key: its address
 * then) or failed there (recorded_failed; key ignored). tid and stack say
 * where, for a failure. Returns 0, or -1 when out of memory. */
int cmt_whatif_request(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t key, uint64_t size,
                       uint64_t stream, uint64_t pool0, uint64_t pool1, uint64_t ts, uint32_t tid, uint64_t stack,
                       bool recorded_failed);
/* The tensor at key let go (FREE_REQUESTED), and its block settled
 * (FREE_COMPLETED): the key is free again. */
void cmt_whatif_release(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t key, uint64_t ts);
void cmt_whatif_complete(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t key, uint64_t ts);
/* empty_cache() on every device. */
void cmt_whatif_empty_cache(struct cmt_whatif *w, uint64_t ts);
/* A memory fraction's limit of allowed bytes found on the device. */
void cmt_whatif_set_allowed(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t allowed);

/* Follows r's BLOCK records (whatif_observer.c), phases optional (attached
 * before). Returns 0, or -1 when r has no room for another observer. */
int cmt_whatif_attach(struct cmt_whatif *w, struct cmt_replay *r, struct cmt_phases *phases);

/* The settings index whose results setting i shares. */
static inline size_t cmt_whatif_same(const struct cmt_whatif *w, size_t i)
{
    return w->same[i];
}

#endif
