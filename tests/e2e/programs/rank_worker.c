/* SPDX-License-Identifier: MIT */
/* One rank of a data-parallel job on the simulated device, started by a
 * launcher (tests/e2e/launch_ranks.py) that sets RANK, LOCAL_RANK and the
 * sizes as torchrun, mpirun or srun would. Sizes are exact so the job view's
 * per-rank figures can be asserted (rank r, MiB):
 *   communicator (NCCL double)     8, freed before exit
 *   weights                        16 (r + 1), freed before exit
 *   leak_per_rank                  r, never freed (rank 0 leaks nothing)
 *   activations, 3 steps           8 (r + 1) each step, freed in the step
 * Peak on the rank's own device (LOCAL_RANK) = 8 + 24 (r + 1) + r MiB.
 * Options:
 *   stray   every rank but 0 also holds 2 MiB on device 0 from before the
 *           weights until the end (a tensor put on cuda:0 by mistake)
 *   fail    the last rank asks for 64 GiB once (a failed allocation)
 *   shared  every rank works on device 0 (ranks sharing one GPU)
 *   vmm     every rank but 0 creates 2 MiB of physical memory located on
 *           device 0 with the driver's VMM API (cuMemCreate) and maps it,
 *           from its own device's context, released before exit
 *   ipc     rank 0 exports two allocations to rank 1 with cudaIpcGetMemHandle
 *           (export_weights 64 MiB, export_cache 8 MiB, after the training
 *           steps), fails to open its own handle once (as CUDA does), and
 *           hands both handles over in $IPC_DIR/handles; rank 1 maps them
 *           (map_peer_weights: cudaIpcOpenMemHandle, map_peer_cache: the
 *           driver's cuIpcOpenMemHandle), writes into both and closes both,
 *           then writes $IPC_DIR/done, after which rank 0 frees them
 *   ipc_leak with ipc: rank 1 never closes the 8 MiB mapping
 *   ipc_pool rank 0 creates a pool that may be shared (a fabric handle),
 *           allocates 32 MiB (pool_tensor) and 4 MiB (pool_cache) from it
 *           and exports both pointers (cudaMemPoolExportPointer, the
 *           driver's cuMemPoolExportPointer); rank 1 imports the pool and
 *           both pointers (runtime, driver) and frees them (cudaFreeAsync,
 *           cuMemFreeAsync) before rank 0 frees its own
 *   ipc_inner rank 0 exports a pointer 4 KiB inside a 64 MiB allocation
 *           (export_inner); rank 1 maps it (the whole allocation) and
 *           closes it
 *   ipc_vmm rank 0 creates 4 MiB of VMM memory that may be shared
 *           (export_physical: cuMemCreate, then cuMemExportToShareableHandle
 *           as a fabric handle) and hands it over in $IPC_DIR/fabric; rank 1
 *           imports it (cuMemImportFromShareableHandle), maps it
 *           (map_imported: cuMemMap), unmaps and releases it, then writes
 *           $IPC_DIR/fabric_done, after which rank 0 releases its handle
 * The rank and local rank come from the first launcher variables set:
 * RANK/LOCAL_RANK, OMPI_COMM_WORLD_RANK/_LOCAL_RANK, PMI_RANK/MPI_LOCALRANKID,
 * SLURM_PROCID/SLURM_LOCALID. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB (1024u * 1024u)

int ncclCommInitRank(void **comm, int nranks, void *id, int rank);
int ncclCommDestroy(void *comm);

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

static int env_number(const char *const names[], int dflt)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return dflt;
}

__attribute__((noinline)) static void *stray_on_device0(int own)
{
    void *p;
    check(cudaSetDevice(0), "cudaSetDevice(0)");
    check(cudaMalloc(&p, 2 * MiB), "stray_on_device0");
    check(cudaSetDevice(own), "cudaSetDevice(own)");
    return p;
}

struct peer_mapping {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
};

static void check_cu(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, (int)r);
        exit(1);
    }
}

__attribute__((noinline)) static struct peer_mapping map_peer_memory(void)
{
    struct peer_mapping m;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    check_cu(cuMemCreate(&m.handle, 2 * MiB, &prop, 0), "cuMemCreate on device 0");
    check_cu(cuMemAddressReserve(&m.va, 2 * MiB, 0, 0, 0), "cuMemAddressReserve");
    check_cu(cuMemMap(m.va, 2 * MiB, 0, m.handle, 0), "cuMemMap");
    return m;
}

static void unmap_peer_memory(struct peer_mapping m)
{
    check_cu(cuMemUnmap(m.va, 2 * MiB), "cuMemUnmap");
    check_cu(cuMemAddressFree(m.va, 2 * MiB), "cuMemAddressFree");
    check_cu(cuMemRelease(m.handle), "cuMemRelease");
}

/* ---- ipc: rank 0 exports, rank 1 maps ------------------------------------- */

