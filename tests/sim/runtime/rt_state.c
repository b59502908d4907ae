/* SPDX-License-Identifier: MIT */
/* Per-thread runtime state (last error, selected device) and the primary
 * contexts the runtime holds. */
#include "rt_state.h"

#include <pthread.h>
#include <stdbool.h>

#include "rt_errors.h"

/* The simulated driver has at most 8 devices; a larger ordinal is invalid. */
#define RT_MAX_DEVICES 8

static __thread cudaError_t last_error;
static __thread int selected_device;

static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[RT_MAX_DEVICES];

/* fork: held across it like the driver's state lock (sim_state.c). A thread
 * taking its first context while another forks otherwise leaves the child
 * with the lock of a thread it does not have (tests/e2e forker threaded hung
 * so). Taken before the driver's lock, as retain_primary takes them: the
 * handlers are registered when the runtime is loaded, right after it loaded
 * the driver (rt_driver.c), so after the driver's own, and prepare handlers
 * run last-registered first. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&primary_lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&primary_lock);
}

void rt_state_install_fork_handlers(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

cudaError_t rt_return(cudaError_t error)
{
    if (error != cudaSuccess)
        last_error = error;
    return error;
}

cudaError_t rt_return_driver(CUresult result)
{
    return rt_return(rt_error_from_driver(result));
}

int rt_selected_device(void)
{
    return selected_device;
}

cudaError_t rt_last_error_take(void)
{
    cudaError_t error = last_error;
    last_error = cudaSuccess;
    return error;
}

cudaError_t rt_last_error_peek(void)
{
    return last_error;
}

/* Retained once and kept: a reset destroys the context's contents but not
 * the retain, and the driver re-creates it on next use. */
static CUresult retain_primary(int device, CUcontext *ctx)
{
    CUresult result = CUDA_SUCCESS;
    pthread_mutex_lock(&primary_lock);
    if (!primary[device])
        result = rt_driver.cuDevicePrimaryCtxRetain(&primary[device], device);
    *ctx = primary[device];
    pthread_mutex_unlock(&primary_lock);
    return result;
}

cudaError_t rt_use_device(int device)
{
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return error;
    int count = 0;
    CUresult result = rt_driver.cuDeviceGetCount(&count);
    if (result != CUDA_SUCCESS)
        return rt_error_from_driver(result);
    if (device < 0 || device >= count || device >= RT_MAX_DEVICES)
        return cudaErrorInvalidDevice;
    CUcontext ctx;
    result = retain_primary(device, &ctx);
    if (result == CUDA_SUCCESS)
        result = rt_driver.cuCtxSetCurrent(ctx);
    if (result != CUDA_SUCCESS)
        return rt_error_from_driver(result);
    selected_device = device;
    return cudaSuccess;
}

cudaError_t rt_ensure_context(void)
{
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return error;
    CUcontext ctx = NULL;
    CUresult result = rt_driver.cuCtxGetCurrent(&ctx);
    if (result != CUDA_SUCCESS)
        return rt_error_from_driver(result);
    return ctx ? cudaSuccess : rt_use_device(selected_device);
}
