/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_SHIM_H
#define CUMEMTRACE_PRELOAD_SHIM_H

/* Reads the configuration and installs the fork handlers, once. The
 * constructor calls it; so does the first hooked call, which can come first:
 * another preloaded library's constructor may allocate CUDA memory before
 * ours has run. */
void cmt_shim_ensure_loaded(void);

#endif
