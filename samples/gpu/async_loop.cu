// SPDX-License-Identifier: MIT
// A stream-ordered allocation loop (cudaMallocAsync / cudaFreeAsync from the
// device's default pool), for the side-by-side comparison of
// docs/comparison.md (samples/gpu/run_guide_validation.sh):
//
//   async_loop [ITERATIONS]      default 20000
//
// Each iteration allocates 1 MiB on a stream, fills it with a kernel and frees
// it on the same stream. Every 5000th iteration's buffer is kept instead (a
// leak of 1 MiB each: 4 leaks with the default count). With
// CMT_SAMPLE_DEVICE_RESET=1 the program ends with cudaDeviceReset(), which is
// when compute-sanitizer --leak-check full reports leaks.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        cudaError_t err_ = (x);                                                            \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                 \
                         cudaGetErrorString(err_));                                         \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

constexpr size_t MiB = size_t(1) << 20;

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    if (i < n)
        p[i] = v;
}

__attribute__((noinline)) static float *stream_buffer(cudaStream_t s, int i)
{
    float *p;
    CHECK(cudaMallocAsync(reinterpret_cast<void **>(&p), MiB, s));
    size_t n = MiB / sizeof(float);
    fill<<<unsigned((n + 255) / 256), 256, 0, s>>>(p, n, float(i));
    CHECK(cudaGetLastError());
    return p;
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int kept = 0;
    for (int i = 0; i < iterations; i++) {
        float *p = stream_buffer(s, i);
        if (i % 5000 == 4999)
            kept++; // forgotten on purpose
        else
            CHECK(cudaFreeAsync(p, s));
    }
    CHECK(cudaStreamSynchronize(s));
    std::printf("async_loop: %d iterations, %d buffers of 1 MiB kept\n", iterations, kept);
    CHECK(cudaStreamDestroy(s));
    const char *reset = std::getenv("CMT_SAMPLE_DEVICE_RESET");
    if (reset && reset[0] == '1')
        CHECK(cudaDeviceReset());
    return 0;
}
