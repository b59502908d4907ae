/* SPDX-License-Identifier: MIT */
/* A library with NVTX v3 of its own: each shared object that includes the
 * headers has its own NVTX instance, initialised on its first call
 * (nvtx_phases calls these for "layer 1"), so the shim's
 * InitializeInjectionNvtx2 runs once per object. */
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void nvtx_lib_push(const char *name);
__attribute__((visibility("default"))) void nvtx_lib_pop(void);

void nvtx_lib_push(const char *name)
{
    nvtxRangePushA(name);
}

void nvtx_lib_pop(void)
{
    nvtxRangePop();
}
