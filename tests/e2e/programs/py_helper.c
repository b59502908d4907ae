/* SPDX-License-Identifier: MIT */
/* C code for the Python programs of test_python.py (loaded with ctypes): a
 * function that calls back into Python, and a thread of pure C that
 * allocates while Python code runs in the program's main thread. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>

int cmt_py_call_back(int (*callback)(int), int arg);
int cmt_py_start_c_thread(unsigned count, size_t size);
int cmt_py_c_thread_done(void);
int cmt_py_join_c_thread(void);
int cmt_py_deep_native(unsigned depth, size_t size);

/* Python -> C -> Python: the callback allocates. Not a tail call, so this
 * frame is on the stack while the callback runs. */
__attribute__((noinline)) int cmt_py_call_back(int (*callback)(int), int arg)
{
    int r = callback(arg);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static pthread_t worker;
static unsigned worker_count;
static size_t worker_size;
static int worker_done;

__attribute__((noinline)) static void c_thread_allocate(void)
{
    for (unsigned i = 0; i < worker_count; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, worker_size) != cudaSuccess)
            break;
    }
    __asm__ volatile("" ::: "memory");
}

static void *c_thread_main(void *arg)
{
    (void)arg;
    c_thread_allocate();
    __atomic_store_n(&worker_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int cmt_py_start_c_thread(unsigned count, size_t size)
{
    worker_count = count;
    worker_size = size;
    return pthread_create(&worker, NULL, c_thread_main, NULL);
}

int cmt_py_c_thread_done(void)
{
    return __atomic_load_n(&worker_done, __ATOMIC_ACQUIRE);
}

int cmt_py_join_c_thread(void)
{
    return pthread_join(worker, NULL);
}

/* A native stack deeper than the depth limit between the interpreter and
 * the allocation (as a framework's C++ under a model's forward is). Not a
 * tail call: each level stays on the stack. */
__attribute__((noinline)) int cmt_py_deep_native(unsigned depth, size_t size)
{
    if (depth == 0) {
        void *p = NULL;
        return cudaMalloc(&p, size) == cudaSuccess ? 0 : -1;
    }
    int r = cmt_py_deep_native(depth - 1, size);
    __asm__ volatile("" ::: "memory");
    return r;
}
