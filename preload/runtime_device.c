/* SPDX-License-Identifier: MIT */
#include "runtime_device.h"

#include <cuda_runtime_api.h>

#include "real_symbols.h"

typedef cudaError_t (*get_device_fn)(int *);

int32_t cmt_runtime_device(const void *sibling)
{
    static get_device_fn real;
    get_device_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (get_device_fn)cmt_find_sibling("cudaGetDevice", sibling);
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    int device = 0;
    if (!fn || fn(&device) != cudaSuccess)
        return 0;
    return device;
}
