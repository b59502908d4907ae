/* SPDX-License-Identifier: MIT */
/* Virtual memory management through the driver API (run with
 * SIMCUDA_CAPACITY=64MiB): physical memory counts against capacity, but not
 * against the contiguity of the device range; it is returned when the handle
 * is released and its last mapping is gone. */
#include <string.h>

#include "check.h"
#include "simcuda.h"

static CUmemAllocationProp device_prop(int device)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

int main(void)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0), CUDA_SUCCESS);
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    CHECK_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);

    CUmemAllocationProp prop = device_prop(0);
    size_t granularity = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    CHECK_EQ(granularity, 2 * MiB);
    CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
    CHECK_EQ(granularity, 2 * MiB);

    /* Physical memory needs budget, not a contiguous hole: with the device
     * range fragmented into 4 MiB holes, 8 MiB of physical memory fits. */
    CUdeviceptr plain[16];
    for (int i = 0; i < 16; i++)
        CHECK_CU(cuMemAlloc_v2(&plain[i], 4 * MiB), CUDA_SUCCESS);
    for (int i = 0; i < 16; i += 2)
        CHECK_CU(cuMemFree_v2(plain[i]), CUDA_SUCCESS);
    struct simcuda_usage usage;
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.largest_hole, 4 * MiB);
    CHECK_EQ(usage.free, 32 * MiB);
    CUdeviceptr wide;
    CHECK_CU(cuMemAlloc_v2(&wide, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CUmemGenericAllocationHandle scattered;
    CHECK_CU(cuMemCreate(&scattered, 8 * MiB, &prop, 0), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.vmm, 8 * MiB);
    CHECK_EQ(usage.free, 24 * MiB);
    CHECK_CU(cuMemRelease(scattered), CUDA_SUCCESS);
    for (int i = 1; i < 16; i += 2)
        CHECK_CU(cuMemFree_v2(plain[i]), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);

    CUmemGenericAllocationHandle handle, other;
    CHECK_CU(cuMemCreate(&handle, 1 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemCreate(&handle, 66 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemCreate(&handle, 8 * MiB, &prop, 0), CUDA_SUCCESS);
    CHECK_EQ(handle, 0xc0de000000000002ull);
    CHECK_CU(cuMemCreate(&other, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    CHECK_EQ(other, 0xc0de000000000003ull);
    CHECK_EQ(simcuda_device_used_bytes(0), 10 * MiB);
    size_t free_bytes, total;
    CHECK_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
    CHECK_EQ(free_bytes, 54 * MiB);

    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, 3 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CHECK_EQ(va, 0x700000000000ull);
    CUdeviceptr hinted;
    CHECK_CU(cuMemAddressReserve(&hinted, 4 * MiB, 0, 0x700100000000ull, 0), CUDA_SUCCESS);
    CHECK_EQ(hinted, 0x700100000000ull);

    /* Mapping: inside a reservation, not overlapping, within the handle. */
    CHECK_CU(cuMemMap(va, 8 * MiB, 0, handle, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemMap(va + 6 * MiB, 4 * MiB, 0, other, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemMap(va + 8 * MiB, 4 * MiB, 0, other, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemMap(va + 14 * MiB, 4 * MiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemMap(va + 8 * MiB, 2 * MiB, 0, 12345, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemMap(va + 8 * MiB, 2 * MiB, 0, other, 0), CUDA_SUCCESS);

    CUmemAccessDesc access = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK_CU(cuMemSetAccess(va, 10 * MiB, &access, 1), CUDA_SUCCESS);
    CHECK_CU(cuMemSetAccess(va, 12 * MiB, &access, 1), CUDA_ERROR_INVALID_VALUE);

    /* Mapped memory holds data; unmapped reserved space is not memory. */
    CHECK_CU(cuMemsetD32_v2(va + 9 * MiB, 0x12345678, 4), CUDA_SUCCESS);
    unsigned words[4];
    CHECK_CU(cuMemcpyDtoH_v2(words, va + 9 * MiB, sizeof words), CUDA_SUCCESS);
    CHECK_EQ(words[3], 0x12345678);
    CHECK_CU(cuMemcpyDtoH_v2(words, va + 10 * MiB, sizeof words), CUDA_ERROR_INVALID_VALUE);

    /* Released but still mapped: the memory stays until the unmap. */
    CHECK_CU(cuMemRelease(handle), CUDA_SUCCESS);
    CHECK_CU(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemMap(va + 12 * MiB, 2 * MiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(simcuda_device_used_bytes(0), 10 * MiB);
    CHECK_CU(cuMemUnmap(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE); /* splits a mapping */
    CHECK_CU(cuMemAddressFree(va, 16 * MiB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    CHECK_CU(cuMemUnmap(va, 8 * MiB), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_used_bytes(0), 2 * MiB);
    CHECK_CU(cuMemUnmap(va + 8 * MiB, 2 * MiB), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_used_bytes(0), 2 * MiB); /* `other` is not released yet */
    CHECK_CU(cuMemRelease(other), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    CHECK_CU(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);

    CHECK_CU(cuMemAddressFree(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE); /* not the reserved size */
    CHECK_CU(cuMemAddressFree(va, 16 * MiB), CUDA_SUCCESS);
    CHECK_CU(cuMemAddressFree(hinted, 4 * MiB), CUDA_SUCCESS);
    CHECK_CU(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CHECK_EQ(va, 0x700000000000ull);
    CHECK_CU(cuMemAddressFree(va, 2 * MiB), CUDA_SUCCESS);
    CHECK_EQ(simcuda_live_allocations(-1), 0);

    /* Host-located physical memory: usable through a mapping, no device
     * capacity taken, a handle like any other. */
    CUmemAllocationProp host_prop = device_prop(0);
    host_prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    host_prop.location.id = 0;
    CUmemGenericAllocationHandle host_handle;
    CHECK_CU(cuMemCreate(&host_handle, 4 * MiB, &host_prop, 0), CUDA_SUCCESS);
    CHECK_EQ(host_handle, 0xc0de000000000004ull);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    CHECK_EQ(simcuda_live_allocations(-1), 1);
    CHECK_EQ(simcuda_live_allocations(0), 0);
    CHECK_CU(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemMap(va, 4 * MiB, 0, host_handle, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemsetD32_v2(va, 0x5a5a5a5a, 4), CUDA_SUCCESS);
    CHECK_CU(cuMemcpyDtoH_v2(words, va, sizeof words), CUDA_SUCCESS);
    CHECK_EQ(words[0], 0x5a5a5a5a);
    CHECK_CU(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    CHECK_CU(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);
    CHECK_CU(cuMemRelease(host_handle), CUDA_SUCCESS);
    host_prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    host_prop.location.id = -1;
    CHECK_CU(cuMemCreate(&host_handle, 4 * MiB, &host_prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    CHECK_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    return 0;
}
