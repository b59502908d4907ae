/* SPDX-License-Identifier: MIT */
#include "runtime_device.h"

#include <cuda_runtime_api.h>

#include "device_cache.h"
#include "real_symbols.h"

typedef cudaError_t (*get_device_fn)(int *);

int32_t cmt_runtime_device(const void *sibling)
{
    int32_t device;
    if (cmt_device_cache_get(CMT_DEVICE_RUNTIME, &device))
        return device;
    static get_device_fn real;
    get_device_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (get_device_fn)cmt_find_sibling("cudaGetDevice", sibling);
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    uint32_t epoch = cmt_device_cache_epoch();
    int answer = 0;
    if (!fn || fn(&answer) != cudaSuccess)
        return 0; /* not remembered: the next call asks again */
    cmt_device_cache_put(CMT_DEVICE_RUNTIME, answer, epoch);
    return answer;
}
