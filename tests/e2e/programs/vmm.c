/* SPDX-License-Identifier: MIT */
/* Virtual memory management through the driver API, linked with -lcuda:
 * every call goes to the shim's exports by name. SIMCUDA_CAPACITY=64MiB.
 *
 *   create_weights     cuMemCreate 8 MiB      mapped at va,         released while mapped
 *   create_activations cuMemCreate 4 MiB      mapped at va + 8 MiB
 *   create_leaked      cuMemCreate 2 MiB      mapped at va + 12 MiB, never released (the leak)
 *   create_host        cuMemCreate 2 MiB on the HOST, mapped at va + 14 MiB
 *   create_scratch     cuMemCreate 6 MiB      created after weights' release, released at once
 *   reserve_space      cuMemAddressReserve 32 MiB at va
 *
 * Device 0's physical memory peaks at 8 + 4 + 2 + 6 = 20 MiB when scratch is
 * created: weights was released, but it is still mapped, so it still holds
 * its 8 MiB. One cuMemUnmap of 12 MiB removes two mappings (weights and
 * activations) and with them weights' memory. At exit the leaked handle's
 * 2 MiB is live, and still mapped. The program prints the driver's own
 * figures (simcuda_device_used_bytes) at those points. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda.h"

#define MiB (1024u * 1024u)
#define CHECK(x)                                                    \
    do {                                                            \
        CUresult r_ = (x);                                          \
        if (r_ != CUDA_SUCCESS) {                                   \
            fprintf(stderr, "%s failed: %d\n", #x, r_);             \
            exit(1);                                                \
        }                                                           \
    } while (0)

static CUmemAllocationProp prop_on(CUmemLocationType type, int id)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = id;
    return prop;
}

/* Each site calls cuMemCreate itself, so it is the first frame of its stack. */
#define CREATE_SITE(name, bytes, location)                              \
    __attribute__((noinline)) static CUmemGenericAllocationHandle name(void) \
    {                                                                   \
        CUmemAllocationProp prop = prop_on(location, 0);                \
        CUmemGenericAllocationHandle h;                                 \
        CHECK(cuMemCreate(&h, bytes, &prop, 0));                        \
        return h;                                                       \
    }
CREATE_SITE(create_weights, 8 * MiB, CU_MEM_LOCATION_TYPE_DEVICE)
CREATE_SITE(create_activations, 4 * MiB, CU_MEM_LOCATION_TYPE_DEVICE)
CREATE_SITE(create_leaked, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE)
CREATE_SITE(create_host, 2 * MiB, CU_MEM_LOCATION_TYPE_HOST)
CREATE_SITE(create_scratch, 6 * MiB, CU_MEM_LOCATION_TYPE_DEVICE)

__attribute__((noinline)) static CUdeviceptr reserve_space(void)
{
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, 32 * MiB, 0, 0, 0));
    return va;
}

int main(void)
{
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));

    CUmemGenericAllocationHandle weights = create_weights();
    CUmemGenericAllocationHandle activations = create_activations();
    CUmemGenericAllocationHandle leaked = create_leaked();
    CUmemGenericAllocationHandle host = create_host();
    CUdeviceptr va = reserve_space();
    CHECK(cuMemMap(va, 8 * MiB, 0, weights, 0));
    CHECK(cuMemMap(va + 8 * MiB, 4 * MiB, 0, activations, 0));
    CHECK(cuMemMap(va + 12 * MiB, 2 * MiB, 0, leaked, 0));
    CHECK(cuMemMap(va + 14 * MiB, 2 * MiB, 0, host, 0));

    CHECK(cuMemRelease(weights)); /* still mapped: its memory stays */
    CUmemGenericAllocationHandle scratch = create_scratch();
    printf("used at peak: %zu\n", simcuda_device_used_bytes(0));
    CHECK(cuMemRelease(scratch));

    CHECK(cuMemUnmap(va, 12 * MiB)); /* weights and activations */
    printf("used after unmap: %zu\n", simcuda_device_used_bytes(0));
    CHECK(cuMemRelease(activations));
    CHECK(cuMemUnmap(va + 14 * MiB, 2 * MiB));
    CHECK(cuMemRelease(host));
    printf("used at exit: %zu\n", simcuda_device_used_bytes(0));
    (void)leaked; /* never released, still mapped at va + 12 MiB */
    return 0;
}
