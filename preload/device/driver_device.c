/* SPDX-License-Identifier: MIT */
#include "driver_device.h"

#include <cudaTypedefs.h>

#include "device_cache.h"
#include "real_symbols.h"

int32_t cmt_driver_device(const void *sibling)
{
    int32_t device;
    if (cmt_device_cache_get(CMT_DEVICE_DRIVER, &device))
        return device;
    static PFN_cuCtxGetDevice_v2000 real;
    PFN_cuCtxGetDevice_v2000 fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        /* The name, not cuGetProcAddress: "cuCtxGetDevice" is the v1 ABI
         * in every libcuda, while cuGetProcAddress at the caller's version
         * may be the two-argument ABI CUDA 13.0 added. */
        fn = (PFN_cuCtxGetDevice_v2000)cmt_find_sibling("cuCtxGetDevice", sibling);
        if (!fn)
            return 0;
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    uint32_t epoch = cmt_device_cache_epoch();
    CUdevice answer = 0;
    if (fn(&answer) != CUDA_SUCCESS)
        return 0; /* no current context: not remembered */
    cmt_device_cache_put(CMT_DEVICE_DRIVER, (int32_t)answer, epoch);
    return (int32_t)answer;
}
