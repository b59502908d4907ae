// SPDX-License-Identifier: MIT
// Evidence for the default suppressions (docs/check.md): cuDNN used
// correctly: a handle created, one convolution run, the handle destroyed and
// every buffer freed. Built only where cuDNN's headers are found (the
// evidence script looks in the nvidia-cudnn Python wheel PyTorch installs).
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDNN(x)                                                                           \
    do {                                                                                         \
        cudnnStatus_t s_ = (x);                                                                  \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                        \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudnnGetErrorString(s_));    \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)
#define CHECK_CUDA(x)                                                                            \
    do {                                                                                         \
        if ((x) != cudaSuccess) {                                                                \
            std::fprintf(stderr, "%s:%d: CUDA error\n", __FILE__, __LINE__);                     \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

int main()
{
    cudnnHandle_t h;
    CHECK_CUDNN(cudnnCreate(&h));
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&y));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&w));
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 16, 64, 64));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 32, 16, 3, 3));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int n, c, hh, ww;
    CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &hh, &ww));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hh, ww));
    float *dx, *dw, *dy;
    CHECK_CUDA(cudaMalloc(&dx, sizeof(float) * 8 * 16 * 64 * 64));
    CHECK_CUDA(cudaMalloc(&dw, sizeof(float) * 32 * 16 * 3 * 3));
    CHECK_CUDA(cudaMalloc(&dy, sizeof(float) * size_t(n) * c * hh * ww));
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    size_t ws_bytes = 0;
    CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, x, w, conv, y, algo, &ws_bytes));
    void *ws = nullptr;
    if (ws_bytes)
        CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUDNN(cudnnConvolutionForward(h, &one, x, dx, w, dw, conv, algo, ws, ws_bytes, &zero, y, dy));
    CHECK_CUDA(cudaDeviceSynchronize());
    if (ws)
        CHECK_CUDA(cudaFree(ws));
    CHECK_CUDA(cudaFree(dx));
    CHECK_CUDA(cudaFree(dw));
    CHECK_CUDA(cudaFree(dy));
    CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(conv));
    CHECK_CUDNN(cudnnDestroyFilterDescriptor(w));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(x));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(y));
    CHECK_CUDNN(cudnnDestroy(h));
    std::printf("cudnn_once: convolution done, handle destroyed\n");
    return 0;
}
