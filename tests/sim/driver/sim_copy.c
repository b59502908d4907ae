/* SPDX-License-Identifier: MIT */
/* Copies and memsets. Device memory is host memory, so these are memcpy and
 * memset after checking that the device side lies in simulated memory (a
 * device range, the managed or pinned arenas, or mapped VMM space). The check
 * is by region, not by live allocation: like a GPU, the simulator does not
 * catch a copy into memory that was freed. The copy runs outside the lock. */
#include <string.h>

#include "sim_state.h"

enum side { HOST_SIDE, DEVICE_SIDE };

static CUresult check_copy(uint64_t dst, enum side dst_side, uint64_t src, enum side src_side, size_t count, CUstream stream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_stream_device(stream, &device);
    if (result == CUDA_SUCCESS && count &&
        ((dst_side == DEVICE_SIDE && !sim_is_device_accessible(dst, count)) ||
         (src_side == DEVICE_SIDE && !sim_is_device_accessible(src, count))))
        result = CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

static CUresult copy(uint64_t dst, enum side dst_side, uint64_t src, enum side src_side, size_t count, CUstream stream)
{
    CUresult result = check_copy(dst, dst_side, src, src_side, count, stream);
    if (result == CUDA_SUCCESS && count)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, count);
    return result;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy(dstDevice, DEVICE_SIDE, (uint64_t)(uintptr_t)srcHost, HOST_SIDE, ByteCount, NULL);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy((uint64_t)(uintptr_t)dstHost, HOST_SIDE, srcDevice, DEVICE_SIDE, ByteCount, NULL);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy(dstDevice, DEVICE_SIDE, srcDevice, DEVICE_SIDE, ByteCount, NULL);
}

/* Unified addressing: either side may be host or device memory. */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy(dst, HOST_SIDE, src, HOST_SIDE, ByteCount, NULL);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return copy(dst, HOST_SIDE, src, HOST_SIDE, ByteCount, hStream);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    sim_count_per_thread_call();
    return copy(dst, HOST_SIDE, src, HOST_SIDE, ByteCount, hStream);
}

static CUresult fill(CUdeviceptr dst, unsigned value, unsigned width, size_t count, CUstream stream)
{
    if (dst % width != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (count > SIZE_MAX / width)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = check_copy(dst, DEVICE_SIDE, 0, HOST_SIDE, count * width, stream);
    if (result != CUDA_SUCCESS)
        return result;
    if (width == 1) {
        memset((void *)(uintptr_t)dst, (int)value, count);
    } else if (width == 2) {
        uint16_t *p = (uint16_t *)(uintptr_t)dst;
        for (size_t i = 0; i < count; i++)
            p[i] = (uint16_t)value;
    } else {
        uint32_t *p = (uint32_t *)(uintptr_t)dst;
        for (size_t i = 0; i < count; i++)
            p[i] = value;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return fill(dstDevice, uc, 1, N, NULL);
}

CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return fill(dstDevice, us, 2, N, NULL);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return fill(dstDevice, ui, 4, N, NULL);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return fill(dstDevice, uc, 1, N, hStream);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    sim_count_per_thread_call();
    return fill(dstDevice, uc, 1, N, hStream);
}
