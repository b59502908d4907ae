/* SPDX-License-Identifier: MIT */
/* A training step shaped like PyTorch's, through the test doubles of
 * libtorch_cpu.so and libc10_cuda.so (torch_cpu_double.c,
 * c10_cuda_double.c) on the simulated device (test_pytorch.py asserts what
 * follows from it). In order:
 *   setup:        the cuBLAS handle (2 MiB inside libcublas.so.13), kept;
 *   forward_step: addmm of 20 MiB (a segment of 20 MiB, the tensor kept to
 *                 exit) and of 6 MiB (a segment of 6 MiB; the tensor freed);
 *   backward:     autograd's thread (no frame of the program's: it starts in
 *                 libtorch) makes an 8 MiB gradient (AddmmBackward0, a
 *                 segment of 8 MiB), kept to exit;
 *                 PyTorch now reserves 34 MiB: its own peak;
 *   empty_cache:  the 6 MiB segment, unused, goes back to CUDA;
 *   leak_buffer:  1 MiB allocated by the program and never freed;
 *   scratch:      40 MiB allocated and freed: the device peak, 71 MiB, with
 *                 28 MiB of PyTorch's in it.
 * At exit: the 20 and 8 MiB segments (PyTorch's cache), 2 MiB of cuBLAS, the
 * 1 MiB leak. With PYTORCH_NO_CUDA_MEMORY_CACHING=1 each tensor is its own
 * cudaMalloc: the 20 MiB tensor and the gradient kept are leaks, the device
 * peak is 2 + 20 + 6 = 28 MiB early on, then 2 + 20 + 8 + 1 + 40 = 71 MiB. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

#define MiB (1024u * 1024u)

void *pybind_dispatcher(size_t n) __asm__("_ZN8pybind1112cpp_function10dispatcherEm");
void *engine_thread_main(void *arg) __asm__("_ZN5torch8autograd6Engine11thread_mainEm");
void *get_blas_handle(void) __asm__("_ZN2at4cuda24getCurrentCUDABlasHandleEv");
void native_empty_cache(void) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator10emptyCacheEv");
void c10_double_free(void *p);

static void *kept_tensor, *kept_leak;

__attribute__((noinline)) static void setup(void)
{
    get_blas_handle();
}

__attribute__((noinline)) static void forward_step(void)
{
    kept_tensor = pybind_dispatcher(20 * MiB); /* forward: the tensor kept */
    void *t = pybind_dispatcher(6 * MiB); /* forward: a temporary */
    c10_double_free(t);
}

__attribute__((noinline)) static void backward(void)
{
    static size_t grad_bytes = 8 * MiB;
    pthread_t th;
    if (pthread_create(&th, NULL, engine_thread_main, &grad_bytes) == 0)
        pthread_join(th, NULL);
}

__attribute__((noinline)) static void leak_buffer(void)
{
    cudaMalloc(&kept_leak, 1 * MiB); /* leak: never freed */
}

__attribute__((noinline)) static void scratch(void)
{
    void *p = NULL;
    cudaMalloc(&p, 40 * MiB); /* scratch */
    cudaFree(p);
}

int main(void)
{
    setup();
    forward_step();
    backward();
    native_empty_cache();
    leak_buffer();
    scratch();
    printf("torch_train done\n");
    return 0;
}
