// SPDX-License-Identifier: MIT
#include "tensor_cache.h"

#include <cuda_runtime_api.h>
#include <cstdlib>

namespace demo {

namespace {
__attribute__((noinline)) void *device_alloc(std::size_t bytes)
{
    void *p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        std::abort();
    return p;
}
} // namespace

// A 2 MiB workspace for the cache's life: released by the destructor.
TensorCache::TensorCache() : workspace_(device_alloc(2u << 20)) {}

TensorCache::~TensorCache()
{
    cudaFree(buffer_);
    cudaFree(workspace_);
}

__attribute__((noinline)) void *TensorCache::get(std::size_t bytes)
{
    if (bytes > size_) {
        // The bug: the old buffer is not freed before it is replaced.
        buffer_ = device_alloc(bytes);
        size_ = bytes;
    }
    return buffer_;
}

} // namespace demo
