/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_USAGE_VIEWS_H
#define CUMEMTRACE_ANALYZER_USAGE_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#include "frames.h"
#include "replay.h"
#include "site_calls.h"
#include "thread_use.h"
#include "trace_model.h"

/* The views heaptrack users look for, ready for the renderers: call sites
 * by allocation calls and by short-lived allocations (site_calls.h), and
 * device memory by thread (thread_use.h). */

struct cmt_calls_row {
    uint64_t stack; /* canonical */
    uint8_t api, kind;
    uint64_t calls, alloc_bytes;
    uint64_t short_lived, short_bytes, short_life_ns;
};

struct cmt_calls_view {
    struct cmt_calls_row *rows; /* most calls first */
    size_t n;
    size_t *by_short;           /* indexes of rows with short-lived allocations, most first */
    size_t n_short;
    uint64_t calls, short_lived;
};

struct cmt_thread_view_row {
    struct cmt_thread_use_row use;
    const char *name; /* "" when the trace names none */
};

struct cmt_threads_view {
    struct cmt_thread_view_row *rows; /* highest peak first */
    size_t n;
};

/* Builds v from what the analysis followed; call sites merge by canonical
 * stack (frames.h). Returns 0, or -1 out of memory. */
int cmt_calls_view_build(struct cmt_calls_view *v, struct cmt_frames *frames, const struct cmt_replay *rp,
                         const struct cmt_site_calls *sc);
void cmt_calls_view_free(struct cmt_calls_view *v);
int cmt_threads_view_build(struct cmt_threads_view *v, const struct cmt_trace_model *m, const struct cmt_thread_use *t);
void cmt_threads_view_free(struct cmt_threads_view *v);

#endif
