/* SPDX-License-Identifier: MIT */
/* The driver API on its own: initialisation and context rules, primary
 * context lifetime, handles, copies, and error names. */
#include <string.h>

#include "check.h"
#include "simcuda.h"

static void before_init(void)
{
    CUdeviceptr dptr;
    int version = 0;
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuDriverGetVersion(&version), CUDA_SUCCESS);
    CHECK_EQ(version, 13000);
    const char *text = NULL;
    CHECK_CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
    CHECK(strcmp(text, "out of memory") == 0);
    CHECK_CU(cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &text), CUDA_SUCCESS);
    CHECK(strcmp(text, "CUDA_ERROR_INVALID_CONTEXT") == 0);
    CHECK_CU(cuGetErrorName((CUresult)12345, &text), CUDA_ERROR_INVALID_VALUE);
    CHECK(text == NULL);
    CHECK_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuInit(0), CUDA_SUCCESS);
}

static void devices(void)
{
    int count = 0, value = -1;
    CUdevice device;
    char name[64];
    size_t bytes;
    CHECK_CU(cuDeviceGetCount(&count), CUDA_SUCCESS);
    CHECK_EQ(count, 1);
    CHECK_CU(cuDeviceGet(&device, 0), CUDA_SUCCESS);
    CHECK_CU(cuDeviceGet(&device, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK_CU(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    CHECK(strcmp(name, "cumemtrace Simulated GPU") == 0);
    CHECK_CU(cuDeviceTotalMem_v2(&bytes, 0), CUDA_SUCCESS);
    CHECK_EQ(bytes, 16384 * MiB);
    CHECK_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
    CHECK_EQ(value, 9);
    CHECK_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0), CUDA_SUCCESS);
    CHECK_EQ(value, 1);
    /* Unmodelled attributes read as absent. */
    CHECK_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 0), CUDA_SUCCESS);
    CHECK_EQ(value, 0);
    CHECK_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
}

static void contexts(void)
{
    CUdeviceptr dptr;
    CUcontext ctx, current, popped;
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    CHECK(current == NULL);
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    CHECK_CU(cuCtxPushCurrent_v2(ctx), CUDA_SUCCESS);
    CHECK_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    CHECK(current == ctx);
    CUdevice device = -1;
    CHECK_CU(cuCtxGetDevice(&device), CUDA_SUCCESS);
    CHECK_EQ(device, 0);
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_SUCCESS);
    CHECK_EQ(dptr, 0x500000000000ull);
    CHECK_CU(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    CHECK(popped == ctx);
    CHECK_CU(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxSetCurrent((CUcontext)&device), CUDA_ERROR_INVALID_CONTEXT);

    /* The last release destroys the context and everything it owns. */
    CHECK_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    unsigned flags;
    int active = 0;
    CHECK_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    CHECK_EQ(active, 1);
    CHECK_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    CHECK_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    CHECK_EQ(active, 0);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_SUCCESS);
    CHECK_EQ(dptr, 0x500000000000ull);
    CHECK_CU(cuMemFree_v2(dptr), CUDA_SUCCESS);
    CHECK_CU(cuMemFree_v2(dptr), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFree_v2(0), CUDA_ERROR_INVALID_VALUE);
}

