/* SPDX-License-Identifier: MIT */
/* cuGetProcAddress, in both ABIs, and the table of every entry point it
 * serves. Lookups are by base name ("cuMemAlloc"), the caller's CUDA version
 * and the stream flags, exactly like the real driver: the version picks the
 * newest ABI not newer than itself (cuMemAlloc at 3020 and later is
 * cuMemAlloc_v2, before that the 32-bit legacy cuMemAlloc), and
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM picks a _ptsz twin where one
 * exists. */
#include <cudaTypedefs.h>
#include <stdio.h>
#include <string.h>

#include "sim_state.h"
#include "simcuda.h"

/* The table, written once and expanded twice: into compile-time checks that
 * each implementation has exactly the ABI NVIDIA's cudaTypedefs.h gives that
 * name at that version, and into the lookup rows.
 *   D: default-stream entry point        T: per-thread-default-stream twin
 *   F: simulated future ABI (SIMCUDA_FUTURE_VERSION); checked against the
 *      current ABI it behaves like       FT: its per-thread twin
 *   L: an older ABI the simulator does not implement (lookups at those
 *      versions fail with CUDA_ERROR_NOT_FOUND) */
#define SIM_PROC_TABLE(D, T, F, FT, L)                                  \
    D(cuGetProcAddress, 11030, cuGetProcAddress)                        \
    D(cuGetProcAddress, 12000, cuGetProcAddress_v2)                     \
    D(cuGetErrorString, 6000, cuGetErrorString)                         \
    D(cuGetErrorName, 6000, cuGetErrorName)                             \
    D(cuInit, 2000, cuInit)                                             \
    D(cuDriverGetVersion, 2020, cuDriverGetVersion)                     \
    D(cuDeviceGet, 2000, cuDeviceGet)                                   \
    D(cuDeviceGetCount, 2000, cuDeviceGetCount)                         \
    D(cuDeviceGetName, 2000, cuDeviceGetName)                           \
    L(cuDeviceTotalMem, 2000)                                           \
    D(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2)                      \
    D(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute)                 \
    D(cuDeviceGetUuid, 9020, cuDeviceGetUuid)                           \
    D(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2)                       \
    D(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain)         \
    D(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease)       \
    D(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2)   \
    D(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset)           \
    D(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2)       \
    D(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState)     \
    L(cuDevicePrimaryCtxSetFlags, 7000)                                 \
    D(cuDevicePrimaryCtxSetFlags, 11000, cuDevicePrimaryCtxSetFlags_v2) \
    L(cuCtxCreate, 2000)                                                \
    D(cuCtxCreate, 3020, cuCtxCreate_v2)                                \
    L(cuCtxCreate, 11040)                                               \
    D(cuCtxCreate, 12050, cuCtxCreate_v4)                               \
    L(cuCtxDestroy, 2000)                                               \
    D(cuCtxDestroy, 4000, cuCtxDestroy_v2)                              \
    D(cuCtxGetCurrent, 4000, cuCtxGetCurrent)                           \
    D(cuCtxSetCurrent, 4000, cuCtxSetCurrent)                           \
    L(cuCtxPushCurrent, 2000)                                           \
    D(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2)                      \
    L(cuCtxPopCurrent, 2000)                                            \
    D(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2)                        \
    D(cuCtxGetDevice, 2000, cuCtxGetDevice)                             \
    D(cuCtxSynchronize, 2000, cuCtxSynchronize)                         \
    D(cuStreamCreate, 2000, cuStreamCreate)                             \
    L(cuStreamDestroy, 2000)                                            \
    D(cuStreamDestroy, 4000, cuStreamDestroy_v2)                        \
    D(cuStreamSynchronize, 2000, cuStreamSynchronize)                   \
    T(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz)              \
    D(cuStreamQuery, 2000, cuStreamQuery)                               \
    D(cuEventCreate, 2000, cuEventCreate)                               \
    D(cuEventRecord, 2000, cuEventRecord)                               \
    T(cuEventRecord, 7000, cuEventRecord_ptsz)                          \
    D(cuEventSynchronize, 2000, cuEventSynchronize)                     \
    D(cuEventQuery, 2000, cuEventQuery)                                 \
    L(cuEventDestroy, 2000)                                             \
    D(cuEventDestroy, 4000, cuEventDestroy_v2)                          \
    D(cuEventElapsedTime, 2000, cuEventElapsedTime)                     \
    D(cuEventElapsedTime, 12080, cuEventElapsedTime_v2)                 \
    L(cuMemGetInfo, 2000)                                               \
    D(cuMemGetInfo, 3020, cuMemGetInfo_v2)                              \
    D(cuMemAlloc, 2000, cuMemAlloc)                                     \
    D(cuMemAlloc, 3020, cuMemAlloc_v2)                                  \
    F(cuMemAlloc, 3020, cuMemAlloc_v3_sim)                              \
    D(cuMemFree, 2000, cuMemFree)                                       \
    D(cuMemFree, 3020, cuMemFree_v2)                                    \
    D(cuMemAllocPitch, 2000, cuMemAllocPitch)                           \
    D(cuMemAllocPitch, 3020, cuMemAllocPitch_v2)                        \
    D(cuMemAllocManaged, 6000, cuMemAllocManaged)                       \
    D(cuMemAllocHost, 2000, cuMemAllocHost)                             \
    D(cuMemAllocHost, 3020, cuMemAllocHost_v2)                          \
    D(cuMemHostAlloc, 2020, cuMemHostAlloc)                             \
    D(cuMemFreeHost, 2000, cuMemFreeHost)                               \
    D(cuMemAllocAsync, 11020, cuMemAllocAsync)                          \
    T(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz)                     \
    F(cuMemAllocAsync, 11020, cuMemAllocAsync_v2_sim)                   \
    FT(cuMemAllocAsync, 11020, cuMemAllocAsync_v2_sim_ptsz)             \
    D(cuMemFreeAsync, 11020, cuMemFreeAsync)                            \
    T(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz)                       \
    D(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync)          \
    T(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz)     \
    D(cuMemPoolCreate, 11020, cuMemPoolCreate)                          \
    D(cuMemPoolDestroy, 11020, cuMemPoolDestroy)                        \
    D(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo)                          \
    D(cuMemPoolExportToShareableHandle, 11020, cuMemPoolExportToShareableHandle) \
    D(cuMemPoolImportFromShareableHandle, 11020, cuMemPoolImportFromShareableHandle) \
    D(cuMemPoolExportPointer, 11020, cuMemPoolExportPointer)            \
    D(cuMemPoolImportPointer, 11020, cuMemPoolImportPointer)            \
    D(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute)              \
    D(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute)              \
    D(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool)      \
    D(cuDeviceGetMemPool, 11020, cuDeviceGetMemPool)                    \
    D(cuDeviceSetMemPool, 11020, cuDeviceSetMemPool)                    \
    D(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity) \
    D(cuMemCreate, 10020, cuMemCreate)                                  \
    D(cuMemRelease, 10020, cuMemRelease)                                \
    D(cuMemAddressReserve, 10020, cuMemAddressReserve)                  \
    D(cuMemAddressFree, 10020, cuMemAddressFree)                        \
    D(cuMemMap, 10020, cuMemMap)                                        \
    D(cuMemUnmap, 10020, cuMemUnmap)                                    \
    D(cuMemSetAccess, 10020, cuMemSetAccess)                            \
    D(cuMemExportToShareableHandle, 10020, cuMemExportToShareableHandle) \
    D(cuMemImportFromShareableHandle, 10020, cuMemImportFromShareableHandle) \
    D(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle)                       \
    D(cuIpcOpenMemHandle, 4010, cuIpcOpenMemHandle)                     \
    D(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle_v2)                 \
    D(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle)                   \
    D(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2)              \
    L(cuArrayCreate, 2000)                                              \
    D(cuArrayCreate, 3020, cuArrayCreate_v2)                            \
    L(cuArray3DCreate, 2000)                                            \
    D(cuArray3DCreate, 3020, cuArray3DCreate_v2)                        \
    D(cuArrayDestroy, 2000, cuArrayDestroy)                             \
    L(cuArrayGetDescriptor, 2000)                                       \
    D(cuArrayGetDescriptor, 3020, cuArrayGetDescriptor_v2)              \
    L(cuArray3DGetDescriptor, 2000)                                     \
    D(cuArray3DGetDescriptor, 3020, cuArray3DGetDescriptor_v2)          \
    L(cuMemcpyHtoD, 2000)                                               \
    D(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2)                              \
    L(cuMemcpyDtoH, 2000)                                               \
    D(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2)                              \
    L(cuMemcpyDtoD, 2000)                                               \
    D(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2)                              \
    D(cuMemcpy, 4000, cuMemcpy)                                         \
    D(cuMemcpyAsync, 4000, cuMemcpyAsync)                               \
    T(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz)                          \
    L(cuMemsetD8, 2000)                                                 \
    D(cuMemsetD8, 3020, cuMemsetD8_v2)                                  \
    L(cuMemsetD16, 2000)                                                \
    D(cuMemsetD16, 3020, cuMemsetD16_v2)                                \
    L(cuMemsetD32, 2000)                                                \
    D(cuMemsetD32, 3020, cuMemsetD32_v2)                                \
    D(cuMemsetD8Async, 3020, cuMemsetD8Async)                           \
    T(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz)                      \
    D(cuModuleLoadData, 2000, cuModuleLoadData)                         \
    D(cuModuleUnload, 2000, cuModuleUnload)                             \
    D(cuModuleGetFunction, 2000, cuModuleGetFunction)                   \
    D(cuLaunchKernel, 4000, cuLaunchKernel)                             \
    T(cuLaunchKernel, 7000, cuLaunchKernel_ptsz)

