/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_OOM_VERDICT_H
#define CUMEMTRACE_ANALYZER_OOM_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

/* Why an allocation failed, decided from figures only (docs/fragmentation.md,
 * "Verdict rules": the rules are applied in the order of enum
 * cmt_verdict_rule, the first that holds decides). A pure function, so every
 * rule is tested on its own (tests/unit/analyses/test_forensics.c). */

enum cmt_verdict {
    CMT_VERDICT_NOT_OOM = 0,     /* the call failed, but not for lack of memory */
    CMT_VERDICT_CAPACITY,        /* the live data does not fit */
    CMT_VERDICT_FRAGMENTATION,   /* enough free memory in total, no range large enough */
    CMT_VERDICT_CACHING,         /* a pool or caching allocator held freed memory */
    CMT_VERDICT_OTHER_CONSUMERS, /* the device is used far beyond what this process holds */
    CMT_VERDICT_UNKNOWN,         /* no device sample to judge by */
    CMT_VERDICT_COUNT
};

enum cmt_verdict_rule {
    CMT_VRULE_NOT_OOM = 0,             /* R0: result is not CUDA_ERROR_OUT_OF_MEMORY */
    CMT_VRULE_RETRIED_AFTER_RELEASE,   /* R1: the thread released memory, then asked again */
    CMT_VRULE_NO_SAMPLE_SPAN,          /* R2: no sample; the span alone shows fragmentation */
    CMT_VRULE_NO_SAMPLE,               /* R3: no sample; nothing to judge by */
    CMT_VRULE_LARGER_THAN_DEVICE,      /* R4: request + allowance > total */
    CMT_VRULE_LIVE_PLUS_REQUEST,       /* R5: live + request + allowance > total */
    CMT_VRULE_POOLS_COVER,             /* R6: other pools' free bytes cover the shortfall */
    CMT_VRULE_OTHERS_COVER,            /* R7: memory of other consumers covers the shortfall */
    CMT_VRULE_OWN_POOL,                /* R8: the request's own pool held enough unused bytes */
    CMT_VRULE_POOLS_AND_OTHERS,        /* R9: none alone; the larger share names it */
    CMT_VRULE_ENOUGH_FREE,             /* R10: the device had the bytes, not in one range */
    /* A caching allocator's own record of the failure (PyTorch's block
     * layer: its OOM record) knows its cache, which the figures above see
     * only as live segments; it decides (cmt_oom_decide_in_cache). */
    CMT_VRULE_CACHE_FRAGMENTED,        /* R11: its free bytes (with the device's) covered the request, in no range */
    CMT_VRULE_CACHE_FULL,              /* R12: its free bytes and the device's fall short: the tensors fill it */
    CMT_VRULE_COUNT
};

/* CUDA_ERROR_OUT_OF_MEMORY and cudaErrorMemoryAllocation share this value. */
#define CMT_CUDA_OUT_OF_MEMORY 2

struct cmt_oom_figures {
    int32_t result;
    uint64_t request;
    /* this process's device-resident live bytes on the device then */
    uint64_t live;
    /* the context allowance: device memory taken by the CUDA context, module
     * images and libraries' own buffers, not counted as another consumer.
     * At most the memory in use that nothing else explains counts. */
    uint64_t allowance;
    /* the failure sample */
    bool has_sample;
    uint64_t free, total;
    uint64_t pool_slack;       /* reserved - used over every sampled pool of the device */
    uint64_t pool_slack_other; /* the same without the pool the request was made from */
    /* this process's address span on the device */
    uint64_t span_free, largest_hole;
    /* what the same thread did next */
    uint64_t released_after;   /* bytes it released before its next allocation */
    bool retried;              /* that next allocation asked for the same size */
};

struct cmt_verdict_result {
    enum cmt_verdict verdict;
    enum cmt_verdict_rule rule;
    uint64_t used;      /* total - free */
    uint64_t shortfall; /* request - free when positive */
    uint64_t unexplained; /* used - live - pool_slack when positive */
    uint64_t allowance;   /* the allowance applied: min(allowance, unexplained) */
    uint64_t others;      /* unexplained - allowance */
    /* capacity: bytes beyond what the device can hold (total less the
     * allowance): R4 the request's own, R5 the live data's and the
     * request's; 0 otherwise */
    uint64_t excess;
    /* the request alone does not fit (R4): no allocator setting can make it
     * fit, so none is suggested */
    bool no_setting_fits;
};

void cmt_oom_decide(const struct cmt_oom_figures *f, struct cmt_verdict_result *out);

/* The cache's own view of a failure (PyTorch's OOM record, block_layer.h):
 * the request as the allocator rounds it, its reserved but unallocated
 * bytes then, and the device's free bytes as CUDA reported them. */
struct cmt_cache_oom_figures {
    uint64_t request, cache_free, device_free;
};

/* The verdict of a failure the cache recorded itself: cmt_oom_decide's
 * figures (used, shortfall, others, ...), then R11 when the cache's free
 * bytes and the device's would have served the request (fragmentation
 * inside the cache: expandable segments serve it), else R12 (capacity: the
 * tensors fill the device; excess is what was missing), unless the
 * figures name other consumers (R7, R9): memory outside this process is
 * what the driver's view knows and the cache's does not. */
void cmt_oom_decide_in_cache(const struct cmt_oom_figures *f, const struct cmt_cache_oom_figures *c,
                             struct cmt_verdict_result *out);

const char *cmt_verdict_name(enum cmt_verdict v);  /* "capacity", "other-consumers"... */
const char *cmt_verdict_rule_id(enum cmt_verdict_rule r); /* "R5" */

#endif
