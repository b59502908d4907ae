/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_BLOCK_LAYER_H
#define CUMEMTRACE_ANALYZER_BLOCK_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"
#include "replay.h"

/* PyTorch's block layer replayed (format 2.1 BLOCK records; docs/design.md,
 * "Block layer"): per device the allocator's segments and the blocks inside
 * them, each block's size by the allocator's own rule (the request rounded
 * to 512 bytes; the rest of the free range split off only when at least 512
 * bytes remain in a 2 MiB small-pool segment, more than 1 MiB in a large
 * one), so that its peak allocated is torch.cuda.max_memory_allocated() and
 * its peak reserved max_memory_reserved(). Memory grows with the live
 * blocks, segments and call sites, not with the trace. */

#define CMT_BL_MAX_DEVICES 64
#define CMT_BL_SMALL_SEGMENT (2ull << 20)
#define CMT_BL_LARGE_SEGMENT (20ull << 20)

/* Segment size classes, as the allocator makes them: 2 MiB for requests up
 * to 1 MiB (the small pool), 20 MiB for requests under 10 MiB, the request
 * rounded to 2 MiB above (one segment per large tensor). */
enum cmt_bl_class { CMT_BL_CLASS_SMALL, CMT_BL_CLASS_LARGE, CMT_BL_CLASS_HUGE, CMT_BL_CLASS_COUNT };

struct cmt_bl_block {
    uint64_t addr;
    uint64_t size;      /* the block's bytes in its segment */
    uint64_t requested; /* the tensor's */
    uint64_t stack;
    uint64_t ts;
    uint64_t seq;       /* the device's allocations numbered from 1, in order */
    uint64_t tag;       /* the listener's own (cmt_block_layer_listen), 0 otherwise */
    uint32_t tid;       /* the thread of its ALLOC record */
    bool allocated;     /* false between FREE_REQUESTED and FREE_COMPLETED */
};

struct cmt_bl_segment {
    uint64_t addr, size;
    bool expandable; /* mapped (SEGMENT_MAP): the allocator splits any rest of 512 bytes or more */
};

/* Bytes of one call site (stack id) among live tensors. */
struct cmt_bl_site {
    uint64_t stack;
    uint64_t bytes;
    uint64_t blocks;
    uint64_t made; /* tensors the stack allocated so far (the device's site table only) */
};

struct cmt_bl_class_state {
    uint64_t segments;
    uint64_t reserved;
    uint64_t allocated; /* blocks' bytes, allocated or waiting for FREE_COMPLETED */
    uint64_t largest_free; /* the largest free range inside one segment of the class */
};

/* The cache at an instant: the peak, or a failed allocation. */
struct cmt_bl_snapshot {
    uint64_t ts;
    uint64_t allocated, reserved, requested;
    struct cmt_bl_class_state classes[CMT_BL_CLASS_COUNT];
    struct cmt_bl_site *sites; /* largest first */
    size_t n_sites;
};

/* A failed allocation seen by the allocator (TORCH_OOM), judged with both
 * layers. */
enum cmt_bl_verdict {
    CMT_BL_VERDICT_CAPACITY,      /* the tensors and the request exceed what the device has */
    CMT_BL_VERDICT_FRAGMENTATION, /* the cache held enough free bytes, in no range large enough */
    CMT_BL_VERDICT_OTHERS         /* the device's free bytes were taken by memory outside the cache */
};

struct cmt_bl_oom {
    uint64_t request;     /* bytes the tensor asked for */
    uint64_t rounded;     /* as the allocator rounds them */
    uint64_t device_free; /* what CUDA said was free */
    uint64_t stack;
    uint32_t tid;         /* the thread of the TORCH_OOM record (cmt_block_layer's event_tid) */
    enum cmt_bl_verdict verdict;
    bool expandable_would_serve; /* free in the cache + device free >= the request */
    struct cmt_bl_snapshot at;
};

/* The tensors' and the segments' bytes after a BLOCK record that changed
 * either (model/blocks_report.c downsamples them). */
struct cmt_bl_point {
    uint64_t ts, allocated, reserved;
};

