/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TENSOR_PASS_H
#define CUMEMTRACE_ANALYZER_TENSOR_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "tensor_origin.h"

/* PyTorch's tensors followed through the run (docs/report.md, "Tensors"):
 * a second reading of a trace whose block layer was recorded, once the
 * first has told what each stack is (tensor_origin.h: needs the frames, so
 * it cannot run during the first replay, as memory holders cannot), giving
 *   - each tensor's category at every instant, and exactly at the tensors'
 *     peak and at the peak of each phase of a training step;
 *   - the steps: NVTX-marked ones from the phases (phases.h), else steps
 *     recognised from the tensors' own stacks (below);
 *   - per call site (stack id) its live tensor bytes at step ends and its
 *     floor per time interval, for growth (growth.h) measured in tensors.
 *
 * Categories. A tensor's origin (tensor_origin.h) decides at once for
 * parameters and libraries' workspaces; for the rest, what it outlived:
 *   program  -> activations (saved for backward) if alive when the next
 *               backward pass begins, temporaries if released before, the
 *               rest if its step ends first (no backward: inference, data);
 *               an activation still alive when its step ends is the rest
 *               from then on (kept across steps);
 *   backward -> gradients if alive when the backward pass ends (the next
 *               allocation of the program's code or of an optimizer),
 *               temporaries if released before;
 *   optimizer-> optimizer state if alive when the step's optimizer code
 *               ends, temporaries if released before;
 *   recompute-> activations (checkpointing's recomputation).
 * A run of allocations of one kind (program, backward, optimizer) is a
 * group; a group is decided when the next group of another kind begins or
 * its step ends, and each tensor of it with it (O(1) per event: bytes move
 * between categories group by group). Until then the chart counts the
 * group's tensors as MemTracker does (program: activations, backward:
 * temporaries, optimizer: optimizer state); the peaks' figures wait for the
 * decision, so each tensor live at a peak counts as what it turned out to
 * be. The cache's reserve (reserved but unallocated), libraries' own
 * device memory outside the cache (cuBLAS, cuDNN and NCCL holders) and any
 * other device memory outside it (the rest) complete the figures: at an
 * instant they add up to the process's device memory then.
 *
 * Steps without marks. A training step allocates in the program's code
 * (forward), then in the backward pass, then (usually) in the optimizer; a
 * recognised step ends when the program's code (or a model's building)
 * allocates again after a backward pass or an optimizer step was seen.
 * Gradient accumulation makes each forward and backward a step. A run
 * without backward passes nor optimizer steps (inference) has no
 * recognised steps. */

enum cmt_tensor_category {
    CMT_CAT_PARAMETERS = 0, /* and buffers */
    CMT_CAT_GRADIENTS,
    CMT_CAT_OPTIMIZER_STATE,
    CMT_CAT_ACTIVATIONS, /* saved for backward */
    CMT_CAT_TEMPORARIES,
    CMT_CAT_CUBLAS, /* libraries' workspaces: inside the cache and their own memory outside it */
    CMT_CAT_CUDNN,
    CMT_CAT_NCCL,
    CMT_CAT_OTHER,   /* the rest: kept across steps, data made outside steps, other device memory */
    CMT_CAT_RESERVE, /* the cache's reserved but unallocated bytes */
    CMT_CAT_COUNT
};

/* "parameters", "gradients", "optimizer state", "activations",
 * "temporaries", "cuBLAS workspaces", "cuDNN workspaces", "NCCL buffers",
 * "the rest", "the cache's reserve". */
const char *cmt_tensor_category_name(enum cmt_tensor_category c);
/* JSON keys: "parameters", "gradients", "optimizer_state", "activations",
 * "temporaries", "cublas", "cudnn", "nccl", "other", "reserve". */
const char *cmt_tensor_category_key(enum cmt_tensor_category c);

/* The phase of a training step an instant is in: that of the latest
 * tensor allocation's origin (parameters: setup; the program's code
 * outside steps: setup). */
enum cmt_tensor_phase {
    CMT_TPHASE_SETUP = 0,
    CMT_TPHASE_FORWARD,
    CMT_TPHASE_BACKWARD,
    CMT_TPHASE_OPTIMIZER,
    CMT_TPHASE_COUNT
};
const char *cmt_tensor_phase_name(enum cmt_tensor_phase p); /* "setup", "forward", "backward", "optimizer" */

struct cmt_tensor_figures {
    uint64_t bytes[CMT_CAT_COUNT];     /* blocks' bytes (torch.cuda.memory_allocated() counts these) */
    uint64_t requested[CMT_CAT_COUNT]; /* what the tensors asked for (numel x element size) */
};

