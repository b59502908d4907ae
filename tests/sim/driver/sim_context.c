/* SPDX-License-Identifier: MIT */
/* Primary contexts and the per-thread context stack. */
#include <stdlib.h>

#include "sim_pool.h"
#include "sim_release.h"
#include "sim_state.h"

/* Real drivers have no fixed limit; 32 nested pushes is far beyond any test. */
#define CONTEXT_STACK_DEPTH 32

static __thread struct CUctx_st *context_stack[CONTEXT_STACK_DEPTH];
static __thread int context_depth;

/* Contexts made with cuCtxCreate: they share their device's memory (objects
 * belong to devices here), so they are only a device to be current on. A
 * slot is never reused, so a destroyed context stays invalid. */
#define CREATED_CONTEXTS 16
static struct CUctx_st created[CREATED_CONTEXTS];
static unsigned created_count; /* under the sim lock */

static bool is_created(CUcontext ctx)
{
    return ctx >= created && ctx < created + CREATED_CONTEXTS;
}

static bool is_context(CUcontext ctx)
{
    for (int d = 0; d < sim.device_count; d++)
        if (ctx == &sim.devices[d].primary)
            return true;
    return is_created(ctx) && __atomic_load_n(&ctx->active, __ATOMIC_ACQUIRE);
}

static CUresult activate(struct CUctx_st *ctx)
{
    struct sim_device *device = &sim.devices[ctx->device];
    if (sim.config.context_bytes > sim_device_free(device))
        return CUDA_ERROR_OUT_OF_MEMORY;
    device->context_charge = sim.config.context_bytes;
    ctx->active = true;
    return CUDA_SUCCESS;
}

static const struct {
    enum sim_object_kind kind;
    void (*release)(struct sim_object *object);
} context_owned[] = {
    {SIM_OBJ_DEVICE_MEMORY, sim_memory_release},
    {SIM_OBJ_MANAGED_MEMORY, sim_memory_release},
    {SIM_OBJ_HOST_MEMORY, sim_memory_release},
    {SIM_OBJ_ARRAY, sim_array_release},
    {SIM_OBJ_STREAM, sim_stream_release},
    {SIM_OBJ_EVENT, sim_event_release},
    {SIM_OBJ_MODULE, sim_module_release},
};

static void deactivate(struct CUctx_st *ctx)
{
    if (!ctx->active)
        return;
    for (size_t k = 0; k < sizeof context_owned / sizeof context_owned[0]; k++) {
        size_t count;
        uint64_t *keys = sim_table_collect_keys(&sim.objects, context_owned[k].kind, ctx->device, &count);
        for (size_t i = 0; i < count; i++) {
            struct sim_object *object = sim_table_find(&sim.objects, keys[i], context_owned[k].kind);
            if (object)
                context_owned[k].release(object);
        }
        free(keys);
    }
    sim.devices[ctx->device].context_charge = 0;
    ctx->active = false;
}

/* A retained primary context that was reset comes back on its next use, as
 * the runtime expects after cudaDeviceReset. */
static CUresult use(struct CUctx_st *ctx)
{
    if (ctx->active)
        return CUDA_SUCCESS;
    if (ctx->refcount == 0 || is_created(ctx))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return activate(ctx);
}

CUresult sim_current_device(int *device)
{
    if (context_depth == 0 || !context_stack[context_depth - 1])
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *ctx = context_stack[context_depth - 1];
    CUresult result = use(ctx);
    if (result == CUDA_SUCCESS)
        *device = ctx->device;
    return result;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (!device) {
        result = CUDA_ERROR_INVALID_DEVICE;
    } else {
        result = device->primary.active ? CUDA_SUCCESS : activate(&device->primary);
        if (result == CUDA_SUCCESS) {
            device->primary.refcount++;
            *pctx = &device->primary;
        }
    }
    sim_unlock();
    return result;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (!device) {
        result = CUDA_ERROR_INVALID_DEVICE;
    } else if (device->primary.refcount == 0) {
        result = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--device->primary.refcount == 0) {
        deactivate(&device->primary);
    }
    sim_unlock();
    return result;
}

/* The pre-11.0 ABI is identical; the real driver exports both names. */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (!device)
        result = CUDA_ERROR_INVALID_DEVICE;
    else
        deactivate(&device->primary); /* the retain count stays, as documented */
    sim_unlock();
    return result;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (!device) {
        result = CUDA_ERROR_INVALID_DEVICE;
    } else {
        *flags = device->primary.flags;
        *active = device->primary.active;
    }
    sim_unlock();
    return result;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (!device)
        result = CUDA_ERROR_INVALID_DEVICE;
    else
        device->primary.flags = flags;
    sim_unlock();
    return result;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = context_depth ? context_stack[context_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

/* Replaces the top of the stack; NULL pops it (documented behaviour). */
CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ctx) {
        if (context_depth)
            context_depth--;
        return CUDA_SUCCESS;
    }
    if (!is_context(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (context_depth == 0)
        context_depth = 1;
    context_stack[context_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ctx || !is_context(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (context_depth == CONTEXT_STACK_DEPTH)
        return CUDA_ERROR_INVALID_VALUE;
    context_stack[context_depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (context_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext ctx = context_stack[--context_depth];
    if (pctx)
        *pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    result = sim_current_device(device);
    sim_unlock();
    return result;
}

/* Everything the simulator does completes before the call returns, so a
 * synchronisation only has the side effect the real one has on memory:
 * pools give back what exceeds their release threshold. */
CUresult cuCtxSynchronize(void)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS)
        sim_pools_release_above_threshold();
    sim_unlock();
    return result;
}

/* The pre-11.4 ABI, still exported by the real driver; cuda.h declares it
 * only for its own internal use. */
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (context_depth == CONTEXT_STACK_DEPTH)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_device *device = sim_device_at(dev);
    if (!device) {
        result = CUDA_ERROR_INVALID_DEVICE;
    } else if (created_count == CREATED_CONTEXTS) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        struct CUctx_st *ctx = &created[created_count++];
        ctx->device = dev;
        ctx->refcount = 1;
        ctx->flags = flags;
        __atomic_store_n(&ctx->active, true, __ATOMIC_RELEASE);
        /* Made current on the calling thread, as documented. */
        context_stack[context_depth++] = ctx;
        *pctx = ctx;
    }
    sim_unlock();
    return result;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    if (params && (params->execAffinityParams || params->cigParams))
        return CUDA_ERROR_NOT_SUPPORTED;
    return cuCtxCreate_v2(pctx, flags, dev);
}

/* Only created contexts can be destroyed. One current on the calling thread
 * is popped from its stack; other threads that have it current get
 * CUDA_ERROR_CONTEXT_IS_DESTROYED from then on. */
CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (!ctx || !is_created(ctx) || !ctx->active) {
        result = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        __atomic_store_n(&ctx->active, false, __ATOMIC_RELEASE);
        ctx->refcount = 0;
        if (context_depth && context_stack[context_depth - 1] == ctx)
            context_depth--;
    }
    sim_unlock();
    return result;
}
