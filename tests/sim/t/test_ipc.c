/* SPDX-License-Identifier: MIT */
/* Memory shared between processes: a CUDA IPC handle and a VMM fabric
 * handle exported by this process are opened by a forked child (another
 * pid), which gets a mapping of the same size at an address of its own,
 * charged to nothing; this process cannot open its own IPC handle
 * (CUDA_ERROR_INVALID_CONTEXT, cudaErrorDeviceUninitialized in the
 * runtime), as on NVIDIA's driver. A pointer inside an allocation exports
 * the whole allocation; a pool shared as a descriptor gives its pointers
 * to an importer, whose free unmaps them. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "simcuda.h"

static void child_imports(CUipcMemHandle ipc, CUdeviceptr exported, CUmemFabricHandle fabric)
{
    struct simcuda_usage before, after;
    CHECK_EQ(simcuda_device_usage(0, &before), 0);
    CUdeviceptr p = 0, again = 0, base = 0;
    size_t size = 0;
    CHECK_CU(cuIpcOpenMemHandle_v2(&p, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
    CHECK(p != 0 && p != exported);
    CHECK_CU(cuMemGetAddressRange_v2(&base, &size, p + 100), CUDA_SUCCESS);
    CHECK_EQ(base, p);
    CHECK_EQ(size, 3 * MiB);
    CHECK_CU(cuMemsetD8_v2(p, 7, 3 * MiB), CUDA_SUCCESS);
    CHECK_CU(cuIpcOpenMemHandle_v2(&again, ipc, 0), CUDA_SUCCESS);
    CHECK_EQ(again, p); /* the same handle again: the same mapping, two opens */
    CHECK_EQ(simcuda_device_usage(0, &after), 0);
    CHECK_EQ(after.plain, before.plain);
    CHECK_EQ(after.free, before.free);
    CHECK_CU(cuIpcCloseMemHandle(p), CUDA_SUCCESS);
    CHECK_CU(cuIpcCloseMemHandle(p), CUDA_SUCCESS);
    CHECK_CU(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);

    /* The runtime over the same driver. */
    cudaIpcMemHandle_t rh;
    memcpy(&rh, &ipc, sizeof rh);
    void *rp = NULL;
    CHECK_RT(cudaIpcOpenMemHandle(&rp, rh, cudaIpcMemLazyEnablePeerAccess), cudaSuccess);
    CHECK(rp != NULL);
    CHECK_RT(cudaIpcCloseMemHandle(rp), cudaSuccess);

    CUmemGenericAllocationHandle imported;
    CHECK_CU(cuMemImportFromShareableHandle(&imported, &fabric, CU_MEM_HANDLE_TYPE_FABRIC), CUDA_SUCCESS);
    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemMap(va, 4 * MiB, 0, imported, 0), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_usage(0, &after), 0);
    CHECK_EQ(after.vmm, before.vmm); /* the exporter's memory, not ours */
    CHECK_CU(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    CHECK_CU(cuMemRelease(imported), CUDA_SUCCESS);
    CHECK_CU(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);
    _exit(0);
}

/* A pool shared within one process (the simulator lets a process import
 * its own pool): the default pool may not be shared, a pool made with a
 * handle type may; a pointer imported maps its bytes in the IPC region and
 * its cuMemFreeAsync unmaps it. */
