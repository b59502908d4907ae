/* SPDX-License-Identifier: MIT */
/* CUDA arrays and pitched allocations: what each charges to the device. */
#include "check.h"
#include "simcuda.h"

int main(void)
{
    struct simcuda_usage usage;

    /* 100 x 100 floats: 40000 bytes, rounded up to 40448. */
    struct cudaChannelFormatDesc one_float = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    cudaArray_t flat, cube;
    CHECK_RT(cudaMallocArray(&flat, &one_float, 100, 100, 0), cudaSuccess);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.arrays, 40448);

    /* 64 x 64 x 4 uchar4: 65536 bytes. */
    struct cudaChannelFormatDesc four_bytes = cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
    CHECK_RT(cudaMalloc3DArray(&cube, &four_bytes, (struct cudaExtent){.width = 64, .height = 64, .depth = 4}, 0), cudaSuccess);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.arrays, 40448 + 65536);
    CHECK_EQ(simcuda_live_allocations(0), 2);

    /* One-dimensional (height 0) and surface arrays. */
    cudaArray_t line;
    struct cudaChannelFormatDesc half2 = cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindFloat);
    CHECK_RT(cudaMallocArray(&line, &half2, 1000, 0, cudaArraySurfaceLoadStore), cudaSuccess);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.arrays, 40448 + 65536 + 4096);

    /* Three channels do not exist; width 0 is invalid. */
    cudaArray_t bad;
    struct cudaChannelFormatDesc three = cudaCreateChannelDesc(8, 8, 8, 0, cudaChannelFormatKindUnsigned);
    CHECK_RT(cudaMallocArray(&bad, &three, 10, 10, 0), cudaErrorInvalidChannelDescriptor);
    CHECK_RT(cudaMallocArray(&bad, &one_float, 0, 10, 0), cudaErrorInvalidValue);

    CHECK_RT(cudaFreeArray(flat), cudaSuccess);
    CHECK_RT(cudaFreeArray(cube), cudaSuccess);
    CHECK_RT(cudaFreeArray(line), cudaSuccess);
    CHECK_RT(cudaFreeArray(NULL), cudaSuccess);
    CHECK_RT(cudaFreeArray(flat), cudaErrorInvalidResourceHandle);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.arrays, 0);

    /* The driver sizes the formats it knows and says so for the others. */
    CUarray handle;
    CUDA_ARRAY_DESCRIPTOR compressed = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_BC1_UNORM, .NumChannels = 4};
    CHECK_CU(cuArrayCreate_v2(&handle, &compressed), CUDA_ERROR_NOT_SUPPORTED);
    CUDA_ARRAY3D_DESCRIPTOR packed = {.Width = 10, .Height = 10, .Depth = 10, .Format = CU_AD_FORMAT_UNORM_INT16X4, .NumChannels = 4};
    CHECK_CU(cuArray3DCreate_v2(&handle, &packed), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.arrays, 8192); /* 8000 bytes rounded up */
    CUDA_ARRAY3D_DESCRIPTOR described;
    CHECK_CU(cuArray3DGetDescriptor_v2(&described, handle), CUDA_SUCCESS);
    CHECK_EQ(described.Depth, 10);
    CHECK_CU(cuArrayDestroy(handle), CUDA_SUCCESS);

    /* Pitched memory: rows padded to 512 bytes. */
    void *pitched;
    size_t pitch = 0;
    CHECK_RT(cudaMallocPitch(&pitched, &pitch, 1000, 10), cudaSuccess);
    CHECK_EQ(pitch, 1024);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.plain, 10240);
    struct cudaPitchedPtr volume;
    CHECK_RT(cudaMalloc3D(&volume, (struct cudaExtent){.width = 513, .height = 4, .depth = 3}), cudaSuccess);
    CHECK_EQ(volume.pitch, 1024);
    CHECK_EQ(volume.xsize, 513);
    CHECK_EQ(volume.ysize, 4);
    CHECK_EQ((uintptr_t)volume.ptr, (uintptr_t)pitched + 10240);
    CHECK_EQ(simcuda_device_usage(0, &usage), 0);
    CHECK_EQ(usage.plain, 10240 + 1024 * 12);
    CUdeviceptr raw;
    size_t raw_pitch;
    CHECK_CU(cuMemAllocPitch_v2(&raw, &raw_pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE); /* element size 4, 8 or 16 */
    CHECK_RT(cudaFree(pitched), cudaSuccess);
    CHECK_RT(cudaFree(volume.ptr), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    return 0;
}
