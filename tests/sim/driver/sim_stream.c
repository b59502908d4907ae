/* SPDX-License-Identifier: MIT */
/* Streams and events. Every operation completes before its call returns, so
 * streams only record which device they belong to, and events only a time. */
#include <stdlib.h>
#include <time.h>

#include "sim_pool.h"
#include "sim_release.h"

struct CUstream_st {
    int device;
    unsigned flags;
};

struct CUevent_st {
    unsigned flags;
    bool recorded;
    struct timespec recorded_at;
};

static bool is_implicit_stream(CUstream stream)
{
    return stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

CUresult sim_stream_device(CUstream stream, int *device)
{
    if (is_implicit_stream(stream))
        return sim_current_device(device);
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)stream, SIM_OBJ_STREAM);
    if (!object)
        return CUDA_ERROR_INVALID_HANDLE;
    *device = object->device;
    return CUDA_SUCCESS;
}

void sim_stream_release(struct sim_object *object)
{
    free(object->data);
    sim_table_remove(&sim.objects, object);
}

void sim_event_release(struct sim_object *object)
{
    free(object->data);
    sim_table_remove(&sim.objects, object);
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS) {
        struct CUstream_st *stream = malloc(sizeof *stream);
        result = stream ? sim_register(SIM_OBJ_STREAM, (uint64_t)(uintptr_t)stream, 0, stream, device) : CUDA_ERROR_OUT_OF_MEMORY;
        if (result == CUDA_SUCCESS) {
            *stream = (struct CUstream_st){.device = device, .flags = Flags};
            *phStream = stream;
        } else {
            free(stream);
        }
    }
    sim_unlock();
    return result;
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)hStream, SIM_OBJ_STREAM);
    if (object)
        sim_stream_release(object);
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

/* See cuCtxSynchronize: synchronising trims the pools to their thresholds. */
static CUresult synchronize_stream(CUstream stream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_stream_device(stream, &device);
    if (result == CUDA_SUCCESS)
        sim_pools_release_above_threshold();
    sim_unlock();
    return result;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    return synchronize_stream(hStream);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    sim_count_per_thread_call();
    return synchronize_stream(hStream);
}

CUresult cuStreamQuery(CUstream hStream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_stream_device(hStream, &device);
    sim_unlock();
    return result;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS) {
        struct CUevent_st *event = calloc(1, sizeof *event);
        result = event ? sim_register(SIM_OBJ_EVENT, (uint64_t)(uintptr_t)event, 0, event, device) : CUDA_ERROR_OUT_OF_MEMORY;
        if (result == CUDA_SUCCESS) {
            event->flags = Flags;
            *phEvent = event;
        } else {
            free(event);
        }
    }
    sim_unlock();
    return result;
}

static struct CUevent_st *find_event(CUevent handle)
{
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)handle, SIM_OBJ_EVENT);
    return object ? object->data : NULL;
}

static CUresult record_event(CUevent hEvent, CUstream hStream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    struct CUevent_st *event = find_event(hEvent);
    result = event ? sim_stream_device(hStream, &device) : CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS) {
        clock_gettime(CLOCK_MONOTONIC, &event->recorded_at);
        event->recorded = true;
    }
    sim_unlock();
    return result;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return record_event(hEvent, hStream);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    sim_count_per_thread_call();
    return record_event(hEvent, hStream);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (find_event(hEvent))
        sim_pools_release_above_threshold();
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

CUresult cuEventQuery(CUevent hEvent)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (!find_event(hEvent))
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

static CUresult elapsed_time(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct CUevent_st *start = find_event(hStart), *end = find_event(hEnd);
    if (!start || !end || !start->recorded || !end->recorded ||
        ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else {
        double ms = (double)(end->recorded_at.tv_sec - start->recorded_at.tv_sec) * 1e3 +
                    (double)(end->recorded_at.tv_nsec - start->recorded_at.tv_nsec) / 1e6;
        *pMilliseconds = (float)ms;
    }
    sim_unlock();
    return result;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return elapsed_time(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return elapsed_time(pMilliseconds, hStart, hEnd);
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)hEvent, SIM_OBJ_EVENT);
    if (object)
        sim_event_release(object);
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}
