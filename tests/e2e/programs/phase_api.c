/* SPDX-License-Identifier: MIT */
/* phase_api: the public C API (include/cumemtrace/cumemtrace.h), steps from
 * cumemtrace_step. Runs the same with or without the shim (without it,
 * every call does nothing). 12 steps (cumemtrace_step(100 + i)):
 *   forward: 8 MiB allocated and freed
 *   optimizer: 16 MiB leaked (leak_in_optimizer)
 * and a mark "checkpoint" in step 105. Live at the end of step i:
 * 16 (i + 1) MiB; the peak, 12 x 16 - 16 + 16 = 192 MiB... see
 * test_phases.py. */
#include <cumemtrace/cumemtrace.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

__attribute__((noinline)) static void leak_in_optimizer(void)
{
    void *p;
    check(cudaMalloc(&p, 16 * MiB), "leak");
}

int main(void)
{
    for (uint64_t i = 0; i < 12; i++) {
        cumemtrace_step(100 + i);
        cumemtrace_phase_push("forward");
        void *a;
        check(cudaMalloc(&a, 8 * MiB), "forward");
        check(cudaFree(a), "forward free");
        cumemtrace_phase_pop();
        cumemtrace_phase_push("optimizer");
        leak_in_optimizer();
        cumemtrace_phase_pop();
        if (i == 5)
            cumemtrace_mark("checkpoint");
    }
    printf("phase_api done\n");
    return 0;
}
