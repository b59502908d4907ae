/* SPDX-License-Identifier: MIT */
#include <stddef.h>

#include "sim_errors.h"

static const struct sim_error_text *find(CUresult error)
{
    for (unsigned i = 0; i < sim_driver_error_count; i++)
        if (sim_driver_errors[i].code == error)
            return &sim_driver_errors[i];
    return NULL;
}

/* Like the real driver: usable before cuInit; unknown codes are
 * CUDA_ERROR_INVALID_VALUE with *pStr set to NULL. */
CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct sim_error_text *entry = find(error);
    *pStr = entry ? entry->text : NULL;
    return entry ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct sim_error_text *entry = find(error);
    *pStr = entry ? entry->name : NULL;
    return entry ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