/* A device's tensors at one instant. */
struct cmt_tensor_instant {
    bool seen;
    uint64_t ts;         /* absolute */
    enum cmt_tensor_phase phase; /* the phase it was in */
    uint64_t allocated;  /* the tensors' bytes */
    uint64_t reserved;   /* the cache's */
    uint64_t device;     /* the process's device memory then (driver view: the cache, libraries, the rest) */
    struct cmt_tensor_figures cats;
};

/* The categories over time, downsampled: per bucket the instant whose
 * device memory was highest in it (so the peak shows), a bucket without an
 * event holding the one before's last instant. */
#define CMT_TENSOR_BUCKETS 512
struct cmt_tensor_cell {
    uint64_t ts;                  /* absolute; of the instant kept */
    uint64_t bytes[CMT_CAT_COUNT]; /* provisional categories (above) */
};

struct cmt_tensor_device {
    int32_t ordinal;
    struct cmt_tensor_instant peak;                        /* the tensors' peak (max_memory_allocated()) */
    struct cmt_tensor_instant phase_peak[CMT_TPHASE_COUNT]; /* each phase's own peak of tensors */
    struct cmt_tensor_figures at_exit;                     /* tensors alive at the end, by category */
    uint64_t exit_ts;
    uint64_t origin_ts, bucket_ns; /* the chart's buckets: [origin + k bucket_ns, ...) */
    size_t n_cells;
    struct cmt_tensor_cell *cells;
};

enum cmt_step_source {
    CMT_STEPS_NONE = 0,
    CMT_STEPS_MARKED,    /* NVTX ranges or cumemtrace_step calls (phases.h) */
    CMT_STEPS_RECOGNISED /* from the tensors' stacks (above) */
};

/* Per call site (stack id). */
struct cmt_tensor_site {
    uint64_t allocs, frees;
    uint64_t live_bytes, live_count; /* at the end */
    uint64_t live_requested;
    /* live when the program's work ended: at its last tensor allocation,
     * before the teardown after it (CPython's finalization frees module
     * globals, a program's exit path its buffers) */
    uint64_t work_bytes, work_count;
    uint8_t origin; /* enum cmt_tensor_origin (of its first tensor) */
    uint32_t first_interval;   /* growth interval of its first tensor */
    uint64_t *step_samples;    /* live bytes at sampled step ends; NULL: never live at one */
    uint64_t *step_counts;     /* live tensors then */
    uint64_t *floors;          /* lowest live bytes per interval; NULL: no tensor */
};

#define CMT_TENSOR_INTERVALS 64
#define CMT_TENSOR_STEP_SAMPLES 64

struct cmt_tensor_pass {
    bool ran; /* the trace was read a second time */
    struct cmt_tensor_device *devices;
    size_t n_devices;
    enum cmt_step_source step_source;
    uint64_t steps;                 /* steps ended */
    /* Step ends sampled (every step until CMT_TENSOR_STEP_SAMPLES, then every
     * other one, and so on): the step's index, its end, and the tensors'
     * bytes then, every device together. */
    size_t n_samples;
    uint64_t sample_step[CMT_TENSOR_STEP_SAMPLES];
    uint64_t sample_ts[CMT_TENSOR_STEP_SAMPLES];
    uint64_t sample_total[CMT_TENSOR_STEP_SAMPLES];
    /* Growth intervals: CMT_TENSOR_INTERVALS of equal width from the first
     * tensor event to the program's last tensor allocation (the work's end:
     * what is released after it is teardown, not the run's figure). */
    uint64_t interval_origin, interval_ns;
    uint32_t n_intervals;
    uint64_t work_end_ts;
    struct cmt_tensor_site *sites; /* by stack id, n_sites = the model's stacks + 1 */
    size_t n_sites;
    bool out_of_memory;
};

/* What the pass needs to know of each stack, asked once per stack and
 * thread kind. */
struct cmt_tensor_pass_input {
    const struct cmt_analysis *analysis; /* the first reading: model, block layer, phases */
    void *ctx;
    /* The origin of a tensor of this stack allocated by this thread. */
    enum cmt_tensor_origin (*origin)(void *ctx, uint64_t stack, uint32_t tid);
    /* Where a device allocation outside the block layer counts: a
     * category (CMT_CAT_CUBLAS, ..., CMT_CAT_OTHER), or CMT_CAT_RESERVE for a
     * segment of PyTorch's cache (its tensors and reserve stand for it). */
    enum cmt_tensor_category (*outside)(void *ctx, uint64_t stack);
};

/* Reads the trace again (only when its block layer was seen). Returns 0,
 * or -1 when out of memory; a trace that cannot be opened again leaves
 * ran false. */
int cmt_tensor_pass_run(struct cmt_tensor_pass *p, const struct cmt_tensor_pass_input *in);
void cmt_tensor_pass_free(struct cmt_tensor_pass *p);

#endif
