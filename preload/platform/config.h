/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_CONFIG_H
#define CUMEMTRACE_PRELOAD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "page_populate.h"

#define CMT_PATH_TEMPLATE_MAX 1024

enum cmt_stack_cache_mode {
    CMT_STACK_CACHE_OFF = 0,
    CMT_STACK_CACHE_ON = 1,
    CMT_STACK_CACHE_CHECK = 2 /* every hit is compared with a full unwind; counts printed at exit */
};

enum cmt_device_cache_mode {
    CMT_DEVICE_CACHE_OFF = 0,
    CMT_DEVICE_CACHE_ON = 1,
    CMT_DEVICE_CACHE_CHECK = 2 /* the real function answers every time, compared with the memo */
};

/* Settings read once from the environment at load time (secure_getenv, so a
 * setuid program ignores them). Never changes afterwards: hooks read it
 * without locks. docs/environment.md lists every variable. */
struct cmt_config {
    bool disabled;            /* CUMEMTRACE_DISABLE=1: pure pass-through */
    bool quiet;               /* CUMEMTRACE_QUIET=1: no "writing trace to" line */
    bool free_stacks;         /* CUMEMTRACE_FREE_STACKS=1 */
    bool follow_fork;         /* CUMEMTRACE_FOLLOW_FORK (default 1) */
    bool python_frames;       /* CUMEMTRACE_PYTHON (default 1): Python frames in stacks (python_frames.h) */
    bool blocks;              /* CUMEMTRACE_BLOCKS (default 1): PyTorch's block layer (torch_blocks.h) */
    unsigned stack_depth;     /* CUMEMTRACE_STACK_DEPTH (default 64, 0 = none) */
    unsigned stack_cache;     /* CUMEMTRACE_STACK_CACHE: enum cmt_stack_cache_mode (default on) */
    unsigned device_cache;    /* CUMEMTRACE_DEVICE_CACHE: enum cmt_device_cache_mode (default on) */
    uint64_t max_size;        /* CUMEMTRACE_MAX_SIZE bytes, 0 = unlimited */
    unsigned sample_ms;       /* CUMEMTRACE_SAMPLE_MS (default 100, 0 = only at failures/start/exit) */
    unsigned clock;           /* CUMEMTRACE_CLOCK: enum cmt_clock_mode (default auto) */
    unsigned clock_test_skew_ns; /* CUMEMTRACE_CLOCK_TEST_SKEW_NS: tests only (clock.h) */
    unsigned populate;        /* CUMEMTRACE_POPULATE: enum cmt_populate_mode (default thread) */
    char output_template[CMT_PATH_TEMPLATE_MAX]; /* CUMEMTRACE_OUTPUT */
    char manifest_path[CMT_PATH_TEMPLATE_MAX];   /* CUMEMTRACE_MANIFEST: append the trace path here */
    char torch_layout[256];   /* CUMEMTRACE_TORCH_LAYOUT: the bridge's layout by hand (preload/torch/layout.h) */
};

extern struct cmt_config cmt_config;

/* Reads the environment into cmt_config. Malformed values keep their
 * defaults and produce one warning each on stderr. */
void cmt_config_load(void);

#endif
