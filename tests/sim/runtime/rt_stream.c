/* SPDX-License-Identifier: MIT */
/* Streams and events. Handles are the driver's: cudaStream_t is CUstream and
 * cudaEvent_t is CUevent, as in NVIDIA's runtime. */
#include "rt_state.h"

static cudaError_t create_stream(cudaStream_t *pStream, unsigned int flags)
{
    if (!pStream)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    /* cudaStreamNonBlocking is CU_STREAM_NON_BLOCKING. */
    return rt_return_driver(rt_driver.cuStreamCreate((CUstream *)pStream, flags));
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return create_stream(pStream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return create_stream(pStream, flags);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuStreamDestroy((CUstream)stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuStreamSynchronize((CUstream)stream));
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuStreamSynchronize_ptsz((CUstream)stream));
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuStreamQuery((CUstream)stream));
}

static cudaError_t create_event(cudaEvent_t *event, unsigned int flags)
{
    if (!event)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    /* cudaEvent* flag values are CU_EVENT_*'s. */
    return rt_return_driver(rt_driver.cuEventCreate((CUevent *)event, flags));
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return create_event(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    return create_event(event, flags);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuEventRecord((CUevent)event, (CUstream)stream));
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuEventRecord_ptsz((CUevent)event, (CUstream)stream));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuEventSynchronize((CUevent)event));
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuEventElapsedTime(ms, (CUevent)start, (CUevent)end));
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuEventDestroy((CUevent)event));
}