#define SAME_ABI(fn, pfn) _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), pfn), #fn " does not have the ABI of " #pfn);
#define CHECK_D(name, version, fn) SAME_ABI(fn, PFN_##name##_v##version)
#define CHECK_T(name, version, fn) SAME_ABI(fn, PFN_##name##_v##version##_ptsz)
#define CHECK_F(name, abi, fn) SAME_ABI(fn, PFN_##name##_v##abi)
#define CHECK_FT(name, abi, fn) SAME_ABI(fn, PFN_##name##_v##abi##_ptsz)
#define CHECK_L(name, version) _Static_assert(sizeof(PFN_##name##_v##version) == sizeof(void (*)(void)), #name " has no ABI at " #version);
SIM_PROC_TABLE(CHECK_D, CHECK_T, CHECK_F, CHECK_FT, CHECK_L)

struct proc_entry {
    const char *name;
    int since;        /* the first cudaVersion this entry serves */
    bool per_thread;  /* a _ptsz twin */
    void *fn;         /* NULL: an ABI the simulator does not implement */
};

#define ROW_D(name, version, fn) {#name, version, false, (void *)&fn},
#define ROW_T(name, version, fn) {#name, version, true, (void *)&fn},
#define ROW_F(name, abi, fn) {#name, SIMCUDA_FUTURE_VERSION, false, (void *)&fn},
#define ROW_FT(name, abi, fn) {#name, SIMCUDA_FUTURE_VERSION, true, (void *)&fn},
#define ROW_L(name, version) {#name, version, false, NULL},
static const struct proc_entry entries[] = {SIM_PROC_TABLE(ROW_D, ROW_T, ROW_F, ROW_FT, ROW_L)};

