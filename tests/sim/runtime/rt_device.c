/* SPDX-License-Identifier: MIT */
/* Devices, versions, device-wide synchronisation and reset, and driver entry
 * points for the program. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "rt_errors.h"
#include "rt_state.h"

#define RT_RUNTIME_VERSION 13000

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return rt_return(cudaErrorInvalidValue);
    *runtimeVersion = RT_RUNTIME_VERSION;
    return cudaSuccess;
}

/* 0 without a usable driver, as documented. */
cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return rt_return(cudaErrorInvalidValue);
    rt_driver_load();
    *driverVersion = 0;
    if (rt_driver.cuDriverGetVersion)
        rt_driver.cuDriverGetVersion(driverVersion);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return rt_return(cudaErrorInvalidValue);
    *count = 0;
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuDeviceGetCount(count));
}

cudaError_t cudaSetDevice(int device)
{
    return rt_return(rt_use_device(device));
}

/* The device of the current context when there is one (it may have been set
 * through the driver API), else the thread's selection. */
static cudaError_t current_device(int *device)
{
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return error;
    CUcontext ctx = NULL;
    CUdevice current;
    if (rt_driver.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx && rt_driver.cuCtxGetDevice(&current) == CUDA_SUCCESS)
        *device = current;
    else
        *device = rt_selected_device();
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return rt_return(cudaErrorInvalidValue);
    return rt_return(current_device(device));
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuCtxSynchronize());
}

/* Destroys everything the device's primary context owns; the runtime keeps
 * its retain, and the next call brings the context back. */
cudaError_t cudaDeviceReset(void)
{
    int device;
    cudaError_t error = current_device(&device);
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuDevicePrimaryCtxReset(device));
}

/* cudaDeviceProp fields filled from one driver attribute each. */
#define INT_FIELD(field, attribute) {offsetof(struct cudaDeviceProp, field), attribute, sizeof(int)}
#define SIZE_FIELD(field, attribute) {offsetof(struct cudaDeviceProp, field), attribute, sizeof(size_t)}
static const struct {
    size_t offset;
    CUdevice_attribute attribute;
    size_t width;
} attribute_fields[] = {
    SIZE_FIELD(sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
    INT_FIELD(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
    INT_FIELD(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
    SIZE_FIELD(memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH),
    INT_FIELD(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
    INT_FIELD(maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
    INT_FIELD(maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
    INT_FIELD(maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
    INT_FIELD(maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
    INT_FIELD(maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
    INT_FIELD(maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
    SIZE_FIELD(totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY),
    INT_FIELD(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
    INT_FIELD(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    SIZE_FIELD(textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT),
    SIZE_FIELD(texturePitchAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT),
    INT_FIELD(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    INT_FIELD(integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED),
    INT_FIELD(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY),
    INT_FIELD(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS),
    INT_FIELD(ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
    INT_FIELD(pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
    INT_FIELD(pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    INT_FIELD(pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
    INT_FIELD(tccDriver, CU_DEVICE_ATTRIBUTE_TCC_DRIVER),
    INT_FIELD(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
    INT_FIELD(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING),
    INT_FIELD(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    INT_FIELD(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    INT_FIELD(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
    INT_FIELD(streamPrioritiesSupported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED),
    INT_FIELD(globalL1CacheSupported, CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED),
    INT_FIELD(localL1CacheSupported, CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED),
    SIZE_FIELD(sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
    INT_FIELD(regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
    INT_FIELD(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
    INT_FIELD(pageableMemoryAccess, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS),
    INT_FIELD(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS),
    INT_FIELD(computePreemptionSupported, CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED),
    INT_FIELD(cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH),
    SIZE_FIELD(sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    INT_FIELD(maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
    INT_FIELD(hostRegisterSupported, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED),
    INT_FIELD(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED),
    INT_FIELD(memoryPoolSupportedHandleTypes, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES),
};

/* Everything comes from the driver, as in NVIDIA's runtime: the name, total
 * memory, UUID and one attribute per numeric field. No context is needed. */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return rt_return(error);
    memset(prop, 0, sizeof *prop);
    CUresult result = rt_driver.cuDeviceGetName(prop->name, (int)sizeof prop->name, device);
    if (result == CUDA_SUCCESS)
        result = rt_driver.cuDeviceTotalMem(&prop->totalGlobalMem, device);
    if (result == CUDA_SUCCESS)
        result = rt_driver.cuDeviceGetUuid((CUuuid *)&prop->uuid, device);
    for (size_t i = 0; result == CUDA_SUCCESS && i < sizeof attribute_fields / sizeof attribute_fields[0]; i++) {
        int value;
        result = rt_driver.cuDeviceGetAttribute(&value, attribute_fields[i].attribute, device);
        char *field = (char *)prop + attribute_fields[i].offset;
        if (attribute_fields[i].width == sizeof(size_t)) {
            size_t wide = (size_t)value;
            memcpy(field, &wide, sizeof wide);
        } else {
            memcpy(field, &value, sizeof value);
        }
    }
    return rt_return_driver(result);
}

/* Driver entry points for the program, through the same cuGetProcAddress the
 * runtime itself uses. A missing symbol is not an error: funcPtr is NULL and
 * driverStatus says why, as documented. The flag and status values are
 * shared with the driver's. */
static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    if (!symbol || !funcPtr)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return rt_return(error);
    CUdriverProcAddressQueryResult status;
    CUresult result = rt_driver_lookup(symbol, funcPtr, (int)cudaVersion, flags, &status);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    return result == CUDA_ERROR_NOT_FOUND ? cudaSuccess : rt_return_driver(result);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, RT_RUNTIME_VERSION, flags, driverStatus);
}
