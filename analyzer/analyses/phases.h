/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_PHASES_H
#define CUMEMTRACE_ANALYZER_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* Phases and steps (docs/report.md, "Phases and steps"): an observer of the
 * replay (replay.h) that follows the CMT_REC_MARK records (format.h) and
 * says in which phase and step the peak, each failed allocation and each
 * allocation left live happened.
 *
 * Model. Push/pop ranges form a stack per thread; a pop closes the
 * innermost open range of its domain. Start/end ranges and cumemtrace_step
 * steps are process-wide. An allocation belongs to the ranges open on its
 * thread; a thread with none open (PyTorch's autograd threads run backward
 * for the main thread) borrows the stack of the thread that most recently
 * opened a range still open. It belongs to every open process-wide range as
 * well. Steps are the process's: an allocation on a thread whose stack
 * has no step counts in the step open on another thread. Figures are
 * device-resident bytes (the report's "Device N" accounts), summed over
 * devices.
 *
 * Phases are aggregated by name path, steps left out: "forward > layer 7"
 * gathers that phase of every step. A step is the outermost range on a
 * stack whose name has a step keyword followed by a number
 * (cmt_phase_step_number), or the span from one cumemtrace_step call to the
 * next (the last ends with the trace).
 *
 * Cost: nothing per event while no range is open; with ranges open, one
 * hash-table insert per allocation and a walk of the open ranges of its
 * thread (their depth) per allocation and release. Memory: the distinct
 * phase paths, one entry per step, and per call site CMT_STEP_SAMPLES words
 * for the per-step growth. */

#define CMT_PHASE_NONE UINT32_MAX
/* The name of a step range in a phase path: its own name varies by step. */
#define CMT_PHASE_STEP_NAME UINT32_MAX
/* Live bytes at step ends kept per call site and in total: when full,
 * every other sample is dropped and every other step end sampled. */
#define CMT_STEP_SAMPLES 64

struct cmt_phase_node {
    uint32_t parent;   /* node index; CMT_PHASE_NONE at the top */
    uint32_t name;     /* string id; CMT_PHASE_STEP_NAME for a step */
    uint32_t domain;   /* string id of its NVTX domain; 0: default */
    bool global;       /* a process-wide range (start/end, cumemtrace_step) */
    uint64_t instances;    /* times opened */
    uint64_t open_at_end;  /* of them never closed (the program ended or crashed inside) */
    uint64_t peak;         /* highest device-resident live bytes while open */
    uint64_t peak_ts;
    uint32_t peak_step;    /* step index + 1 of the instance that saw it; 0: none */
    uint64_t alloc_bytes, alloc_count;       /* allocated while open, nested phases included */
    uint64_t retained_bytes, retained_count; /* of those, still live when the instance closed */
    uint64_t open_retained_bytes, open_retained_count; /* the part of retained of the instances open at the end */
    uint64_t failures;                       /* failed allocations with this as innermost phase */
    uint64_t total_ns;
};

struct cmt_phase_step {
    uint32_t name;     /* string id; 0 for a cumemtrace_step step */
    uint64_t number;
    bool from_call;    /* cumemtrace_step */
    bool closed;       /* ended by its pop/end or the next cumemtrace_step */
    uint64_t start_ts, end_ts;
    uint64_t live_at_end; /* device-resident bytes live when it ended */
    uint64_t peak, peak_ts;
    uint64_t alloc_bytes, alloc_count;
    uint64_t retained_bytes, retained_count; /* allocated in the step, live at its end */
};

/* Where something happened: the innermost phase of the thread it was
 * attributed to, its step, and the innermost open process-wide range. */
struct cmt_phase_where {
    uint32_t node;   /* CMT_PHASE_NONE: no phase */
    uint32_t step;   /* step index + 1; 0: none */
    uint32_t global; /* node of the innermost open start/end range; CMT_PHASE_NONE: none */
};

struct cmt_phases;

/* NULL when out of memory. */
struct cmt_phases *cmt_phases_new(void);
/* Follows r from now on (an observer of r, replay.h; before the first
 * event); it names steps as marks are read and finishes at the replay's
 * end (cmt_replay_finish_observers calls cmt_phases_finish). Returns 0, or
 * -1 when r has no room for another observer. */
int cmt_phases_attach(struct cmt_phases *p, struct cmt_replay *r);
/* Closes what is still open at end_ts (open at the end); after
 * cmt_replay_finish. Returns 0, or -1 when out of memory. */
int cmt_phases_finish(struct cmt_phases *p, const struct cmt_replay *r, uint64_t end_ts);
void cmt_phases_free(struct cmt_phases *p);

/* The results. */
bool cmt_phases_any(const struct cmt_phases *p); /* the trace had ranges, marks or steps */
const struct cmt_phase_node *cmt_phases_nodes(const struct cmt_phases *p, size_t *n);
const struct cmt_phase_step *cmt_phases_steps(const struct cmt_phases *p, size_t *n);
/* Where device device's peak was reached (device -1 .. CMT_MAX_DEVICES - 1);
 * false when the trace has no such peak. */
bool cmt_phases_at_peak(const struct cmt_phases *p, int32_t device, struct cmt_phase_where *w);
/* Where the replay's failure number i (replay.h, failures[i]) happened. */
bool cmt_phases_at_failure(const struct cmt_phases *p, size_t i, struct cmt_phase_where *w);
/* Where thread tid is now, during the replay (an observer attached after
 * this one asks it about the record it is given); false when no phase,
 * step or range is open. */
bool cmt_phases_where_now(struct cmt_phases *p, uint32_t tid, struct cmt_phase_where *w);
/* Marks, and records the model could not place (a pop with nothing open, an
 * end of an unknown range). */
uint64_t cmt_phases_marks(const struct cmt_phases *p);
uint64_t cmt_phases_unmatched(const struct cmt_phases *p);

/* Live bytes at sampled step ends: the sampled steps (indices into the
 * steps, in order) and the total; per call site (stack id) its own, NULL
 * when the site never held memory at a sampled step end. */
size_t cmt_phases_step_samples(const struct cmt_phases *p, const uint32_t **steps, const uint64_t **total);
const uint64_t *cmt_phases_site_step_samples(const struct cmt_phases *p, uint32_t stack);

/* Marks the name of a CMT_REC_MARK event as a step's: aux3 (unused by the
 * format) gets bit 63 and the step number (cmt_phase_step_number). Called
 * by the reading side, which owns the model. */
struct cmt_trace_model;
struct cmt_event_in;
void cmt_phases_classify(const struct cmt_trace_model *m, struct cmt_event_in *e);

/* The step rule: the name has one of the words step, iteration, iter or
 * batch (any case, not inside a longer word on its left), then optional
 * separators (space _ - : # = .) and a decimal number, which is the step's
 * number: "step 41", "iteration_7", "epoch 2 step 10" (10), "Step#3". */
bool cmt_phase_step_number(const char *name, size_t len, uint64_t *n);

#endif
