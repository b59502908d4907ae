/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CUDA_ERRORS_H
#define CUMEMTRACE_ANALYZER_CUDA_ERRORS_H

#include <stdbool.h>

/* Names of CUDA error codes without the CUDA headers (the analyzer builds
 * and runs where no toolkit is installed). The runtime (cudaError_t) and the
 * driver (CUresult) number many errors alike but name them differently; the
 * API that returned the code says which applies. */
const char *cmt_cuda_error_name(int code, bool driver_api);

/* True when the API is a driver (cu*) entry point. */
bool cmt_api_is_driver(unsigned api);

#endif
