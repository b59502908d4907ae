/* SPDX-License-Identifier: MIT */
/* XLA's compiler ranges by name (xla_names.h). */
#include "xla_names.h"

#include <string.h>

bool cmt_xla_compile_range_name(const char *name, size_t len)
{
    /* The annotations XLA's GPU compiler opens (through TSL's NVTX domain)
     * while it compiles a module; measured on a JAX run:
     * "XlaCompileBackend:#module=jit_f,program_id=3#" holding
     * "XlaEmitLlvmIr" holding "XlaCompileGpuAsm", thousands per run. */
    static const char *const prefixes[] = {"XlaCompile", "XlaOptimize", "XlaEmit", "XlaAutotun"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t pl = strlen(prefixes[i]);
        if (len >= pl && !strncmp(name, prefixes[i], pl))
            return true;
    }
    return false;
}
