/* SPDX-License-Identifier: MIT */
/* Allocations on three devices, switching between them every way a thread's
 * current device can change (tests/e2e/test_devices.py). Each allocation's
 * size is TAG(device * 100 + n): its size says the device it must be
 * recorded on. Nothing is freed. SIMCUDA_DEVICES=3.
 *
 *   device_switch runtime   cudaSetDevice, driver context switches seen by
 *                           the runtime, push/pop, cudaDeviceReset, a created
 *                           and destroyed context, threads
 *   device_switch driver    the driver API alone: set, push, pop, a primary
 *                           context released while current, a created and
 *                           destroyed context */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG(n) ((size_t)(n) * 4096)

/* Per thread, so that each run makes the same sizes whatever the threads'
 * interleaving. */
static __thread unsigned serial;

static void fail(const char *what, int code)
{
    fprintf(stderr, "device_switch: %s failed: %d\n", what, code);
    exit(1);
}

/* The next tag for device d. */
static size_t on(int d)
{
    return TAG(d * 100 + 1 + serial++ % 99);
}

static void runtime_alloc(int d)
{
    void *p;
    cudaError_t r = cudaMalloc(&p, on(d));
    if (r != cudaSuccess)
        fail("cudaMalloc", r);
}

static void runtime_alloc_async(int d)
{
    void *p;
    cudaError_t r = cudaMallocAsync(&p, on(d), 0);
    if (r != cudaSuccess)
        fail("cudaMallocAsync", r);
}

static CUcontext primary(int d)
{
    CUcontext c;
    CUresult r = cuDevicePrimaryCtxRetain(&c, d);
    if (r != CUDA_SUCCESS)
        fail("cuDevicePrimaryCtxRetain", r);
    return c;
}

static void *runtime_thread(void *arg)
{
    int d = (int)(intptr_t)arg;
    serial = 50;
    cudaError_t r = cudaSetDevice(d);
    if (r != cudaSuccess)
        fail("cudaSetDevice", r);
    for (int i = 0; i < 20; i++) {
        runtime_alloc(d);
        runtime_alloc_async(d);
    }
    return NULL;
}

static int run_runtime(void)
{
    /* Round robin over the devices with cudaSetDevice. */
    for (int i = 0; i < 12; i++) {
        int d = i % 3;
        cudaError_t r = cudaSetDevice(d);
        if (r != cudaSuccess)
            fail("cudaSetDevice", r);
        runtime_alloc(d);
        runtime_alloc_async(d);
        runtime_alloc(d);
    }
    /* The driver makes another context current: the runtime follows it. */
    CUresult r = cuCtxSetCurrent(primary(1));
    if (r != CUDA_SUCCESS)
        fail("cuCtxSetCurrent", r);
    runtime_alloc(1);
    r = cuCtxPushCurrent(primary(2));
    if (r != CUDA_SUCCESS)
        fail("cuCtxPushCurrent", r);
    runtime_alloc(2);
    runtime_alloc_async(2);
    CUcontext popped;
    r = cuCtxPopCurrent(&popped);
    if (r != CUDA_SUCCESS)
        fail("cuCtxPopCurrent", r);
    runtime_alloc(1);
    /* A reset device comes back on its next use. */
    cudaError_t e = cudaDeviceReset();
    if (e != cudaSuccess)
        fail("cudaDeviceReset", e);
    runtime_alloc(1);
    e = cudaSetDevice(0);
    if (e != cudaSuccess)
        fail("cudaSetDevice", e);
    runtime_alloc(0);
    /* A context of the program's own, created (current at once) and
     * destroyed (popped): the runtime follows both. */
    CUcontext mine;
    if ((r = cuCtxCreate(&mine, NULL, 0, 2)) != CUDA_SUCCESS)
        fail("cuCtxCreate", r);
    runtime_alloc(2);
    runtime_alloc_async(2);
    if ((r = cuCtxDestroy(mine)) != CUDA_SUCCESS)
        fail("cuCtxDestroy", r);
    runtime_alloc(0);
    /* Threads, each on its own device, at once. */
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, runtime_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    runtime_alloc(0);
    printf("runtime done\n");
    return 0;
}

static void driver_alloc(int d, CUresult expect)
{
    CUdeviceptr p;
    CUresult r = cuMemAlloc(&p, on(d));
    if (r != expect)
        fail("cuMemAlloc", r);
}

static int run_driver(void)
{
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS)
        fail("cuInit", r);
    CUcontext c[3] = {primary(0), primary(1), primary(2)};
    for (int i = 0; i < 9; i++) {
        if ((r = cuCtxSetCurrent(c[i % 3])) != CUDA_SUCCESS)
            fail("cuCtxSetCurrent", r);
        driver_alloc(i % 3, CUDA_SUCCESS);
        driver_alloc(i % 3, CUDA_SUCCESS);
    }
    if ((r = cuCtxPushCurrent(c[0])) != CUDA_SUCCESS)
        fail("cuCtxPushCurrent", r);
    driver_alloc(0, CUDA_SUCCESS);
    CUcontext popped;
    if ((r = cuCtxPopCurrent(&popped)) != CUDA_SUCCESS)
        fail("cuCtxPopCurrent", r);
    driver_alloc(2, CUDA_SUCCESS);
    /* Device 2's primary context released while current: gone. */
    if ((r = cuDevicePrimaryCtxRelease(2)) != CUDA_SUCCESS)
        fail("cuDevicePrimaryCtxRelease", r);
    driver_alloc(2, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    if ((r = cuCtxSetCurrent(c[1])) != CUDA_SUCCESS)
        fail("cuCtxSetCurrent", r);
    driver_alloc(1, CUDA_SUCCESS);
    /* Created: current at once; destroyed: popped, c[1] current again. */
    CUcontext mine;
    if ((r = cuCtxCreate(&mine, NULL, 0, 2)) != CUDA_SUCCESS)
        fail("cuCtxCreate", r);
    driver_alloc(2, CUDA_SUCCESS);
    driver_alloc(2, CUDA_SUCCESS);
    if ((r = cuCtxDestroy(mine)) != CUDA_SUCCESS)
        fail("cuCtxDestroy", r);
    driver_alloc(1, CUDA_SUCCESS);
    printf("driver done\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "runtime"))
        return run_runtime();
    if (argc == 2 && !strcmp(argv[1], "driver"))
        return run_driver();
    fprintf(stderr, "usage: device_switch runtime|driver\n");
    return 2;
}
