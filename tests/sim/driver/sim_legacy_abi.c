/* SPDX-License-Identifier: MIT */
/* The pre-3.2 (v1) ABI of the allocation entry points, with 32-bit device
 * pointers and sizes. They exist as distinct functions, as in the real
 * driver, so a profiler can be tested on telling them apart. The simulated
 * device lives above 4 GiB, where a 32-bit device pointer cannot reach, so
 * the device-pointer ones honestly report CUDA_ERROR_NOT_SUPPORTED;
 * cuMemAllocHost returns a host pointer and works. */
#include "sim_state.h"

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    (void)dptr, (void)bytesize;
    CUresult result = sim_check_initialized();
    return result != CUDA_SUCCESS ? result : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    (void)dptr;
    CUresult result = sim_check_initialized();
    return result != CUDA_SUCCESS ? result : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes, unsigned int Height,
                         unsigned int ElementSizeBytes)
{
    (void)dptr, (void)pPitch, (void)WidthInBytes, (void)Height, (void)ElementSizeBytes;
    CUresult result = sim_check_initialized();
    return result != CUDA_SUCCESS ? result : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    return cuMemAllocHost_v2(pp, bytesize);
}
