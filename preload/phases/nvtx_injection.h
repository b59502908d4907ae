/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_NVTX_INJECTION_H
#define CUMEMTRACE_PRELOAD_NVTX_INJECTION_H

/* When NVTX_INJECTION64_PATH names another tool (Nsight Systems), NVTX loads
 * that one and never calls us: says so once, a note in the trace and a
 * warning unless quiet. Called when the recorder has started. */
void cmt_nvtx_note_environment(void);

#endif
