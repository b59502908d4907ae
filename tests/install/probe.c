/* SPDX-License-Identifier: MIT */
/* Compiled by tests/install/test_install.py against the installed headers,
 * with the flags `pkg-config --cflags --libs cumemtrace` gives: 3 MiB
 * allocated and freed in the phase "install" (the peak), then 1 MiB that
 * leaks. format.h is included to show that it compiles installed too. */
#include <cumemtrace/cumemtrace.h>
#include <cumemtrace/format.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#define MiB (1024u * 1024u)

int main(void)
{
    void *p, *leak;
    cumemtrace_phase_push("install");
    if (cudaMalloc(&p, 3 * MiB) != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 1;
    cumemtrace_phase_pop();
    if (cudaMalloc(&leak, 1 * MiB) != cudaSuccess)
        return 1;
    printf("probe done (trace format %d)\n", CMT_VERSION_MAJOR);
    return 0;
}
