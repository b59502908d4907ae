// SPDX-License-Identifier: MIT
// Context switches on one GPU, for the device cache's check mode
// (run_overhead_bench.sh runs it with CUMEMTRACE_DEVICE_CACHE=check, built
// with the dynamic and with the static runtime). With one device every
// ordinal is 0, but the check compares the context current when a device was
// remembered with the one current when it is used: a switch that NVIDIA's
// runtime or driver made without passing through the shim's hooks shows as
// "context switches unseen".
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define RT(x) check_rt((x), #x)
#define CU(x) check_cu((x), #x)

static void check_rt(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "ctx_switch: %s: %s\n", what, cudaGetErrorString(r));
        exit(1);
    }
}

static void check_cu(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "ctx_switch: %s failed: %d\n", what, (int)r);
        exit(1);
    }
}

// A few allocations through the runtime and the driver, freed again.
static void allocate_some(cudaStream_t stream)
{
    for (int i = 0; i < 8; i++) {
        void *p, *q;
        CUdeviceptr d;
        RT(cudaMalloc(&p, 1 << 20));
        RT(cudaMallocAsync(&q, 1 << 20, stream));
        CU(cuMemAlloc(&d, 1 << 20));
        CU(cuMemFree(d));
        RT(cudaFreeAsync(q, stream));
        RT(cudaFree(p));
    }
    RT(cudaStreamSynchronize(stream));
}

static void *thread_main(void *)
{
    RT(cudaSetDevice(0));
    allocate_some(cudaStreamPerThread);
    return nullptr;
}

int main()
{
    RT(cudaSetDevice(0));
    RT(cudaFree(0));
    allocate_some(cudaStreamPerThread);

    // Two more contexts on the same device, made current in turn.
    CUcontext a, b, primary, popped;
    CU(cuCtxGetCurrent(&primary));
    CU(cuCtxCreate(&a, nullptr, 0, 0)); // current now
    allocate_some(cudaStreamPerThread);
    CU(cuCtxCreate(&b, nullptr, 0, 0));
    allocate_some(cudaStreamPerThread);
    CU(cuCtxSetCurrent(a));
    allocate_some(cudaStreamPerThread);
    CU(cuCtxPushCurrent(b));
    allocate_some(cudaStreamPerThread);
    CU(cuCtxPopCurrent(&popped));
    allocate_some(cudaStreamPerThread);
    CU(cuCtxSetCurrent(primary));
    allocate_some(cudaStreamPerThread);
    RT(cudaSetDevice(0));
    allocate_some(cudaStreamPerThread);

    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], nullptr, thread_main, nullptr);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], nullptr);

    // A context destroyed while current: the runtime comes back to the
    // primary context on its next call.
    CU(cuCtxSetCurrent(b));
    CU(cuCtxDestroy(b));
    allocate_some(cudaStreamPerThread);
    CU(cuCtxDestroy(a));
    RT(cudaDeviceReset());
    RT(cudaSetDevice(0));
    allocate_some(cudaStreamPerThread);
    printf("{\"ctx_switch\": \"done\"}\n");
    return 0;
}
