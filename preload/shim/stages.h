/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_STAGES_H
#define CUMEMTRACE_PRELOAD_STAGES_H

#include <stddef.h>

/* The shim's lifecycle, owned in one place (stages.c): what each part of
 * the shim does at each moment of the process, in one ordered table. */

enum cmt_moment {
    CMT_AT_LOAD,          /* once: the constructor, or the first hooked call if it comes first */
    CMT_AT_TRACE_START,   /* a trace starts: under the start lock, before its first record */
    CMT_AT_TRACE_HEAD,    /* a trace starts: under the metadata lock, after the recorder's first records */
    CMT_AT_TRACE_STARTED, /* the trace is active: outside every lock */
    CMT_AT_EXIT,          /* the exit handler, while the driver still answers */
    CMT_AT_UNLOAD,        /* the shim's destructor */
    CMT_AT_FORK_PREPARE,  /* pthread_atfork's three: inside cmt_internal_enter/leave */
    CMT_AT_FORK_PARENT,
    CMT_AT_FORK_CHILD,
    CMT_MOMENTS
};

struct cmt_stage {
    const char *name;
    void (*at[CMT_MOMENTS])(void);
};

extern const struct cmt_stage cmt_stages[];
extern const size_t cmt_stage_count;

/* Runs moment m's column: top to bottom, except the fork's parent and
 * child, bottom to top (each part lets go of what it took in prepare, the
 * last taken first). */
void cmt_stages_run(enum cmt_moment m);

#endif
