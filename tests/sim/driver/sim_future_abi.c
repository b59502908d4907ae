/* SPDX-License-Identifier: MIT */
/* A simulated future ABI: what a driver newer than the profiler would hand
 * out for cuMemAlloc and cuMemAllocAsync. The behaviour is today's; only the
 * entry points differ, which is what a profiler that intercepts
 * cuGetProcAddress must cope with. The library links with
 * -Bsymbolic-functions, so these calls cannot be diverted by an interposer. */
#include "simcuda.h"

CUresult cuMemAlloc_v3_sim(CUdeviceptr *dptr, size_t bytesize)
{
    return cuMemAlloc_v2(dptr, bytesize);
}

CUresult cuMemAllocAsync_v2_sim(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return cuMemAllocAsync(dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_v2_sim_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return cuMemAllocAsync_ptsz(dptr, bytesize, hStream);
}
