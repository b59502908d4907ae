/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TENSORS_REPORT_H
#define CUMEMTRACE_ANALYZER_TENSORS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frames.h"
#include "growth.h"
#include "tensor_pass.h"

/* PyTorch's tensors as the report leads with them when a trace has the
 * block layer (docs/report.md, "Tensors"): each device's tensors at their
 * peak by category with the cache's reserve beside, the same at each
 * phase's own peak and over time, growth per step and growth candidates
 * measured in tensors, the leak rule for tensors, and advice with the
 * figures it acts on. Built from the tensor pass (tensor_pass.h); other
 * models (the check, `whatif`) read it through the functions below.
 *
 * The leak rule for tensors (docs/check.md, "Tensors"): a call site leaks
 * when it kept tensors step after step (its live bytes at step ends keep
 * rising: growth.h's test over the step ends, with at least
 * CMT_GROWTH_MIN_SAMPLES of them, or, with fewer steps or none, over the
 * run's time intervals up to the work's end) and still held them when the
 * program's work ended (its last tensor allocation; what is freed after it
 * is the teardown: CPython's finalization frees module globals, a leaking
 * list among them, so exit decides nothing for a script). Its figures are
 * the tensors then (kept_bytes) and the rate. Every tensor alive at exit
 * that is no leak (parameters, buffers, optimizer state, a loader's
 * tensors, workspaces) is listed as alive at exit, not a leak. */

struct cmt_tensor_site_row {
    uint64_t stack;        /* canonical */
    uint8_t origin;        /* enum cmt_tensor_origin, of its first tensor */
    uint64_t live_bytes, live_count, live_requested; /* alive at exit */
    uint64_t kept_bytes, kept_count; /* live when the program's work ended */
    uint64_t allocs, frees;
    struct cmt_growth_verdict verdict; /* over step ends (per_step) or intervals */
    bool per_step;         /* verdict.rate is bytes per step, else bytes per second */
    bool growing;          /* verdict.candidate */
    bool leak;             /* growing, held when the work ended, and no suppression matched */
    uint32_t suppression;  /* index + 1 into the report's suppressions of the one that set it aside */
};

/* One piece of advice: the category it acts on, its bytes at the peak,
 * their share of the tensors' peak, the call site holding most of them,
 * and the sentence (no trailing period). */
struct cmt_tensor_advice {
    enum cmt_tensor_category category;
    int32_t device;
    uint64_t bytes;
    double share; /* of the device's memory at the tensors' peak (categories' sum) */
    uint64_t stack; /* canonical; 0: none named */
    char text[640];
};

#define CMT_TENSOR_ADVICE_MAX 8

struct cmt_tensors_device_view {
    int32_t ordinal;
    const struct cmt_tensor_device *pass; /* peak, phase peaks, at exit, the chart's cells */
    uint64_t peak_total; /* the categories' sum at the peak (device memory then) */
    /* The tensors' call sites live at the peak (the block layer's snapshot)
     * holding most of each category's origin: activations and temporaries
     * of the program's code, gradients of backward, optimizer state of the
     * optimizer, parameters of a model's building. */
    uint64_t top_stack[CMT_CAT_COUNT];
    uint64_t top_bytes[CMT_CAT_COUNT];
};

struct cmt_tensors_report {
    bool on; /* the tensor pass ran */
    enum cmt_step_source step_source;
    uint64_t steps;
    /* the tensors' bytes at step ends, every device together */
    size_t n_samples;
    const uint64_t *sample_step, *sample_total;
    struct cmt_growth_verdict total_growth; /* per step; n < CMT_GROWTH_MIN_SAMPLES: not judged */
    struct cmt_tensors_device_view *devices;
    size_t n_devices;
    /* Call sites whose tensors grew (per step when there were enough steps,
     * else over time), fastest first. */
    struct cmt_tensor_site_row *growth;
    size_t n_growth;
    /* The leaks (kept step after step and held when the work ended, by
     * kept_bytes), then the other call sites alive at exit (by live_bytes),
     * largest first. A suppressed leak is in the second part. */
    struct cmt_tensor_site_row *alive;
    size_t n_alive;
    uint64_t leak_bytes, leak_count;       /* the leaks' kept figures */
    uint64_t suppressed_bytes, suppressed_count; /* kept but a suppression matched */
    uint64_t alive_bytes, alive_count;     /* every tensor alive at exit */
    uint64_t work_end_ts;                  /* the program's last tensor allocation */
    struct cmt_tensor_advice advice[CMT_TENSOR_ADVICE_MAX];
    size_t n_advice;
    const char *step_rule; /* how steps were found, in words */
    /* Names for the renderers (tensor_pass.h, tensor_origin.h). */
    const char *category_name[CMT_CAT_COUNT], *category_key[CMT_CAT_COUNT];
    const char *phase_name[CMT_TPHASE_COUNT];
    const char *origin_name[CMT_ORIGIN_COUNT], *origin_words[CMT_ORIGIN_COUNT];
};

struct cmt_blocks_report;

/* What the report hands the builder. */
struct cmt_tensors_report_input {
    const struct cmt_tensor_pass *pass;
    const struct cmt_blocks_report *blocks; /* the block layer's view (the peak's sites) */
    struct cmt_frames *frames;
    bool expandable; /* the recorded allocator settings have expandable_segments:True */
    /* The suppression of a recorded stack (index), or -1. */
    long (*suppression)(void *ctx, uint64_t stack);
    void *ctx;
};

/* Returns 0, or -1 when out of memory. */
int cmt_tensors_report_build(struct cmt_tensors_report *t, const struct cmt_tensors_report_input *in);
void cmt_tensors_report_free(struct cmt_tensors_report *t);

/* The categories at a device's tensor peak (NULL: no such device). For
 * `whatif` and the advice. */
const struct cmt_tensor_instant *cmt_tensors_peak(const struct cmt_tensors_report *t, int32_t device);
/* The bytes of one category at a device's tensor peak (0: none). */
uint64_t cmt_tensors_peak_bytes(const struct cmt_tensors_report *t, int32_t device, enum cmt_tensor_category c);
/* A phase's own peak of tensors on a device, by category (NULL: no such
 * device or the phase was never reached there). */
const struct cmt_tensor_instant *cmt_tensors_phase_peak(const struct cmt_tensors_report *t, int32_t device,
                                                        enum cmt_tensor_phase phase);

#endif
