/* SPDX-License-Identifier: MIT */
#include <stddef.h>

#include "rt_errors.h"
#include "rt_state.h"

static const struct rt_error_text *find(cudaError_t error)
{
    for (unsigned i = 0; i < rt_runtime_error_count; i++)
        if (rt_runtime_errors[i].code == error)
            return &rt_runtime_errors[i];
    return NULL;
}

cudaError_t rt_error_from_driver(CUresult result)
{
    return find((cudaError_t)result) ? (cudaError_t)result : cudaErrorUnknown;
}

/* What NVIDIA's runtime answers for codes it does not know. */
#define UNRECOGNIZED "unrecognized error code"

const char *cudaGetErrorName(cudaError_t error)
{
    const struct rt_error_text *entry = find(error);
    return entry ? entry->name : UNRECOGNIZED;
}

const char *cudaGetErrorString(cudaError_t error)
{
    const struct rt_error_text *entry = find(error);
    return entry ? entry->text : UNRECOGNIZED;
}

cudaError_t cudaGetLastError(void)
{
    return rt_last_error_take();
}

cudaError_t cudaPeekAtLastError(void)
{
    return rt_last_error_peek();
}
