/* SPDX-License-Identifier: MIT */
/* cuGetProcAddress, both ABIs, three copies each (proc_address.h). Compiled
 * with __CUDA_API_VERSION_INTERNAL: cuda.h then declares the v1 ABI as
 * cuGetProcAddress and the v2 ABI as cuGetProcAddress_v2, the two names
 * libcuda exports. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include "driver_table.h"
#include "proc_address.h"
#include "real_symbols.h"

_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress), PFN_cuGetProcAddress_v11030),
               "cuGetProcAddress is not the v1 ABI");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress_v2), PFN_cuGetProcAddress_v12000),
               "cuGetProcAddress_v2 is not the v2 ABI");

void *cmt_get_proc_address_v1_named_real;
void *cmt_get_proc_address_v2_named_real;

static CUresult get_proc_address_v1(PFN_cuGetProcAddress_v11030 real, const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn && *pfn) {
        struct cmt_proc_resolver resolver = {.v1 = real};
        *pfn = cmt_driver_hooks_substitute_proc(symbol, *pfn, &resolver);
    }
    return r;
}

static CUresult get_proc_address_v2(PFN_cuGetProcAddress_v12000 real, const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn && *pfn) {
        struct cmt_proc_resolver resolver = {.v2 = real};
        *pfn = cmt_driver_hooks_substitute_proc(symbol, *pfn, &resolver);
    }
    return r;
}

CMT_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    PFN_cuGetProcAddress_v11030 real = (PFN_cuGetProcAddress_v11030)cmt_real_get_driver(
        &cmt_get_proc_address_v1_named_real, "cuGetProcAddress", __builtin_return_address(0));
    return get_proc_address_v1(real, symbol, pfn, cudaVersion, flags);
}

CMT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    PFN_cuGetProcAddress_v12000 real = (PFN_cuGetProcAddress_v12000)cmt_real_get_driver(
        &cmt_get_proc_address_v2_named_real, "cuGetProcAddress_v2", __builtin_return_address(0));
    return get_proc_address_v2(real, symbol, pfn, cudaVersion, flags, symbolStatus);
}

CMT_SELF_ALIAS(cuGetProcAddress)
CMT_SELF_ALIAS(cuGetProcAddress_v2)

CUresult cmt_get_proc_address_v1_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc_address_v1((PFN_cuGetProcAddress_v11030)cmt_driver_hook_proc_real(CMT_HOOK_cuGetProcAddress),
                               symbol, pfn, cudaVersion, flags);
}

CUresult cmt_get_proc_address_v1_dlsym(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc_address_v1((PFN_cuGetProcAddress_v11030)cmt_driver_hook_dlsym_real(CMT_HOOK_cuGetProcAddress),
                               symbol, pfn, cudaVersion, flags);
}

CUresult cmt_get_proc_address_v2_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc_address_v2((PFN_cuGetProcAddress_v12000)cmt_driver_hook_proc_real(CMT_HOOK_cuGetProcAddress_v2),
                               symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cmt_get_proc_address_v2_dlsym(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc_address_v2((PFN_cuGetProcAddress_v12000)cmt_driver_hook_dlsym_real(CMT_HOOK_cuGetProcAddress_v2),
                               symbol, pfn, cudaVersion, flags, symbolStatus);
}
