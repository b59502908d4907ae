// SPDX-License-Identifier: MIT
// A CUDA program as nvcc builds it with -cudart shared: kernel registration,
// a <<<>>> launch, a managed variable, memory traffic. It runs against the
// simulated runtime, where kernels do not run: the checks are about memory.
#include <cstdio>
#include <cstdint>
#include <cstring>

#define CHECK(call)                                                                             \
    do {                                                                                        \
        cudaError_t error_ = (call);                                                            \
        if (error_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                         cudaGetErrorName(error_));                                             \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

__device__ int device_counter;
__managed__ int managed_counter;

__global__ void add_one(int *values, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        values[i] += 1;
    atomicAdd(&device_counter, 1);
}

int main()
{
    const int n = 256;
    int host[n], back[n];
    for (int i = 0; i < n; i++)
        host[i] = i;
    int *values = nullptr;
    CHECK(cudaMalloc(&values, sizeof host));
    if (reinterpret_cast<std::uintptr_t>(values) != 0x500000000000ull) {
        std::fprintf(stderr, "not running on the simulated device: %p\n", static_cast<void *>(values));
        return 1;
    }
    CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
    add_one<<<n / 64, 64>>>(values, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(back, values, sizeof back, cudaMemcpyDeviceToHost));
    // The kernel did not run: memory is exactly what was copied in.
    if (std::memcmp(host, back, sizeof host) != 0) {
        std::fprintf(stderr, "device memory changed\n");
        return 1;
    }
    add_one<<<0, 64>>>(values, n);
    if (cudaGetLastError() != cudaErrorInvalidConfiguration) {
        std::fprintf(stderr, "an empty grid was accepted\n");
        return 1;
    }
    managed_counter = 41;
    managed_counter += 1;
    if (managed_counter != 42) {
        std::fprintf(stderr, "managed variable lost its value\n");
        return 1;
    }
    CHECK(cudaFree(values));
    std::printf("nvcc smoke test ran on the simulated device\n");
    return 0;
}
