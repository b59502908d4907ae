/* SPDX-License-Identifier: MIT */
/* Another NVTX tool (what Nsight Systems puts in NVTX_INJECTION64_PATH):
 * accepts the injection and counts nothing. Writes "other tool loaded" to
 * stderr once, so the test sees NVTX chose it over the shim. */
#include <stdint.h>
#include <unistd.h>

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t));

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t))
{
    (void)get_export_table;
    static const char msg[] = "other tool loaded\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    return 1;
}
