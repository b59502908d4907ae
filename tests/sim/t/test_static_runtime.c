/* SPDX-License-Identifier: MIT */
/* A program linked against libcudart_sim_static.a, like one linked against
 * NVIDIA's libcudart_static.a: no libcudart.so is loaded, no libcuda is
 * linked (the archive reaches the driver only through dlopen and
 * cuGetProcAddress, so linking without -lcuda proves it calls nothing by
 * name), and allocations land on the simulated device. The driver is loaded
 * with the runtime, before main, so that its fork handlers are in place
 * before any thread (tests/sim/README.md, "fork"). */
#include <dlfcn.h>

#include "check.h"

int main(void)
{
    CHECK(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD) == NULL);
    void *loaded = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(loaded != NULL);
    if (loaded)
        dlclose(loaded);
    void *p, *q;
    CHECK_RT(cudaMalloc(&p, 1 * MiB), cudaSuccess);
    CHECK_EQ((uintptr_t)p, 0x500000000000ull);
    CHECK_RT(cudaMallocAsync(&q, 1 * MiB, 0), cudaSuccess);
    CHECK_EQ((uintptr_t)q, 0x500000100000ull);

    /* The runtime loaded the fake driver; ask it what it holds. */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(driver != NULL);
    size_t (*used_bytes)(int) = (size_t(*)(int))dlsym(driver, "simcuda_device_used_bytes");
    CHECK(used_bytes != NULL);
    CHECK_EQ(used_bytes(0), 3 * MiB);
    CHECK_RT(cudaFree(p), cudaSuccess);
    CHECK_RT(cudaFreeAsync(q, 0), cudaSuccess);
    CHECK_RT(cudaStreamSynchronize(0), cudaSuccess);
    CHECK_EQ(used_bytes(0), 0);
    dlclose(driver);
    return 0;
}
