/* SPDX-License-Identifier: MIT */
/* A test double of the libtorch frames between a Python call and PyTorch's
 * allocator, built as libtorch_cpu.so with PyTorch's C++ names (asm labels;
 * no DWARF, as the real library): the Python binding, the dispatcher, the
 * autograd wrapper, the kernel wrapper and the factory for the forward
 * pass; autograd's engine, the generated backward node and the operator it
 * calls for the backward pass; the cuBLAS handle; PyTorch's pinned host
 * memory cache (CachingHostAllocator, in libtorch_cuda.so in a real
 * install: only its names matter) under Tensor.pin_memory(). Each frame calls the next
 * (not inlined, not a tail call: -O0), so a stack taken in the allocator
 * holds all of them, as on the H200 (issue 14). */
#include <stddef.h>

#define API __attribute__((visibility("default"), noinline))

/* libc10_cuda.so (c10_cuda_double.c) */
void *native_allocate(size_t size) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator8allocateEm");
/* libcublas.so.13 (fake_cublas.c) */
int cublasCreate_v2(void **handle);

API void *empty_generic(size_t n) __asm__("_ZN2at6detail13empty_genericEm");
API void *wrapper_cuda_addmm(size_t n) __asm__("_ZN2at12_GLOBAL__N_118wrapper_CUDA_addmmEm");
API void *variable_type_addmm(size_t n) __asm__("_ZN5torch8autograd12VariableType5addmmEm");
API void *dispatcher_call(size_t n) __asm__("_ZN3c1010Dispatcher4callEm");
API void *ops_addmm_call(size_t n) __asm__("_ZN2at4_ops5addmm4callEm");
API void *thp_variable_addmm(size_t n) __asm__("_ZN5torch8autograd17THPVariable_addmmEm");
API void *pybind_dispatcher(size_t n) __asm__("_ZN8pybind1112cpp_function10dispatcherEm");
API void *ops_mm_call(size_t n) __asm__("_ZN2at4_ops2mm4callEm");
API void *addmm_backward_apply(size_t n) __asm__("_ZN5torch8autograd9generated14AddmmBackward05applyEm");
API void *engine_evaluate_function(size_t n) __asm__("_ZN5torch8autograd6Engine17evaluate_functionEm");
API void *engine_thread_main(void *arg) __asm__("_ZN5torch8autograd6Engine11thread_mainEm");
API void *get_blas_handle(void) __asm__("_ZN2at4cuda24getCurrentCUDABlasHandleEv");

void *empty_generic(size_t n) { return native_allocate(n); }
void *wrapper_cuda_addmm(size_t n) { return empty_generic(n); }
void *variable_type_addmm(size_t n) { return wrapper_cuda_addmm(n); }
void *dispatcher_call(size_t n) { return variable_type_addmm(n); }
void *ops_addmm_call(size_t n) { return dispatcher_call(n); }
void *thp_variable_addmm(size_t n) { return ops_addmm_call(n); }
void *pybind_dispatcher(size_t n) { return thp_variable_addmm(n); }

void *ops_mm_call(size_t n) { return empty_generic(n); }
void *addmm_backward_apply(size_t n) { return ops_mm_call(n); }
void *engine_evaluate_function(size_t n) { return addmm_backward_apply(n); }

/* autograd's device thread: arg points at the bytes of the gradient to
 * make, which stays alive (a parameter's .grad). */
void *engine_thread_main(void *arg)
{
    return engine_evaluate_function(*(size_t *)arg);
}

/* PyTorch's host cache, as 2.x names it: pin_memory() reaches
 * CachingHostAllocatorImpl::allocate, whose allocate_host_memory calls
 * cudaHostAlloc; the block stays cached after the tensor dies. Only frames
 * of gen_pytorch_trace's traces (never called). */
API void *host_allocate_host_memory(size_t n)
    __asm__("_ZN2at4cuda12_GLOBAL__N_128CUDACachingHostAllocatorImpl20allocate_host_memoryEmPPv");
API void *host_allocator_allocate(size_t n) __asm__("_ZN2at4cuda12_GLOBAL__N_124CUDACachingHostAllocator8allocateEm");
API void *native_pin_memory(size_t n) __asm__("_ZN2at6native11_pin_memoryEm");
API void *ops_pin_memory_call(size_t n) __asm__("_ZN2at4_ops11_pin_memory4callEm");

void *host_allocate_host_memory(size_t n) { return (void *)n; }
void *host_allocator_allocate(size_t n) { return host_allocate_host_memory(n); }
void *native_pin_memory(size_t n) { return host_allocator_allocate(n); }
void *ops_pin_memory_call(size_t n) { return native_pin_memory(n); }

void *get_blas_handle(void)
{
    void *h = NULL;
    return cublasCreate_v2(&h) == 0 ? h : NULL;
}
