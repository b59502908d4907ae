// SPDX-License-Identifier: MIT
// Leaks on purpose through every path a program built with plain `nvcc` has
// (the runtime linked STATICALLY, as nvcc does by default, plus the driver
// API linked with -lcuda), for run_driver_validation.sh:
//
//   runtime_leak    cudaMalloc        64 MiB   static runtime -> cuMemAlloc_v2 through cuGetProcAddress
//   pitched_leak    cudaMallocPitch   1000 x 100 (pitch chosen by the driver)
//   async_leak      cudaMallocAsync   32 MiB   -> cuMemAllocAsync (default pool)
//   managed_leak    cudaMallocManaged  8 MiB
//   pinned_leak     cudaMallocHost     4 MiB   host memory
//   driver_leak     cuMemAlloc_v2     16 MiB   by name
//   vmm_leak        cuMemCreate        one granule (2 MiB on an H200), mapped, never released
//
// and allocates and frees more on the way (peak_phase: 3 x 128 MiB). It prints
// one line per leak, "leak NAME ADDRESS BYTES", and one per API it called,
// "calls API N", so the validation can check that every call was caught and
// every leak found. It ends with cudaDeviceReset(), after which
// compute-sanitizer's leak check reports what the context still held.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x)                                                                                     \
    do {                                                                                             \
        cudaError_t err_ = (x);                                                                      \
        if (err_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)
#define CHECK_CU(x)                                                                  \
    do {                                                                             \
        CUresult err_ = (x);                                                         \
        if (err_ != CUDA_SUCCESS) {                                                  \
            std::fprintf(stderr, "%s:%d: %s: error %d\n", __FILE__, __LINE__, #x, err_); \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

constexpr size_t MiB = size_t(1) << 20;

static int calls_malloc, calls_pitch, calls_async, calls_managed, calls_host, calls_cu_alloc, calls_cu_create;

__global__ void touch(unsigned char *p, size_t n)
{
    size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    if (i < n)
        p[i] = (unsigned char)i;
}

static void leak(const char *name, const void *p, size_t bytes)
{
    std::printf("leak %s %p %zu\n", name, p, bytes);
}

__attribute__((noinline)) static void runtime_leak()
{
    void *p;
    CHECK(cudaMalloc(&p, 64 * MiB));
    calls_malloc++;
    touch<<<256, 256>>>((unsigned char *)p, 64 * MiB);
    leak("runtime_leak", p, 64 * MiB);
}

__attribute__((noinline)) static void pitched_leak()
{
    void *p;
    size_t pitch;
    CHECK(cudaMallocPitch(&p, &pitch, 1000, 100));
    calls_pitch++;
    leak("pitched_leak", p, pitch * 100);
}

__attribute__((noinline)) static void async_leak(cudaStream_t s)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 32 * MiB, s));
    calls_async++;
    CHECK(cudaStreamSynchronize(s));
    leak("async_leak", p, 32 * MiB);
}

__attribute__((noinline)) static void managed_leak()
{
    void *p;
    CHECK(cudaMallocManaged(&p, 8 * MiB));
    calls_managed++;
    leak("managed_leak", p, 8 * MiB);
}

__attribute__((noinline)) static void pinned_leak()
{
    void *p;
    CHECK(cudaMallocHost(&p, 4 * MiB));
    calls_host++;
    leak("pinned_leak", p, 4 * MiB);
}

__attribute__((noinline)) static void driver_leak()
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 16 * MiB)); // cuda.h: cuMemAlloc is cuMemAlloc_v2
    calls_cu_alloc++;
    leak("driver_leak", (void *)p, 16 * MiB);
}

__attribute__((noinline)) static void vmm_leak()
{
    CUmemAllocationProp prop;
    std::memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granule = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle handle;
    CHECK_CU(cuMemCreate(&handle, granule, &prop, 0));
    calls_cu_create++;
    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, granule, 0, 0, 0));
    CHECK_CU(cuMemMap(va, granule, 0, handle, 0));
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(va, granule, &access, 1));
    touch<<<1, 256>>>((unsigned char *)va, granule);
    CHECK(cudaDeviceSynchronize());
    // The mapping and the reservation are torn down, the handle is not.
    CHECK_CU(cuMemUnmap(va, granule));
    CHECK_CU(cuMemAddressFree(va, granule));
    std::printf("leak vmm_leak 0x%llx %zu\n", (unsigned long long)handle, granule);
}

__attribute__((noinline)) static void peak_phase()
{
    void *p[3];
    for (int i = 0; i < 3; i++) {
        CHECK(cudaMalloc(&p[i], 128 * MiB));
        calls_malloc++;
        touch<<<256, 256>>>((unsigned char *)p[i], 128 * MiB);
    }
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < 3; i++)
        CHECK(cudaFree(p[i]));
}

int main()
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    runtime_leak();
    pitched_leak();
    async_leak(s);
    managed_leak();
    pinned_leak();
    driver_leak(); // the runtime made device 0's primary context current
    vmm_leak();
    peak_phase();
    CHECK(cudaStreamDestroy(s));
    std::printf("calls cudaMalloc %d\ncalls cudaMallocPitch %d\ncalls cudaMallocAsync %d\ncalls cudaMallocManaged %d\n"
                "calls cudaMallocHost %d\ncalls cuMemAlloc %d\ncalls cuMemCreate %d\n",
                calls_malloc, calls_pitch, calls_async, calls_managed, calls_host, calls_cu_alloc, calls_cu_create);
    std::fflush(stdout);
    CHECK(cudaDeviceReset());
    return 0;
}
