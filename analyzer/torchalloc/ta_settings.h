/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TA_SETTINGS_H
#define CUMEMTRACE_ANALYZER_TA_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PyTorch's caching allocator settings, as PYTORCH_CUDA_ALLOC_CONF (or
 * PYTORCH_ALLOC_CONF) spells them and PyTorch 2.11 reads them
 * (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp; docs/
 * design.md, "What if"): the keys that decide what the cache reserves, the
 * ones that do not (pinned host memory, locking) accepted and ignored, the
 * others refused as PyTorch refuses them. */

#define CMT_TA_MIB (1ull << 20)
#define CMT_TA_ROUNDUP_INTERVALS 16 /* 1 MiB .. 64 GiB, one per power of two */
#define CMT_TA_SETTINGS_TEXT 256

struct cmt_ta_settings {
    uint64_t max_split_size;              /* UINT64_MAX: no limit (the default) */
    uint64_t max_non_split_rounding_size; /* 20 MiB unless set (at least large_segment_size) */
    uint64_t large_segment_size;          /* 20 MiB unless set: what 1-10 MiB requests split */
    double garbage_collection_threshold;  /* 0: off */
    uint32_t roundup_power2_divisions[CMT_TA_ROUNDUP_INTERVALS]; /* 0: round to 512 bytes */
    bool expandable_segments;
    bool fraction_set;                    /* per_process_memory_fraction given and below 1 */
    double memory_fraction;
    /* The text as given, spaces dropped ("" for the defaults), and how
     * PyTorch would have to be told: "expandable_segments:True". */
    char text[CMT_TA_SETTINGS_TEXT];
};

/* The defaults: PYTORCH_CUDA_ALLOC_CONF unset. */
void cmt_ta_settings_default(struct cmt_ta_settings *s);

/* Parses a PYTORCH_CUDA_ALLOC_CONF value ("" or "default": the defaults).
 * Returns 0, or -1 with why in err: a key PyTorch does not know, a value it
 * refuses, or backend:cudaMallocAsync (a different allocator, not this
 * model's). */
int cmt_ta_settings_parse(const char *text, struct cmt_ta_settings *s, char *err, size_t errlen);

/* The settings' words for people: "the defaults" or the text. */
const char *cmt_ta_settings_label(const struct cmt_ta_settings *s);

/* garbage_collection_threshold is set but no memory fraction is: PyTorch
 * then never collects (it collects only under a fraction's limit). */
bool cmt_ta_settings_gc_inert(const struct cmt_ta_settings *s);

/* The divisions roundup_power2_divisions gives a request of size bytes
 * (its power-of-two interval, 1 MiB and below in the first, 64 GiB and up
 * in the last). */
uint32_t cmt_ta_settings_divisions(const struct cmt_ta_settings *s, uint64_t size);

#endif
