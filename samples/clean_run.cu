// SPDX-License-Identifier: MIT
// The clean counterpart of leak_and_peak.cu, for `cumemtrace check`: the same
// kinds of allocation (weights kept for the run, a per-step cache, per-step
// activations, pinned staging, and a stream-ordered buffer), every one freed
// before exit. `cumemtrace run --check -- ./clean_run` must pass, and
// compute-sanitizer --leak-check full must report 0 bytes leaked.
//
// With the default 4 steps the peak on device 0 is 256 + 4 x 8 + 3 x 64 + 32
// = 512 MiB, during the last step (the 32 MiB stream-ordered buffer is live
// together with the activations).
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
constexpr int kMaxSteps = 64;

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    if (i < n)
        p[i] = v;
}

static void launch_fill(float *p, size_t bytes, float v, cudaStream_t s = 0)
{
    size_t n = bytes / sizeof(float);
    fill<<<unsigned((n + 255) / 256), 256, 0, s>>>(p, n, v);
    CHECK(cudaGetLastError());
}

__attribute__((noinline)) static float *load_weights()
{
    float *w;
    CHECK(cudaMalloc(&w, 256 * MiB));
    launch_fill(w, 256 * MiB, 1.0f);
    return w;
}

__attribute__((noinline)) static float *cache_batch(int step)
{
    float *c;
    CHECK(cudaMalloc(&c, 8 * MiB)); // kept until the end of the run, then freed
    launch_fill(c, 8 * MiB, float(step));
    return c;
}

__attribute__((noinline)) static void train_step(int step, cudaStream_t stream)
{
    float *act[3];
    for (int i = 0; i < 3; i++) {
        CHECK(cudaMalloc(&act[i], 64 * MiB));
        launch_fill(act[i], 64 * MiB, float(step + i));
    }
    float *scratch;
    CHECK(cudaMallocAsync(reinterpret_cast<void **>(&scratch), 32 * MiB, stream));
    launch_fill(scratch, 32 * MiB, 2.0f, stream);
    void *staging;
    CHECK(cudaMallocHost(&staging, 16 * MiB));
    CHECK(cudaMemcpy(staging, act[0], 16 * MiB, cudaMemcpyDeviceToHost));
    CHECK(cudaFreeAsync(scratch, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaFreeHost(staging));
    for (int i = 0; i < 3; i++)
        CHECK(cudaFree(act[i]));
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? std::atoi(argv[1]) : 4;
    if (steps < 0 || steps > kMaxSteps)
        steps = 4;
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    float *weights = load_weights();
    float *cache[kMaxSteps];
    for (int s = 0; s < steps; s++) {
        cache[s] = cache_batch(s);
        train_step(s, stream);
    }
    CHECK(cudaDeviceSynchronize());
    for (int s = 0; s < steps; s++)
        CHECK(cudaFree(cache[s]));
    CHECK(cudaFree(weights));
    CHECK(cudaStreamDestroy(stream));
    std::printf("clean_run: %d steps done, everything freed\n", steps);
    const char *reset = std::getenv("CMT_SAMPLE_DEVICE_RESET");
    if (reset && reset[0] == '1')
        CHECK(cudaDeviceReset());
    return 0;
}
