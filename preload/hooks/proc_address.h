/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PROC_ADDRESS_H
#define CUMEMTRACE_PRELOAD_PROC_ADDRESS_H

#ifndef __CUDA_API_VERSION_INTERNAL
#error "include proc_address.h with __CUDA_API_VERSION_INTERNAL defined: cuGetProcAddress must name the v1 ABI"
#endif
#include <cuda.h>

/* The shim's cuGetProcAddress, both ABIs (v1 without the status argument,
 * v2 with it), each in three copies that differ in what they forward to:
 *   named  the exports cuGetProcAddress and cuGetProcAddress_v2, forwarding
 *          to the next definition after the shim (programs linked with -lcuda);
 *   proc   handed out when cuGetProcAddress is asked for "cuGetProcAddress",
 *          forwarding to what the driver returned;
 *   dlsym  handed out by dlsym(handle, "cuGetProcAddress_v2"), forwarding to
 *          what dlsym found when no other copy forwards to it.
 * Each returns exactly what the real function returned, with *pfn replaced
 * by our hook where one of ours forwards to exactly that pointer. */

/* The named copies, by hidden aliases (real_symbols.h, CMT_SELF_ALIAS). */
extern __typeof__(cuGetProcAddress) cmt_self_cuGetProcAddress;
extern __typeof__(cuGetProcAddress_v2) cmt_self_cuGetProcAddress_v2;

extern void *cmt_get_proc_address_v1_named_real;
extern void *cmt_get_proc_address_v2_named_real;

CUresult cmt_get_proc_address_v1_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cmt_get_proc_address_v1_dlsym(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cmt_get_proc_address_v2_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *symbolStatus);
CUresult cmt_get_proc_address_v2_dlsym(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus);

#endif
