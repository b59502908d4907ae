/* SPDX-License-Identifier: MIT */
/* top_schedule: allocates on a known schedule for `cumemtrace top`'s tests
 * (test_top.py), waiting at known points for the test to look:
 *
 *   top_schedule STEPS
 *
 * keeps 4 MiB (keep_model), then for step i = 1..STEPS: cumemtrace_step(i),
 * phase "forward" opened; leak_activation keeps 1 MiB, scratch allocates
 * 8 MiB and frees it; prints "step i" and waits for a line on stdin, then
 * closes the phase. After the last step it prints "done" and exits 0.
 *
 * When "step i" is printed: live (4 + i) MiB in 1 + i allocations, peak
 * (12 + i) MiB (reached in scratch), step i, phase forward; the top site by
 * live bytes keep_model while i <= 4, leak_activation from i = 5; growth
 * 1 MiB per step from i = 2 (live at each step's start rises by the 1 MiB
 * leak_activation kept in the step before). */
#include <cumemtrace/cumemtrace.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)

static void must(cudaError_t r)
{
    if (r != cudaSuccess)
        exit(3);
}

__attribute__((noinline)) static void keep_model(void)
{
    void *p;
    must(cudaMalloc(&p, 4 * MiB));
}

__attribute__((noinline)) static void leak_activation(void)
{
    void *p;
    must(cudaMalloc(&p, 1 * MiB));
}

__attribute__((noinline)) static void scratch(void)
{
    void *p;
    must(cudaMalloc(&p, 8 * MiB));
    must(cudaFree(p));
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    keep_model();
    for (int i = 1; i <= steps; i++) {
        cumemtrace_step((uint64_t)i);
        cumemtrace_phase_push("forward");
        leak_activation();
        scratch();
        printf("step %d\n", i);
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            line[0] = '\0';
        cumemtrace_phase_pop();
    }
    printf("done\n");
    return 0;
}
