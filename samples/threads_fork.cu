// SPDX-License-Identifier: MIT
// Several threads allocate (plain and stream-ordered), compute and free on
// their own streams while the main thread forks a child that does host work
// only. Prints checksums that must not change under the profiler.
//
// Per worker thread: 1 cudaMalloc (its result scalar) + 50 cudaMalloc/cudaFree
// pairs + 200 cudaMallocAsync/cudaFreeAsync pairs; the scalars are freed at the
// end. With 4 workers: 204 cudaMalloc, 204 cudaFree, 800 cudaMallocAsync,
// 800 cudaFreeAsync. The child makes no CUDA call and writes no trace.
#include <cuda_runtime.h>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

constexpr int kWorkers = 4;

__global__ void fill_and_sum(unsigned *buf, int n, unsigned seed, unsigned long long *sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = (seed * 2654435761u) ^ unsigned(i);
        buf[i] = v;
        atomicAdd(sum, (unsigned long long)(v & 0xffff));
    }
}

struct Work {
    int id;
    unsigned long long checksum;
};

__attribute__((noinline)) static void *worker(void *arg)
{
    Work *w = static_cast<Work *>(arg);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned long long *sum;
    CHECK(cudaMalloc(&sum, sizeof *sum));
    unsigned long long total = 0;
    for (int i = 0; i < 250; i++) {
        int n = 1024 * (1 + (i + w->id) % 64);
        unsigned *buf;
        bool async = i % 5 != 0;
        if (async)
            CHECK(cudaMallocAsync(&buf, n * sizeof(unsigned), s));
        else
            CHECK(cudaMalloc(&buf, n * sizeof(unsigned)));
        CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, s));
        fill_and_sum<<<(n + 255) / 256, 256, 0, s>>>(buf, n, unsigned(w->id * 1000 + i), sum);
        unsigned long long host = 0;
        CHECK(cudaMemcpyAsync(&host, sum, sizeof host, cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        total += host;
        if (async)
            CHECK(cudaFreeAsync(buf, s));
        else
            CHECK(cudaFree(buf));
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(sum));
    CHECK(cudaStreamDestroy(s));
    w->checksum = total;
    return nullptr;
}

int main()
{
    CHECK(cudaFree(nullptr)); // create the context before the threads race for it
    pthread_t th[kWorkers];
    Work work[kWorkers];
    for (int i = 0; i < kWorkers; i++) {
        work[i] = {i, 0};
        pthread_create(&th[i], nullptr, worker, &work[i]);
    }
    pid_t pid = fork();
    if (pid == 0) {
        // Host work only: CUDA cannot be used after fork.
        unsigned long long h = 1469598103934665603ull;
        for (int i = 0; i < 1000000; i++)
            h = (h ^ unsigned(i)) * 1099511628211ull;
        std::printf("child hash %llx\n", h);
        std::fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    for (int i = 0; i < kWorkers; i++)
        pthread_join(th[i], nullptr);
    for (int i = 0; i < kWorkers; i++)
        std::printf("worker %d checksum %llu\n", i, work[i].checksum);
    std::printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