static void pool_sharing(void)
{
    CUmemoryPool def;
    CHECK_CU(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
    int fd = -1;
    CHECK_CU(cuMemPoolExportToShareableHandle(&fd, def, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_INVALID_VALUE);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool, imported;
    CHECK_CU(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
    CHECK_CU(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
    CHECK(fd >= 0);
    CUdeviceptr p, q;
    CHECK_CU(cuMemAllocFromPoolAsync(&p, 2 * MiB, pool, 0), CUDA_SUCCESS);
    CUmemPoolPtrExportData data;
    CHECK_CU(cuMemPoolExportPointer(&data, p), CUDA_SUCCESS);
    CHECK_CU(cuMemPoolImportFromShareableHandle(&imported, (void *)(uintptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_SUCCESS);
    CHECK_CU(cuMemAllocFromPoolAsync(&q, 2 * MiB, imported, 0), CUDA_ERROR_INVALID_VALUE); /* the exporter's */
    CHECK_CU(cuMemPoolImportPointer(&q, pool, &data), CUDA_ERROR_INVALID_VALUE);          /* not imported */
    CHECK_CU(cuMemPoolImportPointer(&q, imported, &data), CUDA_SUCCESS);
    CHECK(q != p && q >= 0x6a0000000000ull && q < 0x6a0000000000ull + (64ull << 30)); /* the IPC region */
    CUdeviceptr base;
    size_t size = 0;
    /* no range for an imported pool pointer, as NVIDIA's driver 580 */
    CHECK_CU(cuMemGetAddressRange_v2(&base, &size, q + 4096), CUDA_ERROR_NOT_FOUND);
    CHECK(size == 0);
    CHECK_CU(cuMemFreeAsync(q, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemFreeAsync(q, 0), CUDA_ERROR_INVALID_VALUE); /* unmapped */
    CHECK_CU(cuMemFreeAsync(p, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemPoolDestroy(imported), CUDA_SUCCESS);
    CHECK_CU(cuMemPoolDestroy(pool), CUDA_SUCCESS);
    close(fd);
}

int main(void)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0), CUDA_SUCCESS);
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    CHECK_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);

    CUdeviceptr d;
    CHECK_CU(cuMemAlloc_v2(&d, 3 * MiB), CUDA_SUCCESS);
    CUipcMemHandle h, h2;
    CHECK_CU(cuIpcGetMemHandle(&h, d + 3 * MiB), CUDA_ERROR_INVALID_VALUE); /* in no allocation */
    CHECK_CU(cuIpcGetMemHandle(&h, d), CUDA_SUCCESS);
    CHECK_CU(cuIpcGetMemHandle(&h2, d), CUDA_SUCCESS);
    CHECK(memcmp(&h, &h2, sizeof h) == 0); /* one allocation, one handle */
    CHECK_CU(cuIpcGetMemHandle(&h2, d + 512), CUDA_SUCCESS); /* inside it: the whole allocation, as on CUDA */
    CHECK(memcmp(&h, &h2, sizeof h) == 0);
    CUdeviceptr own;
    CHECK_CU(cuIpcOpenMemHandle_v2(&own, h, 0), CUDA_ERROR_INVALID_CONTEXT);
    cudaIpcMemHandle_t rh;
    void *rp;
    CHECK_RT(cudaIpcGetMemHandle(&rh, (void *)(uintptr_t)d), cudaSuccess);
    CHECK(memcmp(&rh, &h, sizeof h) == 0);
    CHECK_RT(cudaIpcOpenMemHandle(&rp, rh, 0), cudaErrorDeviceUninitialized);
    CUipcMemHandle junk;
    memset(&junk, 0, sizeof junk);
    CHECK_CU(cuIpcOpenMemHandle_v2(&own, junk, 0), CUDA_ERROR_INVALID_VALUE);

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle plain, shareable;
    CHECK_CU(cuMemCreate(&plain, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    CUmemFabricHandle fabric;
    CHECK_CU(cuMemExportToShareableHandle(&fabric, plain, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_INVALID_VALUE);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CHECK_CU(cuMemCreate(&shareable, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    CHECK_CU(cuMemExportToShareableHandle(&fabric, shareable, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_SUCCESS);
    int fd = -1;
    CHECK_CU(cuMemExportToShareableHandle(&fd, shareable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
    CHECK(fd >= 0);
    CUmemGenericAllocationHandle by_fd;
    CHECK_CU(cuMemImportFromShareableHandle(&by_fd, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
             CUDA_SUCCESS);
    CHECK(by_fd != shareable);
    CHECK_CU(cuMemRelease(by_fd), CUDA_SUCCESS);
    close(fd);

    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0)
        child_imports(h, d, fabric);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    CHECK_CU(cuMemRelease(plain), CUDA_SUCCESS);
    CHECK_CU(cuMemRelease(shareable), CUDA_SUCCESS);
    CHECK_CU(cuMemFree_v2(d), CUDA_SUCCESS);
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    pool_sharing();
    CHECK_EQ(simcuda_device_used_bytes(0), 0);
    printf("ipc: ok\n");
    return 0;
}
