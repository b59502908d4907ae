/* SPDX-License-Identifier: MIT */
/* Preloaded ahead of the profiler: its constructor allocates before the
 * profiler's constructor has run. */
#include <cuda_runtime_api.h>

static void *early;

__attribute__((constructor)) static void early_allocate(void)
{
    cudaMalloc(&early, 5u << 20);
}
