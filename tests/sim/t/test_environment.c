/* SPDX-License-Identifier: MIT */
/* How the simulator starts when the environment says something unusual.
 *   no-device   (SIMCUDA_DEVICES=0): cuInit reports no device, the runtime
 *               cudaErrorNoDevice with a count of 0.
 *   bad-config  (SIMCUDA_CAPACITY=lots): cuInit refuses, so a typo cannot
 *               go unnoticed, and the runtime passes the error on. */
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    int count = -1;
    void *p;
    if (strcmp(argv[1], "no-device") == 0) {
        CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);
        CHECK_RT(cudaGetDeviceCount(&count), cudaErrorNoDevice);
        CHECK_EQ(count, 0);
        CHECK_RT(cudaMalloc(&p, 4096), cudaErrorNoDevice);
    } else if (strcmp(argv[1], "bad-config") == 0) {
        CHECK_CU(cuInit(0), CUDA_ERROR_INVALID_VALUE);
        CHECK_RT(cudaMalloc(&p, 4096), cudaErrorInvalidValue);
        CHECK_RT(cudaGetLastError(), cudaErrorInvalidValue);
    } else {
        CHECK(!"unknown mode");
    }
    return 0;
}
