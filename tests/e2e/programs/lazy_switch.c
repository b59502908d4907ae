/* SPDX-License-Identifier: MIT */
/* Device switches that only the runtime knows of (lazy_rt.c): sizes name the
 * device each allocation must be recorded on, TAG(device * 100 + n). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <unistd.h>

#define TAG(n) ((size_t)(n) * 4096)

static int serial;

static void alloc_on(int d)
{
    void *p;
    if (cudaMalloc(&p, TAG(d * 100 + 1 + serial++)) != cudaSuccess) {
        fprintf(stderr, "lazy_switch: cudaMalloc failed\n");
        _exit(1);
    }
}

int main(void)
{
    int valid[] = {2};
    alloc_on(0);
    alloc_on(0);
    cudaSetValidDevices(valid, 1); /* no device selected yet: 2 from now on */
    alloc_on(2);
    alloc_on(2);
    for (int i = 0; i < 9; i++) {
        cudaSetDevice(i % 3);
        alloc_on(i % 3);
        alloc_on(i % 3);
    }
    printf("lazy_switch done\n");
    return 0;
}
