/* SPDX-License-Identifier: MIT */
/* Modules and kernel launches, as harmless no-ops: the simulated device
 * models memory, not computation. A module is accepted without reading its
 * image, any function name resolves, and a launch checks its arguments and
 * runs nothing. Module globals take no device memory. */
#include <stdlib.h>
#include <string.h>

#include "sim_release.h"

struct CUfunc_st {
    struct CUfunc_st *next;
    char *name;
};

struct CUmod_st {
    struct CUfunc_st *functions;
};

static void free_module(struct CUmod_st *module)
{
    while (module->functions) {
        struct CUfunc_st *function = module->functions;
        module->functions = function->next;
        free(function->name);
        free(function);
    }
    free(module);
}

void sim_module_release(struct sim_object *object)
{
    free_module(object->data);
    sim_table_remove(&sim.objects, object);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS) {
        struct CUmod_st *created = calloc(1, sizeof *created);
        result = created ? sim_register(SIM_OBJ_MODULE, (uint64_t)(uintptr_t)created, 0, created, device) : CUDA_ERROR_OUT_OF_MEMORY;
        if (result == CUDA_SUCCESS)
            *module = created;
        else
            free(created);
    }
    sim_unlock();
    return result;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)hmod, SIM_OBJ_MODULE);
    if (object)
        sim_module_release(object);
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)hmod, SIM_OBJ_MODULE);
    if (!object) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else {
        struct CUmod_st *module = object->data;
        struct CUfunc_st *function = module->functions;
        while (function && strcmp(function->name, name) != 0)
            function = function->next;
        if (!function) {
            function = calloc(1, sizeof *function);
            char *copy = strdup(name);
            if (function && copy) {
                function->name = copy;
                function->next = module->functions;
                module->functions = function;
            } else {
                free(function);
                free(copy);
                function = NULL;
                result = CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        if (function)
            *hfunc = function;
    }
    sim_unlock();
    return result;
}

static CUresult launch(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ, unsigned blockX, unsigned blockY,
                       unsigned blockZ, CUstream stream)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gridX || !gridY || !gridZ || !blockX || !blockY || !blockZ || (uint64_t)blockX * blockY * blockZ > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    sim_lock();
    result = sim_stream_device(stream, &device);
    sim_unlock();
    return result;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                        unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    (void)sharedMemBytes, (void)kernelParams, (void)extra;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
                             CUstream hStream, void **kernelParams, void **extra)
{
    sim_count_per_thread_call();
    (void)sharedMemBytes, (void)kernelParams, (void)extra;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}
