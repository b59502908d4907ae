// SPDX-License-Identifier: MIT
// A CUDA program that peaks and leaks on purpose, for `cumemtrace report`.
//
//   load_weights    256 MiB once, kept for the whole run, never freed   (leak, allocated once)
//   cache_batch       8 MiB every step, never freed                      (leak, grows each step)
//   activations    3 x 64 MiB per step, freed at the end of the step     (the peak)
//   staging          16 MiB pinned host per step, freed
//
// With the default 4 steps: peak 256 + 4 x 8 + 192 = 480 MiB on device 0 during
// the last step; 288 MiB in 5 allocations leak (1 x 256 + 4 x 8).
//
// CMT_SAMPLE_DEVICE_RESET=1 in the environment ends with cudaDeviceReset():
// the leaked buffers are still never freed by the program (cumemtrace reports
// the same leaks), but the context is destroyed before exit, which is when
// compute-sanitizer --leak-check full reports leaks.
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

static void launch_fill(float *p, size_t bytes, float v)
{
    size_t n = bytes / sizeof(float);
    fill<<<unsigned((n + 255) / 256), 256>>>(p, n, v);
    CHECK(cudaGetLastError());
}

__attribute__((noinline)) static float *load_weights()
{
    float *w;
    CHECK(cudaMalloc(&w, 256 * MiB));
    launch_fill(w, 256 * MiB, 1.0f);
    return w;
}

__attribute__((noinline)) static void cache_batch(int step)
{
    float *c;
    CHECK(cudaMalloc(&c, 8 * MiB)); // forgotten: a cache that is never evicted
    launch_fill(c, 8 * MiB, float(step));
}

__attribute__((noinline)) static void train_step(int step)
{
    float *act[3];
    for (int i = 0; i < 3; i++) {
        CHECK(cudaMalloc(&act[i], 64 * MiB));
        launch_fill(act[i], 64 * MiB, float(step + i));
    }
    void *staging;
    CHECK(cudaMallocHost(&staging, 16 * MiB));
    CHECK(cudaMemcpy(staging, act[0], 16 * MiB, cudaMemcpyDeviceToHost));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFreeHost(staging));
    for (int i = 0; i < 3; i++)
        CHECK(cudaFree(act[i]));
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? std::atoi(argv[1]) : 4;
    float *weights = load_weights();
    for (int s = 0; s < steps; s++) {
        cache_batch(s);
        train_step(s);
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("leak_and_peak: %d steps done\n", steps);
    (void)weights; // never freed: leaks on purpose
    const char *reset = std::getenv("CMT_SAMPLE_DEVICE_RESET");
    if (reset && reset[0] == '1')
        CHECK(cudaDeviceReset());
    return 0;
}