static void ipc_path(char *buf, size_t len, const char *name)
{
    const char *dir = getenv("IPC_DIR");
    snprintf(buf, len, "%s/%s", dir && *dir ? dir : ".", name);
}

/* Waits (at most a minute) for the file the other rank writes. */
static void ipc_wait_for(const char *name, void *buf, size_t len)
{
    char path[4096];
    ipc_path(path, sizeof path, name);
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
    fprintf(stderr, "rank_worker: %s never came\n", path);
    exit(1);
}

static void ipc_write(const char *name, const void *buf, size_t len)
{
    char path[4096], tmp[4200];
    ipc_path(path, sizeof path, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "rank_worker: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

__attribute__((noinline)) static void *export_weights(cudaIpcMemHandle_t *h)
{
    void *p;
    check(cudaMalloc(&p, 64 * MiB), "export_weights");
    check(cudaIpcGetMemHandle(h, p), "cudaIpcGetMemHandle weights");
    return p;
}

__attribute__((noinline)) static void *export_cache(cudaIpcMemHandle_t *h)
{
    void *p;
    check(cudaMalloc(&p, 8 * MiB), "export_cache");
    check(cudaIpcGetMemHandle(h, p), "cudaIpcGetMemHandle cache");
    return p;
}

__attribute__((noinline)) static void *map_peer_weights(cudaIpcMemHandle_t h)
{
    void *p = NULL;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
}

__attribute__((noinline)) static CUdeviceptr map_peer_cache(cudaIpcMemHandle_t h)
{
    CUdeviceptr p = 0;
    CUipcMemHandle ch;
    memcpy(&ch, &h, sizeof ch);
    check_cu(cuIpcOpenMemHandle(&p, ch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
    return p;
}

__attribute__((noinline)) static CUmemGenericAllocationHandle export_physical(CUmemFabricHandle *fh)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CUmemGenericAllocationHandle h;
    check_cu(cuMemCreate(&h, 4 * MiB, &prop, 0), "cuMemCreate shareable");
    check_cu(cuMemExportToShareableHandle(fh, h, CU_MEM_HANDLE_TYPE_FABRIC, 0), "cuMemExportToShareableHandle");
    return h;
}

__attribute__((noinline)) static void map_imported(CUmemGenericAllocationHandle h, CUdeviceptr va)
{
    check_cu(cuMemMap(va, 4 * MiB, 0, h, 0), "cuMemMap of the imported handle");
}

static void vmm_exchange(int rank)
{
    CUmemFabricHandle fh;
    if (rank == 0) {
        CUmemGenericAllocationHandle h = export_physical(&fh);
        ipc_write("fabric", &fh, sizeof fh);
        ipc_wait_for("fabric_done", NULL, 0);
        check_cu(cuMemRelease(h), "cuMemRelease exported");
    } else if (rank == 1) {
        ipc_wait_for("fabric", &fh, sizeof fh);
        CUmemGenericAllocationHandle h;
        check_cu(cuMemImportFromShareableHandle(&h, &fh, CU_MEM_HANDLE_TYPE_FABRIC), "cuMemImportFromShareableHandle");
        CUdeviceptr va;
        check_cu(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), "cuMemAddressReserve");
        map_imported(h, va);
        check_cu(cuMemUnmap(va, 4 * MiB), "cuMemUnmap");
        check_cu(cuMemAddressFree(va, 4 * MiB), "cuMemAddressFree");
        check_cu(cuMemRelease(h), "cuMemRelease imported");
        ipc_write("fabric_done", "", 0);
    }
}

__attribute__((noinline)) static void *export_inner(cudaIpcMemHandle_t *h)
{
    void *p;
    check(cudaMalloc(&p, (size_t)64 * MiB), "export_inner");
    check(cudaIpcGetMemHandle(h, (char *)p + 4096), "cudaIpcGetMemHandle inside");
    return p;
}

static void ipc_inner_exchange(int rank)
{
    cudaIpcMemHandle_t h;
    if (rank == 0) {
        void *p = export_inner(&h);
        ipc_write("inner", &h, sizeof h);
        ipc_wait_for("inner_done", NULL, 0);
        check(cudaFree(p), "free exported inner");
    } else if (rank == 1) {
        ipc_wait_for("inner", &h, sizeof h);
        void *p = map_peer_weights(h);
        check(cudaIpcCloseMemHandle(p), "cudaIpcCloseMemHandle inner");
        ipc_write("inner_done", "", 0);
    }
}

struct pool_share {
    cudaMemFabricHandle_t pool;
    struct cudaMemPoolPtrExportData tensor, cache;
};

__attribute__((noinline)) static void *pool_tensor(cudaMemPool_t pool)
{
    void *p;
    check(cudaMallocFromPoolAsync(&p, 32 * MiB, pool, 0), "pool_tensor");
    return p;
}

__attribute__((noinline)) static CUdeviceptr pool_cache(cudaMemPool_t pool)
{
    CUdeviceptr p;
    check_cu(cuMemAllocFromPoolAsync(&p, 4 * MiB, (CUmemoryPool)pool, 0), "pool_cache");
    return p;
}

__attribute__((noinline)) static void *import_tensor(cudaMemPool_t pool, struct cudaMemPoolPtrExportData *d)
{
    void *p = NULL;
    check(cudaMemPoolImportPointer(&p, pool, d), "cudaMemPoolImportPointer");
    return p;
}

__attribute__((noinline)) static CUdeviceptr import_cache(cudaMemPool_t pool, struct cudaMemPoolPtrExportData *d)
{
    CUdeviceptr p = 0;
    check_cu(cuMemPoolImportPointer(&p, (CUmemoryPool)pool, (CUmemPoolPtrExportData *)d), "cuMemPoolImportPointer");
    return p;
}

static void ipc_pool_exchange(int rank)
{
    struct pool_share sh;
    if (rank == 0) {
        struct cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeFabric;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = 0;
        cudaMemPool_t pool;
        check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate shareable");
        void *tensor = pool_tensor(pool);
        CUdeviceptr cache = pool_cache(pool);
        check(cudaMemPoolExportToShareableHandle(&sh.pool, pool, cudaMemHandleTypeFabric, 0),
              "cudaMemPoolExportToShareableHandle");
        check(cudaMemPoolExportPointer(&sh.tensor, tensor), "cudaMemPoolExportPointer");
        check_cu(cuMemPoolExportPointer((CUmemPoolPtrExportData *)&sh.cache, cache), "cuMemPoolExportPointer");
        ipc_write("pool", &sh, sizeof sh);
        ipc_wait_for("pool_done", NULL, 0);
        check(cudaFreeAsync(tensor, 0), "free pool tensor");
        check_cu(cuMemFreeAsync(cache, 0), "free pool cache");
        check(cudaStreamSynchronize(0), "cudaStreamSynchronize");
        check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");
    } else if (rank == 1) {
        ipc_wait_for("pool", &sh, sizeof sh);
        cudaMemPool_t pool;
        check(cudaMemPoolImportFromShareableHandle(&pool, &sh.pool, cudaMemHandleTypeFabric, 0),
              "cudaMemPoolImportFromShareableHandle");
        void *tensor = import_tensor(pool, &sh.tensor);
        CUdeviceptr cache = import_cache(pool, &sh.cache);
        check(cudaFreeAsync(tensor, 0), "cudaFreeAsync of the imported pointer");
        check_cu(cuMemFreeAsync(cache, 0), "cuMemFreeAsync of the imported pointer");
        check(cudaStreamSynchronize(0), "cudaStreamSynchronize");
        check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy imported");
        ipc_write("pool_done", "", 0);
    }
}

static void ipc_exchange(int rank, int leak)
{
    cudaIpcMemHandle_t h[2];
    if (rank == 0) {
        void *weights = export_weights(&h[0]);
        void *cache = export_cache(&h[1]);
        void *own = NULL;
        /* A process cannot open its own handle: CUDA refuses, and so does the simulator. */
        printf("open_own=%d\n", (int)cudaIpcOpenMemHandle(&own, h[0], cudaIpcMemLazyEnablePeerAccess));
        ipc_write("handles", h, sizeof h);
        ipc_wait_for("done", NULL, 0);
        check(cudaFree(weights), "free exported weights");
        check(cudaFree(cache), "free exported cache");
    } else if (rank == 1) {
        ipc_wait_for("handles", h, sizeof h);
        void *weights = map_peer_weights(h[0]);
        CUdeviceptr cache = map_peer_cache(h[1]);
        check(cudaMemset(weights, 1, 64 * MiB), "cudaMemset on the mapping");
        check(cudaMemset((void *)(uintptr_t)cache, 2, 8 * MiB), "cudaMemset on the mapping");
        check(cudaIpcCloseMemHandle(weights), "cudaIpcCloseMemHandle");
        if (!leak)
            check_cu(cuIpcCloseMemHandle(cache), "cuIpcCloseMemHandle");
        ipc_write("done", "", 0);
    }
}

__attribute__((noinline)) static void *load_weights(int rank)
{
    void *p;
    check(cudaMalloc(&p, (size_t)16 * MiB * (size_t)(rank + 1)), "load_weights");
    return p;
}

__attribute__((noinline)) static void leak_per_rank(int rank)
{
    void *p;
    if (rank > 0)
        check(cudaMalloc(&p, (size_t)MiB * (size_t)rank), "leak_per_rank");
}

__attribute__((noinline)) static void train_step(int rank)
{
    void *p;
    check(cudaMalloc(&p, (size_t)8 * MiB * (size_t)(rank + 1)), "train_step");
    check(cudaFree(p), "train_step free");
}

__attribute__((noinline)) static void ask_too_much(void)
{
    void *p = NULL;
    cudaError_t r = cudaMalloc(&p, (size_t)64 << 30);
    printf("ask_too_much=%d\n", (int)r);
}

int main(int argc, char **argv)
{
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
    static const char *const local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                             "SLURM_LOCALID", NULL};
    static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                            NULL};
    int rank = env_number(rank_vars, 0), local = env_number(local_vars, 0), size = env_number(size_vars, 1);
    int stray = 0, fail = 0, shared = 0, vmm = 0, ipc = 0, ipc_leak = 0, ipc_vmm = 0, ipc_inner = 0, ipc_pool = 0;
    for (int i = 1; i < argc; i++) {
        stray |= strcmp(argv[i], "stray") == 0;
        fail |= strcmp(argv[i], "fail") == 0;
        shared |= strcmp(argv[i], "shared") == 0;
        vmm |= strcmp(argv[i], "vmm") == 0;
        ipc |= strcmp(argv[i], "ipc") == 0;
        ipc_leak |= strcmp(argv[i], "ipc_leak") == 0;
        ipc_vmm |= strcmp(argv[i], "ipc_vmm") == 0;
        ipc_inner |= strcmp(argv[i], "ipc_inner") == 0;
        ipc_pool |= strcmp(argv[i], "ipc_pool") == 0;
    }
    if (shared)
        local = 0;
    check(cudaSetDevice(local), "cudaSetDevice");
    void *comm = NULL;
    if (ncclCommInitRank(&comm, size, NULL, rank) != 0) {
        fprintf(stderr, "ncclCommInitRank failed\n");
        return 1;
    }
    void *strayp = stray && rank != 0 ? stray_on_device0(local) : NULL;
    struct peer_mapping peer = {0, 0};
    if (vmm && rank != 0)
        peer = map_peer_memory();
    void *weights = load_weights(rank);
    leak_per_rank(rank);
    for (int step = 0; step < 3; step++)
        train_step(rank);
    if (fail && rank == size - 1)
        ask_too_much();
    check(cudaFree(weights), "free weights");
    if (ipc)
        ipc_exchange(rank, ipc_leak);
    if (ipc_vmm)
        vmm_exchange(rank);
    if (ipc_inner)
        ipc_inner_exchange(rank);
    if (ipc_pool)
        ipc_pool_exchange(rank);
    if (strayp) {
        check(cudaSetDevice(0), "cudaSetDevice(0)");
        check(cudaFree(strayp), "free stray");
        check(cudaSetDevice(local), "cudaSetDevice(own)");
    }
    if (peer.handle)
        unmap_peer_memory(peer);
    ncclCommDestroy(comm);
    printf("rank %d of %d done\n", rank, size);
    return 0;
}
