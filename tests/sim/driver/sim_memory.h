/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_MEMORY_H
#define SIMCUDA_MEMORY_H

#include "sim_state.h"

/* Frees whatever cuMemFree accepts at dptr: a plain, pool or managed
 * allocation. CUDA_ERROR_INVALID_VALUE for anything else. Caller holds the
 * lock. */
CUresult sim_memory_free(CUdeviceptr dptr);

#endif
