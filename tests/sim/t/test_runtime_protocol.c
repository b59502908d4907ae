/* SPDX-License-Identifier: MIT */
/* The runtime reaches the driver exactly like NVIDIA's: it asks
 * cuGetProcAddress_v2 for "cuGetProcAddress" at 11030 and 12000, then for
 * every entry point at the version that introduced the ABI it uses
 * (cuMemAlloc at 3020, cuMemAllocAsync at 11020, per-thread twins with the
 * per-thread flag), and nothing else. The driver's request log shows each
 * lookup. */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "simcuda.h"

static bool was_requested(unsigned count, const char *symbol, int version, unsigned long long flags)
{
    struct simcuda_proc_request request;
    for (unsigned i = 0; i < count; i++)
        if (simcuda_proc_address_request(i, &request) == 0 && strcmp(request.symbol, symbol) == 0 &&
            request.cuda_version == version && request.flags == flags)
            return true;
    return false;
}

int main(void)
{
    CHECK_EQ(simcuda_proc_address_calls(), 0);
    void *p;
    CHECK_RT(cudaMalloc(&p, 1 * MiB), cudaSuccess);
    unsigned count = (unsigned)simcuda_proc_address_calls();
    CHECK(count > 40);
    CHECK(count < SIMCUDA_PROC_LOG_SIZE);

    struct simcuda_proc_request request;
    CHECK_EQ(simcuda_proc_address_request(0, &request), 0);
    CHECK(strcmp(request.symbol, "cuGetProcAddress") == 0);
    CHECK_EQ(request.cuda_version, 11030);
    CHECK_EQ(simcuda_proc_address_request(1, &request), 0);
    CHECK(strcmp(request.symbol, "cuGetProcAddress") == 0);
    CHECK_EQ(request.cuda_version, 12000);
    for (unsigned i = 2; i < count; i++) {
        CHECK_EQ(simcuda_proc_address_request(i, &request), 0);
        CHECK(request.cuda_version >= 2000 && request.cuda_version < 13000);
        CHECK(request.flags == 0 || request.flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
        CHECK_EQ(request.status, CU_GET_PROC_ADDRESS_SUCCESS);
    }
    const unsigned long long per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    CHECK(was_requested(count, "cuInit", 2000, 0));
    CHECK(was_requested(count, "cuCtxGetDevice", 2000, 0));
    CHECK(was_requested(count, "cuMemAlloc", 3020, 0));
    CHECK(was_requested(count, "cuMemFree", 3020, 0));
    CHECK(was_requested(count, "cuMemHostAlloc", 2020, 0));
    CHECK(was_requested(count, "cuMemAllocManaged", 6000, 0));
    CHECK(was_requested(count, "cuMemAllocAsync", 11020, 0));
    CHECK(was_requested(count, "cuMemAllocAsync", 11020, per_thread));
    CHECK(was_requested(count, "cuMemFreeAsync", 11020, per_thread));
    CHECK(was_requested(count, "cuMemAllocFromPoolAsync", 11020, per_thread));
    CHECK(was_requested(count, "cuStreamSynchronize", 7000, per_thread));
    CHECK(was_requested(count, "cuEventElapsedTime", 12080, 0));

    /* Everything is fetched once: later calls ask nothing more. */
    CHECK_RT(cudaFree(p), cudaSuccess);
    CHECK_RT(cudaMallocAsync(&p, 4096, 0), cudaSuccess);
    CHECK_RT(cudaFreeAsync(p, 0), cudaSuccess);
    CHECK_EQ(simcuda_proc_address_calls(), count);

    /* cudaGetDriverEntryPointByVersion goes through the same lookup. */
    void *pfn = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuMemAlloc", &pfn, 14000, cudaEnableDefault, &status), cudaSuccess);
    CHECK(pfn == (void *)cuMemAlloc_v3_sim);
    CHECK_EQ(status, cudaDriverEntryPointSuccess);
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &pfn, 13000, cudaEnableDefault, &status), cudaSuccess);
    CHECK(pfn == NULL);
    CHECK_EQ(status, cudaDriverEntryPointSymbolNotFound);
    CHECK_EQ(simcuda_proc_address_calls(), count + 2);

    int version = 0;
    CHECK_RT(cudaRuntimeGetVersion(&version), cudaSuccess);
    CHECK_EQ(version, 13000);
    CHECK_RT(cudaDriverGetVersion(&version), cudaSuccess);
    CHECK_EQ(version, 13000);
    return 0;
}
