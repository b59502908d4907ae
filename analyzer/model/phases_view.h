/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_PHASES_VIEW_H
#define CUMEMTRACE_ANALYZER_PHASES_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "frames.h"
#include "growth.h"
#include "phases.h"

/* The phases and steps as the report prints them (docs/report.md, "Phases
 * and steps"), built from the phases observer's results (phases.h) when the
 * trace names a phase, mark or step: names resolved, where each device
 * peaked and each failure happened looked up, the growth per step judged. */

/* A call site whose live bytes at step ends keep rising (growth.h, with the
 * step as the unit of time: the rate is bytes per step). */
struct cmt_step_growth_row {
    uint64_t stack; /* canonical */
    struct cmt_growth_verdict verdict;
    uint64_t live_bytes, allocs, frees;
    bool tensors; /* measured in PyTorch's tensors (its block layer), not device bytes */
};

struct cmt_phases_view {
    const struct cmt_phase_node *nodes;
    size_t n_nodes;
    /* Per node: its name ("" for a nameless range; NULL for a step, whose
     * name is its step's) and its NVTX domain (NULL: the default). */
    const char **node_name, **node_domain;
    const struct cmt_phase_step *steps;
    size_t n_steps;
    const char **step_name; /* per step: its range's name; NULL for cumemtrace_step or a nameless range */
    /* Where each device's account peaked (the replay's peak event). */
    bool at_peak[CMT_MAX_DEVICES];
    struct cmt_phase_where peak[CMT_MAX_DEVICES];
    /* Where the replay's failure i happened (i < CMT_MAX_FAILURES_KEPT). */
    bool *at_failure;
    struct cmt_phase_where *failure;
    /* Live bytes at step ends in total, and the call sites growing step by
     * step, fastest first (growth_built false: out of memory, none listed). */
    struct cmt_growth_verdict total_growth;
    struct cmt_step_growth_row *growth;
    size_t n_growth;
    bool growth_built;
    /* With PyTorch's block layer: the total is its tensors' bytes at step
     * ends, its segments' rows are left out and its tensors' rows added
     * (report_build.c, tensor_step_growth). */
    bool growth_in_tensors;
    uint64_t marks;     /* cumemtrace marks */
    uint64_t unmatched; /* range ends with no open range to close */
};

/* NULL in *out when the trace names no phase, mark or step. Returns -1 when
 * out of memory. */
int cmt_phases_view_build(struct cmt_phases_view **out, const struct cmt_analysis *a, struct cmt_frames *frames);
void cmt_phases_view_free(struct cmt_phases_view *v);

/* "step 41 > forward > layer 7" for where something happened; "" when
 * nowhere. */
void cmt_phases_view_where_text(const struct cmt_phases_view *pv, const struct cmt_phase_where *w, char *buf,
                                size_t len);
/* The path of a node, root first ("forward > layer 7"); step names the
 * step node (0: "<step>"). */
void cmt_phases_view_node_path(const struct cmt_phases_view *pv, uint32_t node, uint32_t step, char *buf, size_t len);
/* A step's name: its range's, or "step N" for cumemtrace_step. */
void cmt_phases_view_step_name(const struct cmt_phases_view *pv, uint32_t step, char *buf, size_t len);

#endif
