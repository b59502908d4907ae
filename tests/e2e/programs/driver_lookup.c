/* SPDX-License-Identifier: MIT */
/* Reaches the driver exactly as NVIDIA's static runtime does: dlopen of
 * libcuda.so.1 (not linked), dlsym of "cuGetProcAddress_v2" only, then ask it
 * for "cuGetProcAddress" at 11030 (v1 ABI) and 12000 (v2 ABI) and fetch every
 * entry point through what comes back, each at the version of its ABI.
 *
 * It prints, for each pointer it got, the module that holds it ("shim" for
 * libcumemtrace.so, "driver" for libcuda.so.1) and, where the driver exports
 * the function under its own name, whether the pointer IS that function
 * ("=name"). The test runs it with and without the shim and compares.
 *
 * Allocations (on device 0, SIMCUDA_DEVICES=1), all freed except `leak`:
 *   through_v2          cuMemAlloc     3 MiB, freed
 *   through_v1          cuMemAlloc     5 MiB, freed (fetched through the v1 lookup)
 *   pooled              cuMemAllocAsync 2 MiB plain + 4 MiB per-thread twin,
 *                       cuMemAllocFromPoolAsync 1 MiB + 1 MiB per-thread, all freed
 *   pinned              cuMemHostAlloc 1 MiB + cuMemAllocHost 2 MiB, freed
 *   managed             cuMemAllocManaged 6 MiB, freed
 *   leak                cuMemAlloc     7 MiB, never freed
 *   future_abi          cuMemAlloc at 14000 (the simulated future ABI) 9 MiB, freed:
 *                       passes through untouched, so it is not recorded
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024u * 1024u)
#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static void *driver;
static PFN_cuGetProcAddress_v12000 get_v2;
static PFN_cuGetProcAddress_v11030 get_v1;

static const char *module_of(const void *p)
{
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname)
        return "none";
    if (strstr(info.dli_fname, "libcumemtrace"))
        return "shim";
    if (strstr(info.dli_fname, "libcuda.so"))
        return "driver";
    return info.dli_fname;
}

/* Prints "label: module" and, with `exported`, whether p is the driver's
 * function of that name. */
static void *show(const char *label, void *p, const char *exported)
{
    printf("%s: %s", label, module_of(p));
    if (exported) {
        void *named = dlsym(driver, exported);
        /* dlsym on the driver's handle may itself answer with a hook; the
         * driver's own function is what the driver exports. */
        printf(" %s%s", p == named ? "=" : "!=", exported);
    }
    printf("\n");
    return p;
}

static void *fetch(const char *symbol, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CUresult r = get_v2(symbol, &p, version, flags, &status);
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS) {
        fprintf(stderr, "cuGetProcAddress(%s, %d, %llu) failed: %d/%d\n", symbol, version, (unsigned long long)flags, r,
                status);
        exit(1);
    }
    return p;
}

#define CHECK(x)                                                    \
    do {                                                            \
        CUresult r_ = (x);                                          \
        if (r_ != CUDA_SUCCESS) {                                   \
            fprintf(stderr, "%s failed: %d\n", #x, r_);             \
            exit(1);                                                \
        }                                                           \
    } while (0)

static PFN_cuMemAlloc_v3020 mem_alloc;
static PFN_cuMemFree_v3020 mem_free;

__attribute__((noinline)) static void through_v2(void)
{
    CUdeviceptr p;
    CHECK(mem_alloc(&p, 3 * MiB));
    CHECK(mem_free(p));
}

__attribute__((noinline)) static void through_v1(void)
{
    void *p = NULL;
    CHECK(get_v1("cuMemAlloc", &p, 3020, 0));
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)show("v1 lookup cuMemAlloc@3020", p, NULL);
    CUdeviceptr d;
    CHECK(alloc(&d, 5 * MiB));
    CHECK(mem_free(d));
}

__attribute__((noinline)) static void pooled(CUstream stream, CUmemoryPool pool)
{
    PFN_cuMemAllocAsync_v11020 alloc = fetch("cuMemAllocAsync", 11020, 0);
    PFN_cuMemAllocAsync_v11020_ptsz alloc_ptsz = fetch("cuMemAllocAsync", 11020, PTDS);
    PFN_cuMemFreeAsync_v11020 release = fetch("cuMemFreeAsync", 11020, 0);
    PFN_cuMemFreeAsync_v11020_ptsz release_ptsz = fetch("cuMemFreeAsync", 11020, PTDS);
    PFN_cuMemAllocFromPoolAsync_v11020 from_pool = fetch("cuMemAllocFromPoolAsync", 11020, 0);
    PFN_cuMemAllocFromPoolAsync_v11020_ptsz from_pool_ptsz = fetch("cuMemAllocFromPoolAsync", 11020, PTDS);
    show("cuMemAllocAsync@11020", alloc, "cuMemAllocAsync");
    show("cuMemAllocAsync@11020/ptds", alloc_ptsz, "cuMemAllocAsync_ptsz");
    show("cuMemFreeAsync@11020/ptds", release_ptsz, "cuMemFreeAsync_ptsz");
    show("cuMemAllocFromPoolAsync@11020/ptds", from_pool_ptsz, "cuMemAllocFromPoolAsync_ptsz");

    unsigned long long (*per_thread_calls)(void) = dlsym(driver, "simcuda_per_thread_stream_calls");
    unsigned long long before = per_thread_calls();
    CUdeviceptr a, b, c, d;
    CHECK(alloc(&a, 2 * MiB, stream));
    CHECK(alloc_ptsz(&b, 4 * MiB, stream));
    CHECK(from_pool(&c, 1 * MiB, pool, stream));
    CHECK(from_pool_ptsz(&d, 1 * MiB, pool, stream));
    CHECK(release(a, stream));
    CHECK(release_ptsz(b, stream));
    CHECK(release(c, stream));
    CHECK(release_ptsz(d, stream));
    /* The per-thread hooks reached the driver's per-thread twins. */
    printf("per-thread calls: %llu\n", per_thread_calls() - before);
}