struct cmt_bl_device {
    int32_t ordinal;
    struct cmt_bl_segment *segments; /* sorted by address */
    size_t n_segments, cap_segments;
    struct cmt_bl_block *blocks;     /* sorted by address */
    size_t n_blocks, cap_blocks;
    struct cmt_bl_site *sites;       /* live bytes per call site, open addressing on stack */
    size_t cap_sites, n_sites;
    uint64_t allocated, reserved, requested;
    uint64_t peak_allocated, peak_reserved;
    bool peak_pending;               /* a new peak whose snapshot is not taken yet */
    struct cmt_bl_snapshot peak;
    struct cmt_bl_oom *ooms;
    size_t n_ooms;
    uint64_t events;
    struct cmt_bl_point *points; /* in time order */
    size_t n_points, cap_points;
    uint64_t allocs; /* tensors allocated so far (the last block's seq) */
    uint64_t last_alloc_ts; /* of the latest tensor allocated */
};

/* Told of every tensor as it is allocated (after its block is placed and
 * counted) and as its free is requested (before it is uncounted): the
 * tensor pass (tensor_pass.h) follows the tensors' categories this way. The
 * block may move once the call returns; tag is the listener's to keep. */
struct cmt_bl_listener {
    void *ctx;
    void (*on_tensor)(void *ctx, const struct cmt_bl_device *d, struct cmt_bl_block *b, bool allocated, uint64_t ts);
};

struct cmt_bl_inconsistency {
    uint64_t ts;
    int32_t device;
    uint8_t api;
    uint64_t addr;
    char what[96];
};

struct cmt_block_layer {
    bool seen;        /* an ALLOCATOR record or a BLOCK record was read */
    bool on;          /* the ALLOCATOR record said on */
    struct cmt_bl_device devices[CMT_BL_MAX_DEVICES];
    size_t n_devices;
    uint64_t events;
    uint64_t inconsistencies;
    struct cmt_bl_inconsistency first_inconsistency;
    bool out_of_memory;
    uint32_t event_tid; /* the thread of the record being applied (block_observer.c sets it) */
    struct cmt_bl_listener listener; /* on_tensor NULL: none */
    struct cmt_replay_observer observer; /* cmt_block_layer_attach */
};

void cmt_block_layer_init(struct cmt_block_layer *bl);
void cmt_block_layer_free(struct cmt_block_layer *bl);
/* One BLOCK record, in time order. */
void cmt_block_layer_event(struct cmt_block_layer *bl, uint8_t api, int32_t device, uint64_t ts, uint64_t addr,
                           uint64_t size, uint64_t stack, const uint64_t aux[CMT_AUX_COUNT]);
/* Tells l of every tensor from now on (one listener; NULL on_tensor: none). */
void cmt_block_layer_listen(struct cmt_block_layer *bl, const struct cmt_bl_listener *l);
/* The end of the trace: a peak not yet followed by a decrease is taken. */
void cmt_block_layer_finish(struct cmt_block_layer *bl);
/* Follows the replay's BLOCK records (block_observer.c). Returns 0, or -1
 * when the replay has no room for another observer. */
int cmt_block_layer_attach(struct cmt_block_layer *bl, struct cmt_replay *r);

/* The size class of a segment of this size. */
enum cmt_bl_class cmt_bl_class_of(uint64_t segment_size);
const char *cmt_bl_class_name(enum cmt_bl_class c);
const char *cmt_bl_verdict_name(enum cmt_bl_verdict v);
/* The allocator's rounding of a request (round_size). */
uint64_t cmt_bl_round(uint64_t request);

/* Whether a live segment of device starts at addr (at the end of the
 * replay: the segments PyTorch's cache still held). */
bool cmt_bl_segment_at(const struct cmt_block_layer *bl, int32_t device, uint64_t addr);

/* Tensors never released (allocated at the end), largest site first; the
 * caller frees *sites. Returns the number of sites, or (size_t)-1 when out
 * of memory. */
/* A stack's row of the device's site table (live bytes and tensors, and
 * how many it made; its stack field holds the stack + 1), or NULL when it
 * allocated none there. */
const struct cmt_bl_site *cmt_bl_site_find(const struct cmt_bl_device *d, uint64_t stack);

size_t cmt_bl_leaks(const struct cmt_bl_device *d, struct cmt_bl_site **sites, uint64_t *blocks, uint64_t *bytes);

#endif
