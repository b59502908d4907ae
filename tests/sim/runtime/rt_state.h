/* SPDX-License-Identifier: MIT */
#ifndef CUDART_SIM_STATE_H
#define CUDART_SIM_STATE_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "rt_driver.h"

/* Naming: a runtime-internal function that is still on the stack when the
 * runtime calls the driver (a helper shared by cudaMallocPitch and
 * cudaMalloc3D, by cudaMallocAsync and its _ptsz twin...) is named
 * __cudart_*, as NVIDIA's libcudart_static.a names its internals (__cudart123,
 * cudart::...). A program linked against the static archive has these frames
 * in its own executable, where a profiler can tell them from the user's
 * only by name; the rules that fold NVIDIA's runtime frames then fold the
 * simulator's too, and nothing in the profiler knows the simulator. */

/* Records `error` as the calling thread's last error (unless it is
 * cudaSuccess) and returns it: every runtime entry point returns through
 * this, which is what cudaGetLastError and cudaPeekAtLastError report. */
cudaError_t rt_return(cudaError_t error);

/* cudaGetLastError (returns and clears) and cudaPeekAtLastError. */
cudaError_t rt_last_error_take(void);
cudaError_t rt_last_error_peek(void);

/* rt_return of the runtime error a driver result maps to. */
cudaError_t rt_return_driver(CUresult result);

/* The calling thread's device (cudaSetDevice), 0 until it chooses one. */
int rt_selected_device(void);

/* Loads the driver if needed and makes sure the calling thread has a current
 * context: the one it already has (set through the driver API, or earlier by
 * the runtime), else the primary context of its selected device, retained
 * once per device for the life of the process as NVIDIA's runtime does. */
cudaError_t rt_ensure_context(void);

/* Registers the fork handlers of the primary-context lock (rt_state.c);
 * called once, right after the driver is loaded. */
void rt_state_install_fork_handlers(void);

/* Retains device's primary context if the runtime has not yet, makes it
 * current on the calling thread and selects the device for the thread. */
cudaError_t rt_use_device(int device);

#endif
