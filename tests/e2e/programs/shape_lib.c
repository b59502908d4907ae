/* SPDX-License-Identifier: MIT */
/* Built twice, as libcmt_shape_a.so and libcmt_shape_b.so: the same code, so
 * the second, loaded where the first was, has its allocating instruction at
 * the very address the first had (stack_shapes dl). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

void shape_lib_alloc(size_t size);

__attribute__((noinline)) void shape_lib_alloc(size_t size)
{
    void *p;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        fprintf(stderr, "shape_lib_alloc: cudaMalloc(%zu) failed\n", size);
        exit(1);
    }
    __asm__ volatile("" ::: "memory");
}
