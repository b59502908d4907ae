/* SPDX-License-Identifier: MIT */
/* CUDA IPC with the runtime linked statically (the simulated runtime's
 * archive): its cudaIpc* reach the driver through cuGetProcAddress, as
 * NVIDIA's static cudart does, so the shim sees them as the driver's
 * cuIpc*. Started as two ranks by launch_ranks.py (test_ranks.py): rank 0
 * allocates 6 MiB (share_buffer) and exports it, writes the handle to
 * $IPC_DIR/handles, frees it once $IPC_DIR/done exists; rank 1 opens it
 * (open_buffer), writes into it and closes it. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %d\n", what, (int)r);
        exit(1);
    }
}

static void file_path(char *buf, size_t len, const char *name)
{
    const char *dir = getenv("IPC_DIR");
    snprintf(buf, len, "%s/%s", dir && *dir ? dir : ".", name);
}

static void wait_for(const char *name, void *buf, size_t len)
{
    char path[4096];
    file_path(path, sizeof path, name);
    for (int i = 0; i < 30000; i++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = len ? fread(buf, 1, len, f) : 0;
            fclose(f);
            if (got == len)
                return;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "ipc_static: %s never came\n", path);
    exit(1);
}

static void put(const char *name, const void *buf, size_t len)
{
    char path[4096], tmp[4200];
    file_path(path, sizeof path, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "ipc_static: cannot write %s\n", path);
        exit(1);
    }
}

__attribute__((noinline)) static void *share_buffer(cudaIpcMemHandle_t *h)
{
    void *p;
    check(cudaMalloc(&p, 6u << 20), "cudaMalloc");
    check(cudaIpcGetMemHandle(h, p), "cudaIpcGetMemHandle");
    return p;
}

__attribute__((noinline)) static void *open_buffer(cudaIpcMemHandle_t h)
{
    void *p = NULL;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
}

int main(void)
{
    const char *r = getenv("RANK");
    int rank = r ? atoi(r) : 0;
    check(cudaSetDevice(0), "cudaSetDevice");
    cudaIpcMemHandle_t h;
    if (rank == 0) {
        void *p = share_buffer(&h);
        put("handles", &h, sizeof h);
        wait_for("done", NULL, 0);
        check(cudaFree(p), "cudaFree");
    } else if (rank == 1) {
        wait_for("handles", &h, sizeof h);
        void *p = open_buffer(h);
        check(cudaMemset(p, 3, 6u << 20), "cudaMemset");
        check(cudaIpcCloseMemHandle(p), "cudaIpcCloseMemHandle");
        put("done", "", 0);
    }
    printf("ipc_static rank %d done\n", rank);
    return 0;
}
