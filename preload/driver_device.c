/* SPDX-License-Identifier: MIT */
#include "driver_device.h"

#include <cudaTypedefs.h>

#include "real_symbols.h"

int32_t cmt_driver_device(const void *sibling)
{
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
    CUdevice device = 0;
    return fn(&device) == CUDA_SUCCESS ? (int32_t)device : 0;
}
