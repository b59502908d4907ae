// SPDX-License-Identifier: MIT
// Two processes sharing a stream-ordered pool's allocation, and an
// allocation by a pointer inside it, for run_ipc_validation.sh part 3
// (docs/report.md, "Memory mapped from another process"):
//
//   ipc_pool_pair producer DIR BYTES  creates a pool that may be shared as a POSIX
//                                     file descriptor, allocates BYTES from it
//                                     (pool_buffer), exports the pool
//                                     (cudaMemPoolExportToShareableHandle) and the
//                                     pointer (cudaMemPoolExportPointer); allocates
//                                     64 MiB (inner_buffer) and exports the pointer
//                                     4 KiB inside it (cudaIpcGetMemHandle); sends
//                                     the descriptor over the Unix socket DIR/sock
//                                     (SCM_RIGHTS) with the export data and the IPC
//                                     handle; waits for the consumer's "done"; frees
//   ipc_pool_pair consumer DIR        imports the pool and the pointer
//                                     (import_pool_pointer), asks cuMemGetAddressRange
//                                     for its size, writes into it, frees it with
//                                     cudaFreeAsync; opens the IPC handle
//                                     (map_inner), asks its size, closes it
//
// Plain nvcc (static cudart): the shim sees the driver's cuMemPool* and
// cuIpc* through cuGetProcAddress. Each prints key=value lines the script
// compares with the reports.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MiB (1024ull * 1024ull)

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %s (%d)\n", what, cudaGetErrorName(r), (int)r);
        exit(1);
    }
}

struct payload {
    struct cudaMemPoolPtrExportData pool_ptr;
    cudaIpcMemHandle_t inner;
};

static void sock_addr(struct sockaddr_un *a, const char *dir)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (snprintf(a->sun_path, sizeof a->sun_path, "%s/sock", dir) >= (int)sizeof a->sun_path) {
        fprintf(stderr, "%s/sock: path too long for a Unix socket\n", dir);
        exit(1);
    }
}

static void send_fd(int s, int fd, const struct payload *p)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct iovec iov = {(void *)p, sizeof *p};
    struct msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(s, &m, 0) != (ssize_t)sizeof *p) {
        perror("sendmsg");
        exit(1);
    }
}

static int recv_fd(int s, struct payload *p)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {p, sizeof *p};
    struct msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    if (recvmsg(s, &m, MSG_WAITALL) != (ssize_t)sizeof *p) {
        perror("recvmsg");
        exit(1);
    }
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) {
        fprintf(stderr, "no descriptor came with the message\n");
        exit(1);
    }
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

__attribute__((noinline)) static void *pool_buffer(cudaMemPool_t pool, size_t bytes)
{
    void *p = NULL;
    check(cudaMallocFromPoolAsync(&p, bytes, pool, 0), "cudaMallocFromPoolAsync");
    check(cudaStreamSynchronize(0), "cudaStreamSynchronize");
    return p;
}

__attribute__((noinline)) static void *inner_buffer(cudaIpcMemHandle_t *h)
{
    void *p = NULL;
    check(cudaMalloc(&p, 64 * MiB), "cudaMalloc");
    check(cudaIpcGetMemHandle(h, (char *)p + 4096), "cudaIpcGetMemHandle inside");
    return p;
}

__attribute__((noinline)) static void *import_pool_pointer(cudaMemPool_t pool, struct cudaMemPoolPtrExportData *d)
{
    void *p = NULL;
    check(cudaMemPoolImportPointer(&p, pool, d), "cudaMemPoolImportPointer");
    return p;
}

__attribute__((noinline)) static void *map_inner(cudaIpcMemHandle_t h)
{
    void *p = NULL;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
}

static size_t range_of(void *p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)p);
    return r == CUDA_SUCCESS ? size : 0;
}

static int producer(const char *dir, size_t bytes)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
    void *p = pool_buffer(pool, bytes);
    int fd = -1;
    check(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0),
          "cudaMemPoolExportToShareableHandle");
    struct payload pl;
    memset(&pl, 0, sizeof pl);
    check(cudaMemPoolExportPointer(&pl.pool_ptr, p), "cudaMemPoolExportPointer");
    void *inner = inner_buffer(&pl.inner);
    printf("producer_requested=%zu\nproducer_pool_range_bytes=%zu\nproducer_inner_bytes=%llu\n", bytes,
           range_of(p), 64 * MiB);
    fflush(stdout);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    sock_addr(&a, dir);
    unlink(a.sun_path);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0) {
        perror(a.sun_path);
        return 1;
    }
    int s = accept(ls, NULL, NULL);
    if (s < 0) {
        perror("accept");
        return 1;
    }
    send_fd(s, fd, &pl);
    char done[4];
    if (recv(s, done, sizeof done, MSG_WAITALL) != (ssize_t)sizeof done) {
        fprintf(stderr, "the consumer never said done\n");
        return 1;
    }
    close(s);
    close(ls);
    close(fd);
    check(cudaFreeAsync(p, 0), "cudaFreeAsync");
    check(cudaStreamSynchronize(0), "cudaStreamSynchronize");
    check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");
    check(cudaFree(inner), "cudaFree");
    return 0;
}

static int consumer(const char *dir)
{
    struct sockaddr_un a;
    sock_addr(&a, dir);
    int s = -1;
    for (int i = 0; i < 60000; i++) {
        s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0)
            break;
        if (s >= 0)
            close(s);
        s = -1;
        usleep(1000);
    }
    if (s < 0) {
        fprintf(stderr, "%s: no producer\n", a.sun_path);
        return 1;
    }
    struct payload pl;
    int fd = recv_fd(s, &pl);
    cudaMemPool_t pool;
    check(cudaMemPoolImportFromShareableHandle(&pool, (void *)(uintptr_t)fd, cudaMemHandleTypePosixFileDescriptor, 0),
          "cudaMemPoolImportFromShareableHandle");
    void *p = import_pool_pointer(pool, &pl.pool_ptr);
    printf("consumer_pool_mapped_bytes=%zu\n", range_of(p));
    check(cudaMemset(p, 0x5a, 4096), "cudaMemset");
    check(cudaFreeAsync(p, 0), "cudaFreeAsync of the imported pointer");
    check(cudaStreamSynchronize(0), "cudaStreamSynchronize");
    check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy imported");
    close(fd);
    void *q = map_inner(pl.inner);
    printf("consumer_inner_mapped_bytes=%zu\n", range_of(q));
    check(cudaIpcCloseMemHandle(q), "cudaIpcCloseMemHandle");
    if (send(s, "done", 4, 0) != 4) {
        perror("send");
        return 1;
    }
    close(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "producer"))
        return producer(argv[2], strtoull(argv[3], NULL, 0));
    if (argc >= 3 && !strcmp(argv[1], "consumer"))
        return consumer(argv[2]);
    fprintf(stderr, "usage: %s producer DIR BYTES | consumer DIR\n", argv[0]);
    return 2;
}
