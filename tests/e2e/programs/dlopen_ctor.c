/* SPDX-License-Identifier: MIT */
/* Loads and unloads a library whose constructor allocates, 20 times, while
 * another thread allocates without pause. Usage: dlopen_ctor PATH_TO_LIB */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static volatile int stop;
static int churned; /* written by the churn thread only */

static void *churn(void *arg)
{
    (void)arg;
    while (!stop) {
        void *p;
        if (cudaMalloc(&p, 4096) == cudaSuccess && cudaFree(p) == cudaSuccess)
            __atomic_store_n(&churned, churned + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    /* Initialise the runtime first: a runtime that loads the driver with
     * dlopen on first use cannot do so while another thread holds the
     * loader's lock in a constructor (NVIDIA's as much as the simulated one);
     * that deadlock is the runtime's, not what this test looks at. */
    void *warm;
    cudaMalloc(&warm, 4096);
    cudaFree(warm);
    pthread_t th;
    pthread_create(&th, NULL, churn, NULL);
    while (!__atomic_load_n(&churned, __ATOMIC_RELAXED))
        sched_yield();
    int loaded = 0;
    for (int i = 0; i < 20; i++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        int (*check)(void) = (int (*)(void))dlsym(h, "ctor_alloc_loaded");
        loaded += check && check();
        dlclose(h);
    }
    stop = 1;
    pthread_join(th, NULL);
    printf("loaded %d churned>0 %d\n", loaded, churned > 0);
    return 0;
}
