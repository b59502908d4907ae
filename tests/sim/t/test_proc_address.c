/* SPDX-License-Identifier: MIT */
/* cuGetProcAddress as the real driver serves it: both ABIs, lookup by base
 * name, version and stream flags, the legacy and (simulated) future ABIs,
 * and the statuses of failed lookups. */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "simcuda.h"

typedef CUresult (*lookup_v1)(const char *, void **, int, cuuint64_t);
typedef CUresult (*lookup_v2)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *driver;
static lookup_v2 get_v2;

static void *exported(const char *name)
{
    void *symbol = dlsym(driver, name);
    if (!symbol) {
        fprintf(stderr, "libcuda.so.1 does not export %s\n", name);
        exit(1);
    }
    return symbol;
}

/* The entry point served for (symbol, version, flags), which must exist. */
static void *served(const char *symbol, int version, cuuint64_t flags)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result = get_v2(symbol, &pfn, version, flags, &status);
    if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !pfn) {
        fprintf(stderr, "cuGetProcAddress_v2(%s, %d, %llu) failed: %d, status %d\n", symbol, version, (unsigned long long)flags,
                result, status);
        exit(1);
    }
    return pfn;
}

#define CHECK_SERVES(symbol, version, flags, name) CHECK(served(symbol, version, flags) == exported(name))