/* Runs with device 0's primary context current (contexts() leaves it so). */
static void created_contexts(void)
{
    CUcontext primary, mine, current;
    CUdevice device = -1;
    CUdeviceptr dptr;
    CHECK_CU(cuCtxGetCurrent(&primary), CUDA_SUCCESS);
    CHECK_CU(cuCtxCreate(&mine, NULL, 0, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK_CU(cuCtxCreate(&mine, NULL, 0, 0), CUDA_SUCCESS);
    CHECK(mine != primary);
    CHECK_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    CHECK(current == mine);
    CHECK_CU(cuCtxGetDevice(&device), CUDA_SUCCESS);
    CHECK_EQ(device, 0);
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_SUCCESS);
    CHECK_CU(cuMemFree_v2(dptr), CUDA_SUCCESS);
    /* Destroying the current context pops it. */
    CHECK_CU(cuCtxDestroy(mine), CUDA_SUCCESS);
    CHECK_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    CHECK(current == primary);
    CHECK_CU(cuCtxDestroy(mine), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxSetCurrent(mine), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxPushCurrent_v2(mine), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT);
    /* Destroyed while current elsewhere in the stack: gone for good. */
    CHECK_CU(cuCtxCreate(&mine, NULL, 0, 0), CUDA_SUCCESS);
    CHECK_CU(cuCtxPushCurrent_v2(primary), CUDA_SUCCESS);
    CHECK_CU(cuCtxDestroy(mine), CUDA_SUCCESS);
    CHECK_CU(cuCtxPopCurrent_v2(&current), CUDA_SUCCESS);
    CHECK(current == primary);
    CHECK_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    CHECK(current == mine);
    CHECK_CU(cuMemAlloc_v2(&dptr, 4096), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_CU(cuCtxPopCurrent_v2(&current), CUDA_SUCCESS);
    CHECK_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    CHECK(current == primary);
}

static void streams_and_events(void)
{
    CUstream stream;
    CUevent start, end;
    float ms = -1;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_CU(cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    CHECK_CU(cuEventCreate(&end, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    CHECK_CU(cuEventElapsedTime_v2(&ms, start, end), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
    CHECK_CU(cuEventRecord(start, stream), CUDA_SUCCESS);
    CHECK_CU(cuEventRecord(end, stream), CUDA_SUCCESS);
    CHECK_CU(cuEventSynchronize(end), CUDA_SUCCESS);
    CHECK_CU(cuEventElapsedTime_v2(&ms, start, end), CUDA_SUCCESS);
    CHECK(ms >= 0);
    CHECK_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    CHECK_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    CHECK_CU(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventDestroy_v2(start), CUDA_SUCCESS);
    CHECK_CU(cuEventDestroy_v2(end), CUDA_SUCCESS);
    CHECK_CU(cuEventDestroy_v2(end), CUDA_ERROR_INVALID_HANDLE);
}

static void host_side_memory(void)
{
    CUdeviceptr managed;
    void *pinned;
    CHECK_CU(cuMemAllocManaged(&managed, 100, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    CHECK_CU(cuMemAllocManaged(&managed, 100, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemAllocHost_v2(&pinned, 100), CUDA_SUCCESS);
    CHECK_CU(cuMemHostAlloc(&pinned, 100, 0x80), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemsetD8_v2(managed, 5, 100), CUDA_SUCCESS);
    CHECK_CU(cuMemcpy((CUdeviceptr)(uintptr_t)pinned, managed, 100), CUDA_SUCCESS);
    CHECK_EQ(((unsigned char *)pinned)[99], 5);
    CHECK_CU(cuMemsetD32_v2(managed + 2, 1, 4), CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CHECK_CU(cuMemFreeHost((void *)(uintptr_t)managed), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFreeHost(pinned), CUDA_SUCCESS);
    CHECK_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
    size_t free_bytes, total;
    CHECK_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
    CHECK_EQ(free_bytes, total);
}

static void modules(void)
{
    static const char image[] = "not a real module: the simulator does not read it";
    CUmodule module;
    CUfunction function, same;
    CHECK_CU(cuModuleLoadData(&module, image), CUDA_SUCCESS);
    CHECK_CU(cuModuleGetFunction(&function, module, "kernel"), CUDA_SUCCESS);
    CHECK_CU(cuModuleGetFunction(&same, module, "kernel"), CUDA_SUCCESS);
    CHECK(function == same);
    CHECK_CU(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    CHECK_CU(cuLaunchKernel(function, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuModuleUnload(module), CUDA_SUCCESS);
    CHECK_CU(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
}

int main(void)
{
    before_init();
    devices();
    contexts();
    created_contexts();
    streams_and_events();
    host_side_memory();
    modules();
    CHECK_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    CHECK_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    return 0;
}
