/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_STACK_HOLDERS_H
#define CUMEMTRACE_ANALYZER_STACK_HOLDERS_H

#include <stdbool.h>
#include <stdint.h>

#include "frames.h"
#include "memory_holder.h"
#include "trace_model.h"

/* The holder and the cache of each stack (memory_holder.h), decided on the
 * reading thread as the events name them, from the model read so far: a
 * stack's STACK record, its modules (modules_known), its frames and strings
 * are all written before the first event that names it, so the answer is
 * the one the whole model gives. What needs the classes while the trace is
 * read (the holders' own peaks, what-if of PyTorch without its cache) then
 * needs no second reading of the trace. A stack named before its record
 * (a damaged or hand-made trace) is noted: its class may differ from the
 * final model's, and the report reads the trace again for those figures. */
struct cmt_stack_holders {
    const struct cmt_trace_model *model;
    const struct cmt_frames_options *opt;
    struct cmt_frames *frames; /* over the model as it grows; made at the first stack */
    uint8_t *holder, *cache;   /* by stack id: class + 1; 0 not decided yet */
    size_t cap;
    uint32_t modules_known, stacks_known; /* what frames was last updated with */
    uint64_t first_early; /* the smallest stack id named before its record; UINT64_MAX: none */
    bool out_of_memory;
};

void cmt_stack_holders_init(struct cmt_stack_holders *h, const struct cmt_trace_model *model,
                            const struct cmt_frames_options *opt);
void cmt_stack_holders_free(struct cmt_stack_holders *h);
enum cmt_holder cmt_stack_holders_holder(struct cmt_stack_holders *h, uint64_t stack);
enum cmt_holder cmt_stack_holders_cache(struct cmt_stack_holders *h, uint64_t stack);
/* Whether every class handed out is the final model's (after the read). */
bool cmt_stack_holders_exact(const struct cmt_stack_holders *h);

#endif
