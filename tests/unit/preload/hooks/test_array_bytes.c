/* SPDX-License-Identifier: MIT */
/* Bytes of a CUDA array from its driver descriptor (preload/hooks/array_bytes.c),
 * the size the driver hooks record for cuArrayCreate and cuArray3DCreate. */
#include <cuda.h>

#include "array_bytes.h"
#include "test_util.h"

int main(void)
{
    /* Plain formats: bytes per channel x channels x texels; 0 height/depth
     * mean 1 (1D and 2D arrays). */
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_FLOAT, 4, 256, 128, 0), 16ull * 256 * 128);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_UNSIGNED_INT8, 2, 64, 32, 8), 2ull * 64 * 32 * 8);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_HALF, 1, 1000, 0, 0), 2000);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_SIGNED_INT16, 2, 10, 10, 0), 400);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_UNSIGNED_INT32, 1, 7, 0, 3), 84);
    /* Formats whose name fixes the channels ignore NumChannels. */
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_UNORM_INT8X4, 4, 100, 100, 0), 40000);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_SNORM_INT16X4, 4, 100, 1, 0), 800);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_UNORM_INT_101010_2, 4, 16, 16, 0), 1024);
    /* Block-compressed: 4x4 blocks, partial blocks count whole. */
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_BC1_UNORM, 4, 256, 256, 0), 64ull * 64 * 8);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_BC7_UNORM, 4, 5, 5, 0), 2ull * 2 * 16);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_BC4_SNORM, 1, 4, 0, 2), 1ull * 1 * 2 * 8);
    /* Planar YUV: NV12 is 1.5 bytes a texel, P016 3, NV16 2, Y444 16-bit 6. */
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_NV12, 3, 1920, 1080, 0), 1920ull * 1080 * 3 / 2);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_P016, 3, 1920, 1080, 0), 1920ull * 1080 * 3);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_NV16, 3, 64, 64, 0), 64ull * 64 * 2);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_YUV444_16bit_SemiPlanar, 3, 8, 8, 0), 8ull * 8 * 6);
    /* Packed YUV. */
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_YUY2, 2, 640, 480, 0), 640ull * 480 * 2);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_Y416, 4, 10, 10, 0), 800);
    /* Unknown formats and overflow: 0, never a made-up or wrapped size. */
    CHECK_EQ_U64(cmt_array_bytes(0x7777, 4, 256, 256, 0), 0);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_FLOAT, 4, 1ull << 40, 1ull << 20, 1ull << 10), 0);
    CHECK_EQ_U64(cmt_array_bytes(CU_AD_FORMAT_BC1_UNORM, 4, UINT64_MAX, UINT64_MAX, 0), 0);
    printf("ok\n");
    return 0;
}
