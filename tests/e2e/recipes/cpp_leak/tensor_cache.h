// SPDX-License-Identifier: MIT
// The "C++ CUDA library" of docs/guide.md's leak recipe: a cache that keeps
// one device buffer and grows it, forgetting the old one (the bug).
#pragma once
#include <cstddef>

namespace demo {

class TensorCache {
public:
    TensorCache();
    ~TensorCache();
    TensorCache(const TensorCache &) = delete;
    TensorCache &operator=(const TensorCache &) = delete;
    // A buffer of at least bytes; a larger request replaces the buffer.
    void *get(std::size_t bytes);

private:
    void *buffer_ = nullptr;
    std::size_t size_ = 0;
    void *workspace_ = nullptr;
};

} // namespace demo
