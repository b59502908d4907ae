// SPDX-License-Identifier: MIT
// Two processes sharing device memory over CUDA IPC, for
// run_ipc_validation.sh (docs/report.md, "Memory mapped from another
// process"):
//
//   ipc_pair producer DIR BYTES   allocates BYTES (export_buffer), exports it with
//                                 cudaIpcGetMemHandle, tries to open its own handle
//                                 (CUDA refuses), writes DIR/handle, waits for
//                                 DIR/done, frees
//   ipc_pair consumer DIR [leak]  opens DIR/handle (map_buffer), asks
//                                 cuMemGetAddressRange for the mapping's size,
//                                 writes into it and reads it back, closes it
//                                 (not with leak), writes DIR/done
//
// Plain nvcc (static cudart): the shim sees the driver's cuIpc* through
// cuGetProcAddress. Each prints key=value lines the script compares with
// the reports.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %s (%d)\n", what, cudaGetErrorName(r), (int)r);
        exit(1);
    }
}

static void path(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static int wait_for(const char *file, void *buf, size_t len)
{
    for (int i = 0; i < 60000; i++) {
        FILE *f = fopen(file, "rb");
        if (f) {
            size_t got = len ? fread(buf, 1, len, f) : 0;
            fclose(f);
            if (got == len)
                return 0;
        }
        usleep(1000);
    }
    fprintf(stderr, "%s never came\n", file);
    return -1;
}

static void write_file(const char *file, const void *buf, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0 || rename(tmp, file) != 0) {
        perror(file);
        exit(1);
    }
}

__attribute__((noinline)) static void *export_buffer(size_t bytes, cudaIpcMemHandle_t *h)
{
    void *p = NULL;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaIpcGetMemHandle(h, p), "cudaIpcGetMemHandle");
    return p;
}

__attribute__((noinline)) static void *map_buffer(cudaIpcMemHandle_t h)
{
    void *p = NULL;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s producer DIR BYTES | consumer DIR [leak]\n", argv[0]);
        return 2;
    }
    char handle_file[4096], done_file[4096];
    path(handle_file, sizeof handle_file, argv[2], "handle");
    path(done_file, sizeof done_file, argv[2], "done");
    cudaIpcMemHandle_t h;
    if (!strcmp(argv[1], "producer") && argc >= 4) {
        size_t bytes = strtoull(argv[3], NULL, 0);
        void *p = export_buffer(bytes, &h);
        CUdeviceptr base = 0;
        size_t size = 0;
        CUresult rr = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)p);
        printf("producer_requested=%zu\nproducer_range_result=%d\nproducer_range_bytes=%zu\n", bytes, (int)rr, size);
        void *own = NULL;
        cudaError_t r = cudaIpcOpenMemHandle(&own, h, cudaIpcMemLazyEnablePeerAccess);
        printf("producer_open_own=%d (%s)\n", (int)r, cudaGetErrorName(r));
        cudaGetLastError();
        write_file(handle_file, &h, sizeof h);
        if (wait_for(done_file, NULL, 0) != 0)
            return 1;
        check(cudaFree(p), "cudaFree");
        return 0;
    }
    if (!strcmp(argv[1], "consumer")) {
        bool leak = argc >= 4 && !strcmp(argv[3], "leak");
        if (wait_for(handle_file, &h, sizeof h) != 0)
            return 1;
        void *p = map_buffer(h);
        CUdeviceptr base = 0;
        size_t size = 0;
        CUresult rr = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)p);
        printf("consumer_range_result=%d\nconsumer_mapped_bytes=%zu\n", (int)rr, size);
        check(cudaMemset(p, 0x5a, 4096), "cudaMemset");
        unsigned char back[16];
        check(cudaMemcpy(back, p, sizeof back, cudaMemcpyDeviceToHost), "cudaMemcpy");
        printf("consumer_read_back=0x%02x\n", back[7]);
        if (!leak)
            check(cudaIpcCloseMemHandle(p), "cudaIpcCloseMemHandle");
        printf("consumer_closed=%d\n", leak ? 0 : 1);
        write_file(done_file, "", 0);
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
