/* SPDX-License-Identifier: MIT */
/* A test double of NCCL, built as libnccl.so.2: only what the job view
 * relies on (a module named libnccl.so.* whose functions named nccl* take
 * device memory for a communicator and give it back when it is destroyed).
 * It is no NCCL: no collectives, two 4 MiB buffers per communicator on the
 * calling thread's current device. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#define FAKE_NCCL_BUFFER (4u << 20)

struct fake_comm {
    void *buffers[2];
};

__attribute__((noinline)) static void *nccl_alloc_buffer(void)
{
    void *p = NULL;
    return cudaMalloc(&p, FAKE_NCCL_BUFFER) == cudaSuccess ? p : NULL;
}

__attribute__((visibility("default"))) int ncclCommInitRank(void **comm, int nranks, void *id, int rank);
__attribute__((visibility("default"))) int ncclCommDestroy(void *comm);

int ncclCommInitRank(void **comm, int nranks, void *id, int rank)
{
    (void)nranks, (void)id, (void)rank;
    struct fake_comm *c = calloc(1, sizeof *c);
    if (!c)
        return 1; /* ncclSystemError */
    for (int i = 0; i < 2; i++)
        c->buffers[i] = nccl_alloc_buffer();
    *comm = c;
    return c->buffers[0] && c->buffers[1] ? 0 : 1;
}

int ncclCommDestroy(void *comm)
{
    struct fake_comm *c = comm;
    for (int i = 0; i < 2; i++)
        cudaFree(c->buffers[i]);
    free(c);
    return 0;
}
