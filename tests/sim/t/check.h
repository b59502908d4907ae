/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_TEST_CHECK_H
#define SIMCUDA_TEST_CHECK_H

/* Assertions for the simulated device's tests: each failure names the file,
 * line and both values, and exits 1 so meson reports the test failed. */

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024ull * 1024)

#define CHECK(condition)                                                                    \
    do {                                                                                    \
        if (!(condition)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition);   \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK_EQ(actual, expected)                                                          \
    do {                                                                                    \
        unsigned long long actual_ = (unsigned long long)(actual);                          \
        unsigned long long expected_ = (unsigned long long)(expected);                      \
        if (actual_ != expected_) {                                                         \
            fprintf(stderr, "%s:%d: %s is 0x%llx (%llu), expected 0x%llx (%llu)\n",         \
                    __FILE__, __LINE__, #actual, actual_, actual_, expected_, expected_);   \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* A runtime call must return exactly `expected`. */
#define CHECK_RT(call, expected)                                                            \
    do {                                                                                    \
        cudaError_t got_ = (call);                                                          \
        if (got_ != (expected)) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__,     \
                    #call, cudaGetErrorName(got_), cudaGetErrorName(expected));             \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static inline const char *check_driver_error_name(CUresult result)
{
    const char *name = NULL;
    return cuGetErrorName(result, &name) == CUDA_SUCCESS ? name : "(unknown CUresult)";
}

/* A driver call must return exactly `expected` (tests that link libcuda). */
#define CHECK_CU(call, expected)                                                            \
    do {                                                                                    \
        CUresult got_ = (call);                                                             \
        if (got_ != (expected)) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__,     \
                    #call, check_driver_error_name(got_), check_driver_error_name(expected)); \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#endif
