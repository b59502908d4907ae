/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include "rt_driver.h"

#include <dlfcn.h>
#include <pthread.h>

#include "rt_errors.h"
#include "rt_state.h"

struct rt_driver rt_driver;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_result;

CUresult rt_driver_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (rt_driver.get_proc_address)
        return rt_driver.get_proc_address(symbol, pfn, version, flags, status);
    CUresult result = rt_driver.get_proc_address_v1(symbol, pfn, version, flags);
    if (status)
        *status = result == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return result;
}

static bool fetch(const char *symbol, int version, cuuint64_t flags, void **slot)
{
    void *pfn = NULL;
    CUresult result = rt_driver_lookup(symbol, &pfn, version, flags, NULL);
    *slot = pfn;
    return result == CUDA_SUCCESS && pfn;
}

/* The driver is loaded with the runtime, and the fork handlers of both
 * are registered then, before the program can start a thread: a handler
 * registered at a thread's first CUDA call while another thread forks is
 * not run for that fork (glibc runs a handler registered during a fork's
 * prepare phase from the next fork on), and the child inherited the
 * simulator's lock held by a parent thread: 1 to 4 hangs in 30-50 runs of a
 * program forking while eight threads made their first calls (issue 32).
 * The driver's handlers come with its constructor; the runtime's are
 * registered after them, so that its prepare handler (they run
 * last-registered first) takes the primary-context lock before the
 * driver's lock, in the order retain_primary takes them. Loading the driver
 * does nothing else: cuInit and the entry points stay for the first call,
 * as a real runtime's do. A driver that cannot be loaded here is looked for
 * again at the first call, which reports it. */
__attribute__((constructor)) static void load_driver_with_runtime(void)
{
    rt_driver.library = dlopen("libcuda.so.1", RTLD_NOW);
    rt_state_install_fork_handlers();
}

static cudaError_t load(void)
{
    if (!rt_driver.library)
        rt_driver.library = dlopen("libcuda.so.1", RTLD_NOW);
    if (!rt_driver.library)
        return cudaErrorInsufficientDriver;
    PFN_cuGetProcAddress_v12000 bootstrap = (PFN_cuGetProcAddress_v12000)dlsym(rt_driver.library, "cuGetProcAddress_v2");
    if (!bootstrap)
        return cudaErrorInsufficientDriver;
    /* Like NVIDIA's runtime: ask for the lookup function itself, in both
     * ABIs, and use what the driver (or whoever intercepts it) returns. */
    void *v1 = NULL, *v2 = NULL;
    CUdriverProcAddressQueryResult status;
    bootstrap("cuGetProcAddress", &v1, 11030, 0, &status);
    bootstrap("cuGetProcAddress", &v2, 12000, 0, &status);
    rt_driver.get_proc_address_v1 = (PFN_cuGetProcAddress_v11030)v1;
    rt_driver.get_proc_address = (PFN_cuGetProcAddress_v12000)v2;
    if (!v1 && !v2)
        return cudaErrorInsufficientDriver;

    bool complete = true;
#define RT_FETCH_ENTRY(field, base, version, suffix, flags) \
    complete &= fetch(#base, version, flags, (void **)&rt_driver.field);
    RT_DRIVER_ENTRY_POINTS(RT_FETCH_ENTRY)
#undef RT_FETCH_ENTRY
    if (!complete)
        return cudaErrorCallRequiresNewerDriver;

    int version = 0;
    if (rt_driver.cuDriverGetVersion(&version) != CUDA_SUCCESS || version < RT_DRIVER_VERSION)
        return cudaErrorInsufficientDriver;
    return rt_error_from_driver(rt_driver.cuInit(0));
}

static void load_once_body(void)
{
    load_result = load();
}

cudaError_t rt_driver_load(void)
{
    pthread_once(&load_once, load_once_body);
    return load_result;
}