__attribute__((noinline)) static void pinned(void)
{
    PFN_cuMemHostAlloc_v2020 host_alloc = fetch("cuMemHostAlloc", 2020, 0);
    PFN_cuMemAllocHost_v3020 alloc_host = fetch("cuMemAllocHost", 3020, 0);
    PFN_cuMemFreeHost_v2000 free_host = fetch("cuMemFreeHost", 2000, 0);
    void *a, *b;
    CHECK(host_alloc(&a, 1 * MiB, CU_MEMHOSTALLOC_PORTABLE));
    CHECK(alloc_host(&b, 2 * MiB));
    CHECK(free_host(a));
    CHECK(free_host(b));
}

__attribute__((noinline)) static void managed(void)
{
    PFN_cuMemAllocManaged_v6000 alloc = fetch("cuMemAllocManaged", 6000, 0);
    CUdeviceptr p;
    CHECK(alloc(&p, 6 * MiB, CU_MEM_ATTACH_GLOBAL));
    CHECK(mem_free(p));
}

__attribute__((noinline)) static CUdeviceptr leak(void)
{
    CUdeviceptr p;
    CHECK(mem_alloc(&p, 7 * MiB));
    return p;
}

__attribute__((noinline)) static void future_abi(void)
{
    PFN_cuMemAlloc_v3020 future = show("cuMemAlloc@14000", fetch("cuMemAlloc", 14000, 0), "cuMemAlloc_v3_sim");
    show("cuMemAllocAsync@14000", fetch("cuMemAllocAsync", 14000, 0), "cuMemAllocAsync_v2_sim");
    show("cuMemAllocAsync@14000/ptds", fetch("cuMemAllocAsync", 14000, PTDS), "cuMemAllocAsync_v2_sim_ptsz");
    CUdeviceptr p;
    CHECK(future(&p, 9 * MiB));
    CHECK(mem_free(p)); /* a release of an address the trace never saw */
}

int main(void)
{
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    void *bootstrap = show("dlsym cuGetProcAddress_v2", dlsym(driver, "cuGetProcAddress_v2"), NULL);
    PFN_cuGetProcAddress_v12000 boot = (PFN_cuGetProcAddress_v12000)bootstrap;
    void *v1 = NULL, *v2 = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(boot("cuGetProcAddress", &v1, 11030, 0, &status));
    CHECK(boot("cuGetProcAddress", &v2, 12000, 0, &status));
    get_v1 = (PFN_cuGetProcAddress_v11030)show("cuGetProcAddress@11030", v1, "cuGetProcAddress");
    get_v2 = (PFN_cuGetProcAddress_v12000)show("cuGetProcAddress@12000", v2, "cuGetProcAddress_v2");

    PFN_cuInit_v2000 init = show("cuInit@2000", fetch("cuInit", 2000, 0), "cuInit");
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = fetch("cuDevicePrimaryCtxRetain", 7000, 0);
    PFN_cuCtxSetCurrent_v4000 set_current = fetch("cuCtxSetCurrent", 4000, 0);
    PFN_cuStreamCreate_v2000 stream_create = fetch("cuStreamCreate", 2000, 0);
    PFN_cuStreamSynchronize_v2000 stream_sync = fetch("cuStreamSynchronize", 2000, 0);
    PFN_cuDeviceGetDefaultMemPool_v11020 default_pool = fetch("cuDeviceGetDefaultMemPool", 11020, 0);
    show("cuMemGetInfo@3020", fetch("cuMemGetInfo", 3020, 0), "cuMemGetInfo_v2");
    mem_alloc = show("cuMemAlloc@3020", fetch("cuMemAlloc", 3020, 0), "cuMemAlloc_v2");
    mem_free = show("cuMemFree@3020", fetch("cuMemFree", 3020, 0), "cuMemFree_v2");
    show("cuMemAlloc@13000", fetch("cuMemAlloc", 13000, 0), "cuMemAlloc_v2");
    show("cuMemAlloc@2000", fetch("cuMemAlloc", 2000, 0), "cuMemAlloc");

    CHECK(init(0));
    CUcontext ctx;
    CHECK(retain(&ctx, 0));
    CHECK(set_current(ctx));
    CUstream stream;
    CHECK(stream_create(&stream, 0));
    CUmemoryPool pool;
    CHECK(default_pool(&pool, 0));

    through_v2();
    through_v1();
    pooled(stream, pool);
    pinned();
    managed();
    leak();
    future_abi();
    CHECK(stream_sync(stream));
    printf("done\n");
    return 0;
}
