/* SPDX-License-Identifier: MIT */
/* Many threads allocating and freeing at once: no two live allocations
 * overlap (each thread stamps its blocks and checks the stamp survives), and
 * everything balances at the end. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "simcuda.h"

#define THREADS 8
#define ROUNDS 2000
#define LIVE 16

static void *churn(void *arg)
{
    unsigned char stamp = (unsigned char)(uintptr_t)arg;
    void *blocks[LIVE] = {0};
    size_t sizes[LIVE] = {0};
    unsigned seed = stamp * 2654435761u;
    for (int round = 0; round < ROUNDS; round++) {
        int slot = round % LIVE;
        if (blocks[slot]) {
            unsigned char *bytes = blocks[slot];
            CHECK(bytes[0] == stamp && bytes[sizes[slot] - 1] == stamp);
            if (round % 3 == 0)
                CHECK_RT(cudaFreeAsync(blocks[slot], 0), cudaSuccess);
            else
                CHECK_RT(cudaFree(blocks[slot]), cudaSuccess);
        }
        seed = seed * 1103515245u + 12345u;
        sizes[slot] = 1 + (seed >> 8) % (256 * 1024);
        if (round % 3 == 1)
            CHECK_RT(cudaMallocAsync(&blocks[slot], sizes[slot], 0), cudaSuccess);
        else
            CHECK_RT(cudaMalloc(&blocks[slot], sizes[slot]), cudaSuccess);
        memset(blocks[slot], stamp, sizes[slot]);
    }
    for (int slot = 0; slot < LIVE; slot++)
        CHECK_RT(cudaFree(blocks[slot]), cudaSuccess);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, churn, (void *)(t + 1)) == 0);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    return 0;
}