static unsigned long long proc_address_calls;

/* The first SIMCUDA_PROC_LOG_SIZE requests, for simcuda_proc_address_request.
 * Slots are claimed with an atomic counter, so concurrent lookups need no
 * lock; a slot is published by its `ready` flag. */
static struct {
    struct simcuda_proc_request request;
    bool ready;
} request_log[SIMCUDA_PROC_LOG_SIZE];
static unsigned requests_logged;

static void log_request(const char *symbol, int version, cuuint64_t flags, CUdriverProcAddressQueryResult status)
{
    unsigned index = __atomic_fetch_add(&requests_logged, 1, __ATOMIC_RELAXED);
    if (index >= SIMCUDA_PROC_LOG_SIZE)
        return;
    struct simcuda_proc_request *entry = &request_log[index].request;
    snprintf(entry->symbol, sizeof entry->symbol, "%s", symbol);
    entry->cuda_version = version;
    entry->flags = flags;
    entry->status = status;
    __atomic_store_n(&request_log[index].ready, true, __ATOMIC_RELEASE);
}

int simcuda_proc_address_request(unsigned index, struct simcuda_proc_request *request)
{
    if (index >= SIMCUDA_PROC_LOG_SIZE || !request || !__atomic_load_n(&request_log[index].ready, __ATOMIC_ACQUIRE))
        return -1;
    *request = request_log[index].request;
    return 0;
}

static const char *status_name(CUdriverProcAddressQueryResult status)
{
    switch (status) {
    case CU_GET_PROC_ADDRESS_SUCCESS: return "found";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "symbol not found";
    default: return "version not sufficient";
    }
}

/* The newest entry for `symbol` not newer than `version`; among entries of
 * one version a per-thread twin wins when the caller asked for one. */
static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (!symbol || !pfn || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    bool named = false;
    const struct proc_entry *best = NULL;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        const struct proc_entry *entry = &entries[i];
        if (strcmp(entry->name, symbol) != 0)
            continue;
        named = true;
        if (entry->since > version || (entry->per_thread && !per_thread))
            continue;
        if (!best || entry->since > best->since || (entry->since == best->since && entry->per_thread))
            best = entry;
    }
    CUdriverProcAddressQueryResult found;
    if (!named || (best && !best->fn))
        found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    else if (!best)
        found = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    else
        found = CU_GET_PROC_ADDRESS_SUCCESS;
    *pfn = found == CU_GET_PROC_ADDRESS_SUCCESS ? best->fn : NULL;
    if (status)
        *status = found;
    log_request(symbol, version, flags, found);
    /* Configuration is read on first use; lookups work before cuInit. */
    if (sim_setup() == CUDA_SUCCESS && sim.config.trace_proc_address)
        fprintf(stderr, "simcuda: cuGetProcAddress(\"%s\", %d, %llu) -> %s\n", symbol, version, (unsigned long long)flags,
                status_name(found));
    return found == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    __atomic_add_fetch(&proc_address_calls, 1, __ATOMIC_RELAXED);
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    __atomic_add_fetch(&proc_address_calls, 1, __ATOMIC_RELAXED);
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

unsigned long long simcuda_proc_address_calls(void)
{
    return __atomic_load_n(&proc_address_calls, __ATOMIC_RELAXED);
}