static void self_lookup(void)
{
    lookup_v1 get_v1 = (lookup_v1)exported("cuGetProcAddress");
    CHECK((void *)get_v1 != (void *)get_v2);
    /* What NVIDIA's runtime asks first: the lookup function itself. */
    CHECK_SERVES("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    CHECK_SERVES("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    CHECK_SERVES("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
    void *pfn = NULL;
    CHECK_CU(get_v1("cuGetProcAddress", &pfn, 11030, 0), CUDA_SUCCESS);
    CHECK(pfn == (void *)get_v1);
    CHECK_CU(get_v1("cuGetProcAddress", &pfn, 12000, 0), CUDA_SUCCESS);
    CHECK(pfn == (void *)get_v2);
    CHECK_CU(get_v1("cuMemAlloc", &pfn, 13000, 0), CUDA_SUCCESS);
    CHECK(pfn == exported("cuMemAlloc_v2"));
}

static void versions(void)
{
    /* Before 3.2: the 32-bit legacy ABI, a different function. */
    CHECK_SERVES("cuMemAlloc", 3010, 0, "cuMemAlloc");
    CHECK_SERVES("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    CHECK_SERVES("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
    CHECK(exported("cuMemAlloc") != exported("cuMemAlloc_v2"));
    CHECK_SERVES("cuMemFree", 2000, 0, "cuMemFree");
    CHECK_SERVES("cuMemFree", 13000, 0, "cuMemFree_v2");
    CHECK_SERVES("cuMemAllocPitch", 3000, 0, "cuMemAllocPitch");
    CHECK_SERVES("cuMemAllocPitch", 13000, 0, "cuMemAllocPitch_v2");
    CHECK_SERVES("cuMemAllocHost", 3000, 0, "cuMemAllocHost");
    CHECK_SERVES("cuMemAllocHost", 13000, 0, "cuMemAllocHost_v2");
    CHECK_SERVES("cuEventElapsedTime", 12000, 0, "cuEventElapsedTime");
    CHECK_SERVES("cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2");

    /* The simulated future ABI: distinct from 14000 on for cuMemAlloc and
     * cuMemAllocAsync, unchanged for everything else. */
    CHECK_SERVES("cuMemAlloc", SIMCUDA_FUTURE_VERSION, 0, "cuMemAlloc_v3_sim");
    CHECK_SERVES("cuMemAllocAsync", SIMCUDA_FUTURE_VERSION, 0, "cuMemAllocAsync_v2_sim");
    CHECK_SERVES("cuMemAllocAsync", SIMCUDA_FUTURE_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAllocAsync_v2_sim_ptsz");
    CHECK_SERVES("cuMemFree", SIMCUDA_FUTURE_VERSION, 0, "cuMemFree_v2");
    CHECK_SERVES("cuMemFreeAsync", SIMCUDA_FUTURE_VERSION, 0, "cuMemFreeAsync");
    CHECK_SERVES("cuMemGetInfo", 99999, 0, "cuMemGetInfo_v2");
}

static void stream_flags(void)
{
    const cuuint64_t legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM, per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    static const char *const twins[] = {"cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync"};
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++) {
        char ptsz[64];
        snprintf(ptsz, sizeof ptsz, "%s_ptsz", twins[i]);
        CHECK_SERVES(twins[i], 13000, 0, twins[i]);
        CHECK_SERVES(twins[i], 13000, legacy, twins[i]);
        CHECK_SERVES(twins[i], 13000, per_thread, ptsz);
        CHECK(exported(twins[i]) != exported(ptsz));
    }
    /* Without a per-thread twin, the flag changes nothing. */
    CHECK_SERVES("cuMemAlloc", 13000, per_thread, "cuMemAlloc_v2");
    CHECK_SERVES("cuStreamSynchronize", 13000, per_thread, "cuStreamSynchronize_ptsz");
}

static void failures(void)
{
    void *pfn = (void *)1;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK_CU(get_v2("cuNoSuchFunction", &pfn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
    CHECK(pfn == NULL);
    CHECK_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* Older than the symbol: found, but not at that version. */
    pfn = (void *)1;
    CHECK_CU(get_v2("cuMemAllocAsync", &pfn, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
    CHECK(pfn == NULL);
    CHECK_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* A legacy ABI the simulator does not implement. */
    CHECK_CU(get_v2("cuMemGetInfo", &pfn, 3000, 0, &status), CUDA_ERROR_NOT_FOUND);
    CHECK(pfn == NULL);
    CHECK_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* Status is optional; arguments are checked. */
    CHECK_CU(get_v2("cuNoSuchFunction", &pfn, 13000, 0, NULL), CUDA_ERROR_NOT_FOUND);
    CHECK_CU(get_v2("cuMemAlloc", &pfn, 13000, 4, &status), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(get_v2("cuMemAlloc", NULL, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(get_v2(NULL, &pfn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
}

static void entry_points_work(void)
{
    CHECK_CU(cuInit(0), CUDA_SUCCESS);
    CUcontext ctx;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    CHECK_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);

    CUresult (*future_alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))served("cuMemAlloc", 14000, 0);
    /* The v1 ABI: 32-bit device pointers and sizes. */
    CUresult (*legacy_alloc)(unsigned *, unsigned) = (CUresult(*)(unsigned *, unsigned))served("cuMemAlloc", 3010, 0);
    CUresult (*alloc_ptsz)(CUdeviceptr *, size_t, CUstream) =
        (CUresult(*)(CUdeviceptr *, size_t, CUstream))served("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUdeviceptr a, b;
    unsigned small;
    CHECK_CU(future_alloc(&a, 1 * MiB), CUDA_SUCCESS);
    CHECK_EQ(a, 0x500000000000ull);
    CHECK_CU(legacy_alloc(&small, 4096), CUDA_ERROR_NOT_SUPPORTED);
    unsigned long long before = simcuda_per_thread_stream_calls();
    CHECK_CU(alloc_ptsz(&b, 4096, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    CHECK_EQ(simcuda_per_thread_stream_calls(), before + 1);
    CUresult (*free_ptsz)(CUdeviceptr, CUstream) =
        (CUresult(*)(CUdeviceptr, CUstream))served("cuMemFreeAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CHECK_CU(free_ptsz(b, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    CHECK_EQ(simcuda_per_thread_stream_calls(), before + 2);
    CHECK_CU(cuMemFree_v2(a), CUDA_SUCCESS);
    CHECK_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
}

int main(void)
{
    /* Lookups work before cuInit, as on the real driver. */
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(driver != NULL);
    get_v2 = (lookup_v2)exported("cuGetProcAddress_v2");
    unsigned long long calls = simcuda_proc_address_calls();
    CHECK_SERVES("cuInit", 2000, 0, "cuInit");
    CHECK_EQ(simcuda_proc_address_calls(), calls + 1);
    struct simcuda_proc_request request;
    CHECK_EQ(simcuda_proc_address_request((unsigned)calls, &request), 0);
    CHECK(strcmp(request.symbol, "cuInit") == 0);
    CHECK_EQ(request.cuda_version, 2000);
    CHECK_EQ(request.status, CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK_EQ(simcuda_proc_address_request((unsigned)calls + 1, &request), -1);

    self_lookup();
    versions();
    stream_flags();
    failures();
    entry_points_work();
    dlclose(driver);
    return 0;
}
