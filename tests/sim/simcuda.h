/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_H
#define SIMCUDA_H

/* Test-control interface of the simulated CUDA driver (tests/sim's
 * libcuda.so.1). README.md describes the simulated device these functions
 * observe and steer. Test programs either link libcuda.so.1 or look the
 * functions up with dlsym; they are not part of any NVIDIA API. */

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuGetProcAddress serves a simulated future ABI of cuMemAlloc and
 * cuMemAllocAsync from this cudaVersion on. */
#define SIMCUDA_FUTURE_VERSION 14000

/* One device's memory, in bytes. */
struct simcuda_usage {
    uint64_t capacity;       /* SIMCUDA_CAPACITY: what cuMemGetInfo reports as total */
    uint64_t external;       /* held by "another process" */
    uint64_t context;        /* primary context overhead while it is active */
    uint64_t plain;          /* cuMemAlloc, cuMemAllocPitch */
    uint64_t arrays;         /* cuArrayCreate, cuArray3DCreate */
    uint64_t pool_reserved;  /* segments stream-ordered pools hold */
    uint64_t vmm;            /* cuMemCreate physical memory */
    uint64_t free;           /* what cuMemGetInfo reports as free */
    uint64_t largest_hole;   /* the largest contiguous free span of the device range */
};

/* Sets what "another process" holds on a device, as SIMCUDA_EXTERNAL_USED
 * does at start-up. It lowers cuMemGetInfo's free bytes and what can be
 * allocated, like a capacity reduction. Ignored for a nonexistent device. */
void simcuda_set_external_used(int device, size_t bytes);

/* Device-resident bytes this process uses on a device: plain allocations,
 * arrays, pool reservations and VMM physical memory (not external use, not
 * context overhead). 0 for a nonexistent device. */
size_t simcuda_device_used_bytes(int device);

/* Fills *usage; returns 0, or -1 for a nonexistent device. */
int simcuda_device_usage(int device, struct simcuda_usage *usage);

/* Calls of cuGetProcAddress and cuGetProcAddress_v2 so far, together. */
unsigned long long simcuda_proc_address_calls(void);

/* One cuGetProcAddress request, as the driver received it. */
struct simcuda_proc_request {
    char symbol[64];                     /* truncated if longer */
    int cuda_version;
    unsigned long long flags;
    CUdriverProcAddressQueryResult status;
};

/* The index-th request since the process started (0 is the first); the first
 * SIMCUDA_PROC_LOG_SIZE are kept. Returns 0, or -1 when there is no such
 * request. Lets a test check how a runtime (or a profiler in between) asked. */
#define SIMCUDA_PROC_LOG_SIZE 1024
int simcuda_proc_address_request(unsigned index, struct simcuda_proc_request *request);

/* Calls of the driver's per-thread-default-stream (_ptsz) entry points so
 * far, all together: shows that a caller reached the twins rather than the
 * plain entry points. */
unsigned long long simcuda_per_thread_stream_calls(void);

/* Live allocations of every kind (plain, pool, managed, pinned host, arrays,
 * VMM physical) on a device, or on all devices for device < 0. Lets a test
 * check that a program released everything. */
size_t simcuda_live_allocations(int device);

/* Steps the simulator's bookkeeping took so far (holes examined or moved,
 * table slots probed, pool segments tried: sim_work.h): what a test counts
 * per call to show a hot path stays flat, where a time bound would flake on
 * a loaded machine. */
unsigned long long simcuda_work_steps(void);

/* 1 when every arena sits at its documented fixed address, so pointers are
 * deterministic; 0 when one had to be placed elsewhere. */
int simcuda_addresses_are_fixed(void);

/* The simulated future ABI (cuGetProcAddress at SIMCUDA_FUTURE_VERSION and
 * later): the same behaviour at different addresses, so tests can tell which
 * version a caller asked for. */
CUresult cuMemAlloc_v3_sim(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAllocAsync_v2_sim(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocAsync_v2_sim_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);

#ifdef __cplusplus
}
#endif

#endif
