/* SPDX-License-Identifier: MIT */
/* The per-thread-default-stream twins of the stream-ordered hooks:
 * cudaMallocAsync_ptsz, cudaFreeAsync_ptsz, cudaMallocFromPoolAsync_ptsz. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda_runtime_api.h>

#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_device.h"
#include "runtime_hooks.h"
#include "torch_blocks.h"

#include "hooks_runtime_async.inc"
