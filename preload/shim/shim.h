/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_SHIM_H
#define CUMEMTRACE_PRELOAD_SHIM_H

/* Runs the load column of the lifecycle (stages.c) and installs the fork
 * handlers, once. The constructor calls it; so may code below the shim's
 * top that can run before the constructor: the recorder's start (another
 * preloaded library's constructor may allocate CUDA memory before ours has
 * run) and NVTX's injection. The one call upward between the shim's
 * folders (tests/layers/check_layers.py, profile shim, allows it by name). */
void cmt_shim_ensure_loaded(void);

#endif
