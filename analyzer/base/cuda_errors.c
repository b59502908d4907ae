/* SPDX-License-Identifier: MIT */
#include "cuda_errors.h"

#include <stddef.h>
#include <string.h>

#include "cumemtrace/format.h"

struct error_name {
    int code;
    const char *runtime;
    const char *driver;
};

/* Values from driver_types.h and cuda.h of CUDA 13.0. */
static const struct error_name names[] = {
    {0, "cudaSuccess", "CUDA_SUCCESS"},
    {1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE"},
    {2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "cudaErrorCudartUnloading", "CUDA_ERROR_DEINITIALIZED"},
    {34, "cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY"},
    {35, "cudaErrorInsufficientDriver", NULL},
    {46, "cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE"},
    {101, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE"},
    {201, "cudaErrorDeviceUninitialized", "CUDA_ERROR_INVALID_CONTEXT"},
    {217, "cudaErrorPeerAccessUnsupported", "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    {304, "cudaErrorOperatingSystem", "CUDA_ERROR_OPERATING_SYSTEM"},
    {400, "cudaErrorInvalidResourceHandle", "CUDA_ERROR_INVALID_HANDLE"},
    {401, "cudaErrorIllegalState", "CUDA_ERROR_ILLEGAL_STATE"},
    {500, "cudaErrorSymbolNotFound", "CUDA_ERROR_NOT_FOUND"},
    {600, "cudaErrorNotReady", "CUDA_ERROR_NOT_READY"},
    {700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {709, "cudaErrorContextIsDestroyed", "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    {719, "cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED"},
    {800, "cudaErrorNotPermitted", "CUDA_ERROR_NOT_PERMITTED"},
    {801, "cudaErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED"},
    {900, "cudaErrorStreamCaptureUnsupported", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN"},
    {40, "cudaErrorSharedObjectSymbolNotFound", NULL},
};

const char *cmt_cuda_error_name(int code, bool driver_api)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code != code)
            continue;
        if (driver_api && names[i].driver)
            return names[i].driver;
        return names[i].runtime;
    }
    return driver_api ? "CUDA_ERROR_(unnamed)" : "cudaError(unnamed)";
}

bool cmt_api_is_driver(unsigned api)
{
    const char *n = cmt_api_name(api);
    return n[0] == 'c' && n[1] == 'u' && n[2] != 'd';
}
