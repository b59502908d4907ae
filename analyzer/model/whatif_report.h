/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_WHATIF_REPORT_H
#define CUMEMTRACE_ANALYZER_WHATIF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "frames.h"
#include "phases_view.h"

/* `cumemtrace whatif` and the report's "What if" (docs/report.md, "What
 * if"): per device, the recorded run as PyTorch counted it, then its tensor
 * requests replayed under the recorded settings and each other one (the
 * engine: analyses/whatif.h), with every figure a renderer prints and the
 * words it prints them with (sites, phases, verdicts) copied in. */

#define CMT_WHATIF_TEXT 512

/* The first request a setting could not serve. */
struct cmt_whatif_failure_view {
    uint64_t time_ns;            /* since the trace started */
    uint64_t request, rounded;   /* bytes asked, and as the allocator rounds them */
    uint64_t allocated, reserved; /* the model's, after it freed what it could */
    uint64_t limit;              /* what the cache could reserve in all then */
    uint64_t cache_free;         /* reserved but unallocated */
    const char *verdict;         /* "capacity", "fragmentation", "fraction" */
    uint64_t short_by;           /* capacity: bytes the tensors must shrink by to fit */
    bool recorded_failed;        /* the recorded run failed this request too */
    uint64_t stack;              /* canonical */
    char site[CMT_WHATIF_TEXT];  /* "train.py:42 (forward)"; "" without a stack */
    char phase[CMT_WHATIF_TEXT]; /* "step 3 > forward"; "" when none was open */
};

/* One setting replayed on one device. */
struct cmt_whatif_row {
    const char *label;           /* "expandable_segments:True", "the defaults" */
    const char *text;            /* the PYTORCH_CUDA_ALLOC_CONF value ("" for the defaults) */
    bool recorded;               /* the recorded run's own settings */
    bool asked;                  /* given with --set or a candidate of --compare (the recorded row too, when
                                  * one asked for equals it: settings replayed alike are one row) */
    bool gc_inert;               /* garbage_collection_threshold without a memory fraction */
    /* max_memory_reserved() and max_memory_allocated(): over the whole
     * replay, or, for a setting that runs out of memory, up to its first
     * failure (what a program that stops there would reach; the replay goes
     * on past it, as a program that catches the error: replay_peak_*) */
    uint64_t peak_reserved, peak_allocated, peak_reserved_ns;
    uint64_t replay_peak_reserved, replay_peak_allocated;
    uint64_t allocated_at_peak;
    uint64_t unallocated_at_peak[CMT_TA_CLASS_COUNT], reserved_at_peak[CMT_TA_CLASS_COUNT];
    uint64_t segments_made, segments_released, maps, mapped_bytes, unmaps, unmapped_bytes, expandable_segments;
    uint64_t requests, served_from_cache, retries, released_for_retry_bytes, gc_released_bytes,
        empty_cache_released_bytes;
    uint64_t served_recorded_failures;
    bool fits;                   /* no request failed */
    uint64_t failures;
    struct cmt_whatif_failure_view first;
    bool bounded;                /* the device's room is known */
    uint64_t min_headroom, min_headroom_ns; /* room left at the tightest moment */
    int64_t vs_recorded;         /* peak_reserved less the recorded peak */
};

struct cmt_whatif_device_view {
    int32_t ordinal;
    const char *name;            /* the DEVICE record's, "" unknown */
    uint64_t total;              /* its memory, 0 unknown */
    uint64_t capacity;           /* the device replayed on (total or --capacity), 0: unlimited */
    uint64_t outside_max, context_max, others_max; /* held outside PyTorch's cache, at most */
    uint64_t min_room;           /* the least the cache had room for (UINT64_MAX: unlimited) */
    uint64_t requests, releases, recorded_ooms;
    uint64_t digest;             /* of the recorded requests and releases in order (whatif.h) */
    size_t streams;              /* streams the requests were made on (8 at most counted) */
    /* the recorded run as PyTorch counted it (max_memory_reserved(),
     * max_memory_allocated()) */
    uint64_t recorded_peak_reserved, recorded_peak_allocated;
    bool fraction_inferred;
    uint64_t allowed;            /* the memory fraction's limit, inferred */
    struct cmt_whatif_row *rows; /* [0]: the recorded settings, then the asked ones */
    size_t n_rows;
    size_t best;                 /* the row that fits with the least reserve; SIZE_MAX: none fits */
    bool exact;                  /* the recorded settings replayed to PyTorch's own peak, to the byte */
};

struct cmt_whatif_report {
    const char *path;
    const char *source;          /* "blocks", "uncached", "none" */
    char reason[CMT_WHATIF_TEXT]; /* source "none": why nothing was replayed, and how to record what it needs */
    /* source "uncached": what replaying cudaMalloc/cudaFree calls as tensor
     * requests assumes; NULL otherwise */
    const char *assumes;
    const char *version;         /* PyTorch's, "" unknown */
    /* the recorded settings */
    bool settings_known, settings_inferred, settings_unparsed;
    const char *settings_variable; /* NULL: neither variable was set */
    char settings_text[CMT_TA_SETTINGS_TEXT];
    char settings_error[160];
    uint64_t capacity_asked;     /* --capacity, 0: none */
    uint64_t empty_caches;       /* empty_cache() calls found in the trace */
    struct cmt_whatif_device_view *devices;
    size_t n_devices;
    uint64_t devices_dropped;
    /* the segment classes' words, for the renderers */
    const char *class_key[CMT_TA_CLASS_COUNT];  /* "small", "large", "huge", "expandable" */
    const char *class_name[CMT_TA_CLASS_COUNT];
};

struct cmt_report;

/* What the replay of a cache-off trace assumes (source "uncached"). */
#define CMT_WHATIF_UNCACHED_ASSUMES                                                                                    \
    "each cudaMalloc PyTorch made for a tensor is that tensor's request, of the bytes it asked (with the cache off "   \
    "PyTorch asks cudaMalloc for the tensor's own size), and each cudaFree its release, done at once (with the cache " \
    "off PyTorch frees at once); every request on one stream (a cudaMalloc names none, so a program on several "      \
    "streams would keep a pool per stream and reserve more); the program asks for the same tensors in the same "     \
    "order with its cache on; PyTorch's tensors are told from its other allocations by their stacks"

/* Builds the view of a->whatif (NULL in a: source "none" with the reason).
 * frames name the failures' sites, phases (may be NULL) their phases;
 * report, when the view is part of one (its frames are frames), keeps each
 * stack's classes (cmt_report_cache), else they are decided anew.
 * Returns 0, or -1 when out of memory. */
int cmt_whatif_report_build(struct cmt_whatif_report *out, const struct cmt_analysis *a, const struct cmt_whatif *w,
                            struct cmt_frames *frames, const struct cmt_phases_view *phases,
                            struct cmt_report *report);
void cmt_whatif_report_free(struct cmt_whatif_report *x);

/* The trace shows PyTorch's caching allocator (its ALLOCATOR record, or
 * segments made by libc10_cuda.so): where the report says why nothing was
 * replayed when it has no block layer. */
bool cmt_whatif_pytorch_seen(const struct cmt_analysis *a, struct cmt_frames *frames, struct cmt_report *report);

/* The candidates `--compare` and the report try: the defaults, expandable
 * segments, max_split_size_mb 128 and 512, roundup_power2_divisions 4,
 * garbage_collection_threshold 0.6. */
size_t cmt_whatif_candidates(struct cmt_ta_settings *out, size_t max);

#endif
