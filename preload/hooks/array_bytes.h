/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_ARRAY_BYTES_H
#define CUMEMTRACE_PRELOAD_ARRAY_BYTES_H

#include <stdint.h>

/* Bytes of texel data in a CUDA array of the driver format `format`
 * (CUarray_format) with `channels` channels: width x max(height,1) x
 * max(depth,1) elements. Block-compressed formats count 4x4 blocks, planar
 * YUV formats their chroma planes. Layout padding the driver adds is not
 * known to the caller and not counted. 0 for a format this table does not
 * know, or when the product overflows. */
uint64_t cmt_array_bytes(unsigned format, unsigned channels, uint64_t width, uint64_t height, uint64_t depth);

#endif
