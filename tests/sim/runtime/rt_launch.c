/* SPDX-License-Identifier: MIT */
/* What nvcc-generated host code needs: fat binary and kernel registration,
 * the <<<...>>> call configuration, and launches. The simulated device
 * simulates memory, not computation: launches check their configuration and
 * run nothing. Device variables get no device storage; managed variables get
 * zeroed host storage (the fat binary's initial values are not read), so host
 * code that touches them works. */
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>

#include "rt_nvcc_abi.h"
#include "rt_state.h"

struct rt_kernel {
    struct rt_kernel *next;
    const void *host_function;  /* the host stub's address: what launches name */
    const char *device_name;
};

struct rt_managed_var {
    struct rt_managed_var *next;
    void **host_pointer;        /* nvcc's host-side pointer to the variable */
    size_t size;
    void *storage;
};

struct rt_fat_binary {
    void *fat_cubin;            /* first: the handle is dereferenced as void ** */
    struct rt_kernel *kernels;
    struct rt_managed_var *managed;
    struct rt_fat_binary *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_fat_binary *fat_binaries;

void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct rt_fat_binary *binary = calloc(1, sizeof *binary);
    if (!binary)
        abort(); /* what a registration failure amounts to: the program cannot run */
    binary->fat_cubin = fatCubin;
    pthread_mutex_lock(&registry_lock);
    binary->next = fat_binaries;
    fat_binaries = binary;
    pthread_mutex_unlock(&registry_lock);
    return (void **)binary;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    struct rt_fat_binary *binary = (struct rt_fat_binary *)fatCubinHandle;
    pthread_mutex_lock(&registry_lock);
    for (struct rt_fat_binary **link = &fat_binaries; *link; link = &(*link)->next) {
        if (*link == binary) {
            *link = binary->next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    while (binary->kernels) {
        struct rt_kernel *kernel = binary->kernels;
        binary->kernels = kernel->next;
        free(kernel);
    }
    while (binary->managed) {
        struct rt_managed_var *var = binary->managed;
        binary->managed = var->next;
        free(var->storage);
        free(var);
    }
    free(binary);
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName, int thread_limit,
                            uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
    struct rt_fat_binary *binary = (struct rt_fat_binary *)fatCubinHandle;
    struct rt_kernel *kernel = malloc(sizeof *kernel);
    if (!kernel)
        abort();
    *kernel = (struct rt_kernel){.host_function = hostFun, .device_name = deviceName};
    pthread_mutex_lock(&registry_lock);
    kernel->next = binary->kernels;
    binary->kernels = kernel;
    pthread_mutex_unlock(&registry_lock);
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size,
                       int constant, int global)
{
    (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext, (void)size, (void)constant, (void)global;
}

void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress, const char *deviceName, int ext,
                              size_t size, int constant, int global)
{
    (void)deviceAddress, (void)deviceName, (void)ext, (void)constant, (void)global;
    struct rt_fat_binary *binary = (struct rt_fat_binary *)fatCubinHandle;
    struct rt_managed_var *var = calloc(1, sizeof *var);
    if (!var)
        abort();
    var->host_pointer = hostVarPtrAddress;
    var->size = size;
    pthread_mutex_lock(&registry_lock);
    var->next = binary->managed;
    binary->managed = var;
    pthread_mutex_unlock(&registry_lock);
}

/* Called on the first host access to a managed variable: gives each one its
 * storage. Returns nonzero on success. */
char __cudaInitModule(void **fatCubinHandle)
{
    struct rt_fat_binary *binary = (struct rt_fat_binary *)fatCubinHandle;
    char ok = 1;
    pthread_mutex_lock(&registry_lock);
    for (struct rt_managed_var *var = binary->managed; var; var = var->next) {
        if (!var->storage)
            var->storage = calloc(1, var->size ? var->size : 1);
        if (var->storage)
            *var->host_pointer = var->storage;
        else
            ok = 0;
    }
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

static struct rt_kernel *find_kernel(const void *host_function, const struct rt_kernel *handle)
{
    struct rt_kernel *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (struct rt_fat_binary *binary = fat_binaries; binary && !found; binary = binary->next)
        for (struct rt_kernel *kernel = binary->kernels; kernel && !found; kernel = kernel->next)
            if (kernel == handle || (host_function && kernel->host_function == host_function))
                found = kernel;
    pthread_mutex_unlock(&registry_lock);
    return found;
}

/* <<<grid, block, shared, stream>>> pushes a configuration that the kernel's
 * host stub pops; nesting happens when a launch argument itself launches. */
#define CALL_CONFIGURATION_DEPTH 16

struct call_configuration {
    dim3 grid;
    dim3 block;
    size_t shared_memory;
    cudaStream_t stream;
};

static __thread struct call_configuration configurations[CALL_CONFIGURATION_DEPTH];
static __thread int configuration_depth;

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream)
{
    if (configuration_depth == CALL_CONFIGURATION_DEPTH)
        return 1; /* nonzero: the generated code skips the launch */
    configurations[configuration_depth++] = (struct call_configuration){gridDim, blockDim, sharedMem, stream};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    if (configuration_depth == 0)
        return rt_return(cudaErrorMissingConfiguration);
    struct call_configuration *configuration = &configurations[--configuration_depth];
    *gridDim = configuration->grid;
    *blockDim = configuration->block;
    *sharedMem = configuration->shared_memory;
    *(cudaStream_t *)stream = configuration->stream;
    return cudaSuccess;
}

static cudaError_t launch(const struct rt_kernel *kernel, dim3 grid, dim3 block, cudaStream_t stream, PFN_cuStreamQuery_v2000 check_stream)
{
    if (!kernel)
        return rt_return(cudaErrorInvalidDeviceFunction);
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z || (unsigned long long)block.x * block.y * block.z > 1024)
        return rt_return(cudaErrorInvalidConfiguration);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    /* The stream must exist even though nothing will run on it. */
    return rt_return_driver(check_stream((CUstream)stream));
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    struct rt_kernel *found = find_kernel(hostFun, NULL);
    if (!found)
        return rt_return(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)found;
    return cudaSuccess;
}

/* The per-thread default stream and the legacy one are the same thing to a
 * device that runs nothing, so the _ptsz launches only differ by name. */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return rt_return(error);
    return launch(find_kernel(NULL, (const struct rt_kernel *)kernel), gridDim, blockDim, stream, rt_driver.cuStreamQuery);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                    cudaStream_t stream)
{
    return __cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    cudaError_t error = rt_driver_load();
    if (error != cudaSuccess)
        return rt_return(error);
    return launch(find_kernel(func, NULL), gridDim, blockDim, stream, rt_driver.cuStreamQuery);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    return cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream);
}
