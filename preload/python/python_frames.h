/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PYTHON_FRAMES_H
#define CUMEMTRACE_PRELOAD_PYTHON_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* The Python frames of the calling thread, read from the interpreter's
 * memory (python_runtime.h says where): innermost first, as FRAME ids, cut
 * into the runs that one call of the evaluation loop executed (since 3.11 a
 * Python function called from Python runs in the same loop call; a call
 * through C code starts a new one). The thread's own frames only: nothing
 * another thread may change. */

#define CMT_PY_MAX_SEGMENTS CMT_MAX_STACK_DEPTH /* 3.9, 3.10: one per frame */

struct cmt_py_stack {
    uint16_t n;    /* frames in ids */
    uint16_t nseg; /* loop calls */
    uint16_t seg_end[CMT_PY_MAX_SEGMENTS]; /* segment k is ids[seg_end[k-1] .. seg_end[k]) */
    uint32_t ids[CMT_MAX_STACK_DEPTH];
};

/* At load (thread_block.h). */
void cmt_python_frames_init(void);

/* Fills s (s->n == 0: no Python frames: no interpreter, a thread without a
 * thread state, an interpreter not running or finalizing). At most max
 * frames. Inside a hook; may take the metadata lock to record a new
 * location. */
void cmt_python_collect(struct cmt_py_stack *s, unsigned max);

/* The stack to record: native frames ips[0..n) (innermost first) with each
 * evaluation-loop frame replaced by the Python frames it ran, in order;
 * Python frames whose loop frame the native walk did not reach come last
 * (when the depth limit cut it, in place of its outermost native frames:
 * at least a quarter of depth stays native). At most depth frames; returns
 * how many. */
unsigned cmt_python_merge(const struct cmt_py_stack *py, const uint64_t *ips, unsigned n, bool cut, uint64_t *out,
                          unsigned depth);

#endif
