// SPDX-License-Identifier: MIT
// The test program of docs/guide.md's leak recipe: five growing requests
// (1 to 5 MiB) to the cache; the last buffer and the workspace are freed
// at the end, the first four buffers (10 MiB) leak.
#include "tensor_cache.h"

#include <cstdio>

int main()
{
    {
        demo::TensorCache cache;
        for (std::size_t mib = 1; mib <= 5; mib++)
            cache.get(mib << 20);
    }
    std::puts("cache_app done");
    return 0;
}
