/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_BLOCKS_REPORT_H
#define CUMEMTRACE_ANALYZER_BLOCKS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block_layer.h"
#include "oom_replay.h"

/* The block layer as the report shows it (docs/report.md, "Inside
 * PyTorch's cache"): per device the peak of the tensors with their call
 * sites (stacks that differ only in folded frames are one site), the cache's
 * reserved but unallocated bytes per segment class there, each failed
 * allocation with its two-layer verdict, and the tensors never released.
 * HTML and Perfetto read the same structure (render/), JSON names its fields
 * as below (render/blocks_json.c). */

struct cmt_frames;

struct cmt_blocks_site {
    uint64_t stack; /* canonical stack id */
    uint64_t bytes; /* block bytes */
    uint64_t blocks;
    uint64_t raw_stack; /* raw_leaks only: the stack as recorded */
    uint32_t suppression; /* suppressed only: index + 1 into the report's suppressions */
};

struct cmt_blocks_view {
    uint64_t ts;
    uint64_t allocated, reserved, requested;
    struct cmt_bl_class_state classes[CMT_BL_CLASS_COUNT];
    const char *class_name[CMT_BL_CLASS_COUNT]; /* for the renderers */
    struct cmt_blocks_site *sites; /* largest first */
    size_t n_sites;
};

struct cmt_blocks_oom {
    uint64_t request, rounded, device_free;
    uint64_t stack; /* canonical */
    uint32_t tid;   /* the thread of PyTorch's OOM record; its time is at.ts */
    uint64_t cache_free; /* reserved but unallocated then */
    enum cmt_bl_verdict verdict;
    const char *verdict_name; /* for the renderers */
    bool expandable_would_serve;
    char sentence[1024]; /* the verdict in words, no trailing period (the replay's facts added: oom_replay.h) */
    struct cmt_blocks_view at;
    /* What the report's replay of the usual settings found about it
     * (oom_replay.h; replay.on false without one): set once it is built. */
    struct cmt_oom_replay replay;
};

/* The tensors' (allocated) and the segments' (reserved) bytes over time,
 * downsampled at build time to at most CMT_BLOCKS_BUCKETS buckets of equal
 * width from the first change: each bucket's lowest, highest and last
 * bytes, a bucket without a change holding the one before's last. */
#define CMT_BLOCKS_BUCKETS 1024

struct cmt_blocks_cell {
    uint64_t allocated_min, allocated_max, allocated_last;
    uint64_t reserved_min, reserved_max, reserved_last;
};

struct cmt_blocks_series {
    size_t n;        /* buckets; 0: no change was recorded */
    uint64_t origin; /* absolute time of the first change */
    uint64_t width;  /* ns per bucket */
    struct cmt_blocks_cell *cells;
};

struct cmt_blocks_device {
    int32_t ordinal;
    uint64_t peak_allocated, peak_reserved;
    uint64_t allocated_at_exit, reserved_at_exit;
    uint64_t events;
    struct cmt_blocks_view peak;
    struct cmt_blocks_oom *ooms;
    size_t n_ooms;
    struct cmt_blocks_site *leaks; /* tensors never released, largest site first */
    size_t n_leaks;
    /* The same tensors by their own (unfolded) stacks, canonical site in
     * .stack and the stack as recorded in .raw_stack: folding can merge a
     * workspace PyTorch keeps to exit with an ordinary tensor of the same
     * operation, and suppressions must see each stack as recorded. */
    struct cmt_blocks_site *raw_leaks;
    size_t n_raw_leaks;
    uint64_t leak_blocks, leak_bytes;
    /* With the report's suppressions (report.h): leaks, leak_blocks and
     * leak_bytes are the tensors no suppression matched; those one did are
     * here, by call site and suppression, largest first (raw_leaks has them
     * all). */
    struct cmt_blocks_site *suppressed;
    size_t n_suppressed;
    uint64_t suppressed_blocks, suppressed_bytes;
    struct cmt_blocks_series series;
};

struct cmt_blocks_report {
    bool on;                /* the block layer was recorded */
    char version[64];       /* PyTorch's, "" unknown */
    char backend[32];
    /* The allocator's settings from the environment (format 2.4): "" unset;
     * settings_known false for an older trace, which did not record them. */
    bool settings_known;
    char alloc_conf[256], cuda_alloc_conf[256];
    bool expandable; /* either has expandable_segments:True */
    uint64_t events;
    uint64_t inconsistencies;
    struct cmt_bl_inconsistency first_inconsistency;
    struct cmt_blocks_device *devices;
    size_t n_devices;
    /* the whole process, summed over devices */
    uint64_t peak_allocated, peak_reserved, leak_blocks, leak_bytes;
    uint64_t suppressed_blocks, suppressed_bytes;
};

/* Builds the view of bl; frames canonicalise the stacks. Returns 0, or -1
 * when out of memory. */
int cmt_blocks_report_build(struct cmt_blocks_report *out, const struct cmt_block_layer *bl,
                            struct cmt_frames *frames);
void cmt_blocks_report_free(struct cmt_blocks_report *b);

#endif
