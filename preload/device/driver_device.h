/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_DRIVER_DEVICE_H
#define CUMEMTRACE_PRELOAD_DRIVER_DEVICE_H

#include <stdint.h>

/* The device of the calling thread's current context, as the driver sees it:
 * the real cuCtxGetDevice (its v1 ABI, exported under that name) of the
 * libcuda that defines sibling, a real driver function we hold. 0 when the
 * thread has no current context or the driver cannot be asked. Called
 * inside a hook; it reaches the driver directly, never a hook. */
int32_t cmt_driver_device(const void *sibling);

#endif
