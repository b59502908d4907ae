/* SPDX-License-Identifier: MIT */
#include "array_bytes.h"

#include <cuda.h>
#include <stdbool.h>

/* How a format stores its texels. */
struct format_layout {
    unsigned bytes_per_channel; /* plain formats: times the channel count */
    unsigned bytes_per_texel;   /* formats whose name fixes the channels */
    unsigned block_bytes;       /* block-compressed: bytes per 4x4 block */
    unsigned planar_num;        /* planar YUV: bytes per texel = luma bytes x num / 2 */
};

static struct format_layout layout_of(unsigned format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return (struct format_layout){.bytes_per_channel = 1};
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return (struct format_layout){.bytes_per_channel = 2};
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return (struct format_layout){.bytes_per_channel = 4};
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return (struct format_layout){.bytes_per_texel = 1};
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_YUY2:
        return (struct format_layout){.bytes_per_texel = 2};
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
    case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410:
        return (struct format_layout){.bytes_per_texel = 4};
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
    case CU_AD_FORMAT_Y416:
        return (struct format_layout){.bytes_per_texel = 8};
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        return (struct format_layout){.block_bytes = 8};
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
        return (struct format_layout){.block_bytes = 16};
    /* Planar YUV: a full-size luma plane plus chroma. 4:2:0 chroma is half
     * the luma bytes, 4:2:2 as much as luma, 4:4:4 twice. Luma is 1 byte a
     * texel for 8-bit formats, 2 for 10- and 16-bit ones. */
    case CU_AD_FORMAT_NV12:
        return (struct format_layout){.planar_num = 3};
    case CU_AD_FORMAT_P010:
    case CU_AD_FORMAT_P016:
        return (struct format_layout){.planar_num = 6};
    case CU_AD_FORMAT_NV16:
        return (struct format_layout){.planar_num = 4};
    case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216:
        return (struct format_layout){.planar_num = 8};
    case CU_AD_FORMAT_Y444_PLANAR8:
    case CU_AD_FORMAT_YUV444_8bit_SemiPlanar:
        return (struct format_layout){.planar_num = 6};
    case CU_AD_FORMAT_Y444_PLANAR10:
    case CU_AD_FORMAT_YUV444_16bit_SemiPlanar:
        return (struct format_layout){.planar_num = 12};
    default:
        return (struct format_layout){0};
    }
}

static bool multiply(uint64_t *total, uint64_t factor)
{
    return !__builtin_mul_overflow(*total, factor, total);
}

uint64_t cmt_array_bytes(unsigned format, unsigned channels, uint64_t width, uint64_t height, uint64_t depth)
{
    struct format_layout l = layout_of(format);
    uint64_t rows = height ? height : 1, layers = depth ? depth : 1;
    uint64_t total;
    if (l.block_bytes) {
        total = (width + 3) / 4;
        if (!multiply(&total, (rows + 3) / 4) || !multiply(&total, layers) || !multiply(&total, l.block_bytes))
            return 0;
        return total;
    }
    total = width;
    if (!multiply(&total, rows) || !multiply(&total, layers))
        return 0;
    if (l.bytes_per_channel)
        return multiply(&total, (uint64_t)l.bytes_per_channel * channels) ? total : 0;
    if (l.bytes_per_texel)
        return multiply(&total, l.bytes_per_texel) ? total : 0;
    if (l.planar_num)
        return multiply(&total, l.planar_num) ? total / 2 : 0;
    return 0;
}
