// SPDX-License-Identifier: MIT
// Evidence for the default suppressions (docs/check.md): a program that uses
// cuBLAS correctly, creating a handle, running one SGEMM, destroying the
// handle and freeing its own buffers. Whatever is still allocated at exit
// was kept by cuBLAS (or the CUDA runtime) itself.
//
//   cublas_once             cublasDestroy before exit (the correct program)
//   cublas_once --no-destroy  the handle is never destroyed (a user's bug:
//                           what a suppression of libcublas would also hide)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK_CUDA(x)                                                                        \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)
#define CHECK_CUBLAS(x)                                                                      \
    do {                                                                                     \
        cublasStatus_t s_ = (x);                                                             \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            std::fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, int(s_));  \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    bool destroy = !(argc > 1 && std::strcmp(argv[1], "--no-destroy") == 0);
    const int n = 1024;
    const size_t bytes = size_t(n) * n * sizeof(float);
    float *a, *b, *c;
    CHECK_CUDA(cudaMalloc(&a, bytes));
    CHECK_CUDA(cudaMalloc(&b, bytes));
    CHECK_CUDA(cudaMalloc(&c, bytes));
    CHECK_CUDA(cudaMemset(a, 0, bytes));
    CHECK_CUDA(cudaMemset(b, 0, bytes));
    cublasHandle_t handle;
    CHECK_CUBLAS(cublasCreate(&handle));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK_CUDA(cudaDeviceSynchronize());
    if (destroy)
        CHECK_CUBLAS(cublasDestroy(handle));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
    std::printf("cublas_once: sgemm done, handle %s\n", destroy ? "destroyed" : "kept");
    return 0;
}
