/* SPDX-License-Identifier: MIT */
/* nvtx_payload: NVTX's payload extension as NCCL 2.28 uses it, on the
 * simulated device (test_phases.py, payload_ranges, asserts the figures).
 *
 *   "init" (domain "NCCL", registered string, nvtxDomainRangePushEx):
 *     8 MiB allocated; popped with nvtxRangePopPayload, as NCCL's
 *     ncclCommInitRankConfig does once it knows the communicator;
 *   "train" (default domain, nvtxRangePushA): 4 MiB allocated, freed; popped
 *     with nvtxRangePop;
 *   a range pushed with nvtxRangePushPayload alone (domain "NCCL"): 2 MiB
 *     allocated and freed; popped with nvtxDomainRangePop;
 *   a process-wide range started with nvtxRangeStartPayload and ended with
 *     nvtxRangeEndPayload: 1 MiB allocated and freed.
 *   "left open" (nvtxRangePushA) at the very end, never popped: the process
 *     exits normally with it open.
 * Only "left open" is open at the end: with the extension not served, "init"
 * stayed open too and "train" was nested inside it. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)

static void *alloc(size_t n)
{
    void *p;
    if (cudaMalloc(&p, n) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc of %zu failed\n", n);
        exit(1);
    }
    return p;
}

int main(void)
{
    nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
    nvtxStringHandle_t name = nvtxDomainRegisterStringA(nccl, "init");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = name;
    uint64_t comm_hash = 0x1234abcdu;
    nvtxPayloadData_t payload = {NVTX_TYPE_PAYLOAD_SCHEMA_RAW, sizeof comm_hash, &comm_hash};

    nvtxDomainRangePushEx(nccl, &a);
    void *kept = alloc(8 * MiB); /* the communicator's buffers: live to the end */
    nvtxRangePopPayload(nccl, &payload, 1);

    nvtxRangePushA("train");
    cudaFree(alloc(4 * MiB));
    nvtxRangePop();

    nvtxRangePushPayload(nccl, &payload, 1);
    cudaFree(alloc(2 * MiB));
    nvtxDomainRangePop(nccl);

    nvtxRangeId_t id = nvtxRangeStartPayload(nccl, &payload, 1);
    cudaFree(alloc(1 * MiB));
    nvtxRangeEndPayload(nccl, id, &payload, 1);

    cudaFree(kept);
    nvtxRangePushA("left open");
    return 0;
}
