/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_READ_PASSES_H
#define CUMEMTRACE_ANALYZER_READ_PASSES_H

#include <stdbool.h>
#include <stdint.h>

#include "frames.h"
#include "holder_pass.h"
#include "stack_holders.h"
#include "uncached_pass.h"

/* What the report needs of each stack's holder, followed during the
 * analysis's one reading (feed.h) instead of a reading of its own each:
 * each holder's own peak (holder_pass.h: the stacks classified on the
 * reading thread, the allocations counted by an observer of the replay) and
 * what-if of PyTorch without its cache (uncached_pass.h, on the reading
 * thread). The classes of stacks come
 * from stack_holders.h; whether a stack is one of PyTorch's tensors also
 * depends on the kind of its first allocation, which the pass notes as it
 * goes: what it answered is checked against the final answer once the
 * replay is over (cmt_read_passes_tensors_agree), and a report that finds
 * a difference reads the trace again, so the figures never depend on the
 * way they were computed. */
struct cmt_read_passes {
    struct cmt_stack_holders holders;
    bool holder_on;
    bool holder_attached; /* its replay side follows the replay (cmt_read_passes_holders_followed) */
    struct cmt_holder_pass holder;
    bool uncached_on;
    /* The uncached pass keeps a table of every device allocation: it runs
     * only in a process that had PyTorch's libraries loaded when it first
     * allocated (decided at the first event; a trace whose tensors the pass
     * did not follow is read again when the report finds some). */
    bool uncached_decided;
    struct cmt_whatif *uncached_w; /* taken by the report (cmt_read_passes_take_uncached) */
    struct cmt_uncached_pass uncached;
    uint32_t stack_id_limit; /* the replay's: larger ids are no stack */
    /* by stack id: the kind of its first successful allocation + 1, and
     * what the tensor question got (1: no, 2: yes) */
    uint8_t *first_kind, *answered;
    size_t cap;
    /* The stacks the holder pass asked about, in the order it first did
     * (the report asks its own frames in that order again, so that they
     * resolve, and warn, as when the report read the trace itself). */
    uint8_t *asked;
    size_t asked_cap;
    uint32_t *asked_order;
    size_t n_asked_order, asked_order_cap;
    bool out_of_memory;
};

/* Sets up the passes: holder peaks when holder_peaks, the uncached what-if
 * when w_settings (n_settings of them, capacity as cmt_whatif_init takes). */
int cmt_read_passes_init(struct cmt_read_passes *p, const struct cmt_trace_model *model,
                         const struct cmt_frames_options *frames, bool holder_peaks, bool uncached,
                         const struct cmt_ta_settings *w_settings, size_t n_settings, uint64_t capacity,
                         uint64_t stop_ts, uint32_t stack_id_limit);
/* The holder pass whose replay side (its observer, or alloc_views.h) must
 * follow the replay the events go to; NULL when the holders are not
 * followed. Say when it does (cmt_read_passes_holders_followed, before the
 * first event): until then the report reads the trace again for them. */
struct cmt_holder_pass *cmt_read_passes_holders(struct cmt_read_passes *p);
void cmt_read_passes_holders_followed(struct cmt_read_passes *p);
/* Each event as read (the reading thread), before the replay is handed it. */
/* (p is a struct cmt_read_passes: the signature of feed.h's on_read.) */
void cmt_read_passes_event(void *p, const struct cmt_event_in *e);
/* After the read. */
void cmt_read_passes_finish(struct cmt_read_passes *p);
void cmt_read_passes_free(struct cmt_read_passes *p);

/* The holders' own peaks, when the pass ran and its classes were the final
 * ones: NULL otherwise (the report reads the trace again). */
const struct cmt_holder_pass *cmt_read_passes_holder_peaks(const struct cmt_read_passes *p);
/* The stacks the holder pass asked about, in order (see asked_order). */
const uint32_t *cmt_read_passes_holder_asked(const struct cmt_read_passes *p, size_t *n);
/* The uncached what-if engine, for these settings, when every answer the
 * pass gave to "is this one of PyTorch's tensors" is tensor[stack] (n
 * stacks): handed over (the caller frees it as model/whatif_uncached.h
 * says). NULL when it cannot be used: the caller reads the trace again. */
struct cmt_whatif *cmt_read_passes_take_uncached(struct cmt_read_passes *p, const uint8_t *tensor, size_t n,
                                                 const struct cmt_ta_settings *settings, size_t n_settings,
                                                 uint64_t capacity);

#endif
