/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_RUNTIME_DEVICE_H
#define CUMEMTRACE_PRELOAD_RUNTIME_DEVICE_H

#include <stdint.h>

/* The calling thread's current device as the CUDA runtime sees it (real
 * cudaGetDevice from the same library as sibling, a real runtime function),
 * or 0 when it cannot be asked. Called inside a hook, so the driver calls it
 * makes are not recorded. */
int32_t cmt_runtime_device(const void *sibling);

#endif
