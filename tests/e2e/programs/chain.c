/* SPDX-License-Identifier: MIT */
/* Linked against the runtime and the driver (-lcuda), on device 0:
 *   runtime_side   3 cudaMalloc (1, 2, 3 MiB) by name
 *   driver_side    2 cuMemAlloc_v2 (4, 5 MiB) by name, live together: the peak
 *   through_lookup cuMemAlloc 6 MiB through cuGetProcAddress called by name
 *   through_dlsym  cuMemAlloc 7 MiB through dlsym(libcuda's handle, "cuMemAlloc_v2")
 * each freed before the next. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)

__attribute__((noinline)) static void runtime_side(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++)
        if (cudaMalloc(&p[i], (size_t)(i + 1) * MiB) != cudaSuccess)
            exit(1);
    for (int i = 0; i < 3; i++)
        cudaFree(p[i]);
}

__attribute__((noinline)) static void driver_side(void)
{
    CUdeviceptr p[2];
    for (int i = 0; i < 2; i++)
        if (cuMemAlloc(&p[i], (size_t)(i + 4) * MiB) != CUDA_SUCCESS)
            exit(1);
    for (int i = 0; i < 2; i++)
        cuMemFree(p[i]);
}

__attribute__((noinline)) static void through_lookup(void)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (cuGetProcAddress("cuMemAlloc", &fn, 3020, 0, &status) != CUDA_SUCCESS)
        exit(1);
    CUdeviceptr p;
    if (((PFN_cuMemAlloc_v3020)fn)(&p, 6 * MiB) != CUDA_SUCCESS)
        exit(1);
    cuMemFree(p);
}

__attribute__((noinline)) static void through_dlsym(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    PFN_cuMemAlloc_v3020 alloc = driver ? (PFN_cuMemAlloc_v3020)dlsym(driver, "cuMemAlloc_v2") : NULL;
    CUdeviceptr p;
    if (!alloc || alloc(&p, 7 * MiB) != CUDA_SUCCESS)
        exit(1);
    cuMemFree(p);
    dlclose(driver);
}

int main(void)
{
    runtime_side(); /* makes device 0's primary context current */
    driver_side();
    through_lookup();
    through_dlsym();
    puts("done");
    return 0;
}
