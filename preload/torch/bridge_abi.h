/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_TORCH_BRIDGE_ABI_H
#define CUMEMTRACE_PRELOAD_TORCH_BRIDGE_ABI_H

/* The interface between the shim (C) and its PyTorch bridge
 * (libcumemtrace_torch.so, C++), which the shim loads with dlopen only once
 * the traced process has loaded PyTorch's libc10_cuda.so and the caching
 * allocator made its first segment (docs/design.md, "Block layer"). Both
 * sides are built from this tree, so the interface is ours alone; its
 * version guards against a shim and a bridge from different builds. */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CMT_TORCH_BRIDGE_ABI 1
#define CMT_TORCH_BRIDGE_ENTRY "cmt_torch_bridge_attach"

/* One event of the allocator, as the bridge hands it to the shim. */
struct cmt_torch_block_event {
    uint8_t api; /* CMT_API_TORCH_* (format.h) */
    int32_t device;
    uint64_t addr;
    uint64_t size;
    uint64_t stream;
    uint64_t pool[2];     /* MempoolId_t */
    uint64_t device_free; /* OOM only */
};

/* What the shim offers the bridge. record() is called from the allocator's
 * trace callback: under the allocator's per-device lock, maybe with the GIL
 * held, on the allocating thread. It must not block on anything the
 * allocator's other callers may hold; it records an event and returns. */
struct cmt_torch_bridge_host {
    uint32_t abi; /* CMT_TORCH_BRIDGE_ABI */
    void (*record)(const struct cmt_torch_block_event *e);
    /* CUMEMTRACE_TORCH_LAYOUT, or NULL: a layout given by hand for a version
     * the bridge does not know (docs/environment.md). */
    const char *layout_override;
};

enum cmt_torch_bridge_status {
    CMT_TORCH_BRIDGE_ATTACHED = 0,
    CMT_TORCH_BRIDGE_UNKNOWN_VERSION = 1, /* no layout for this PyTorch version */
    CMT_TORCH_BRIDGE_NOT_NATIVE = 2,      /* another allocator backend (cudaMallocAsync, a pluggable one) */
    CMT_TORCH_BRIDGE_NO_ALLOCATOR = 3,    /* libc10_cuda.so without the allocator symbol, or none set */
    CMT_TORCH_BRIDGE_BAD_LAYOUT = 4,      /* the layout's check failed (the name slot did not answer) */
    CMT_TORCH_BRIDGE_FAILED = 5           /* the attach call threw */
};

struct cmt_torch_bridge_result {
    int status;        /* enum cmt_torch_bridge_status */
    char version[64];  /* PyTorch's version as found (torch/version.py), "" unknown */
    char backend[32];  /* the allocator's name() when it could be asked, "" otherwise */
    char why[200];     /* one sentence for the report when not attached */
};

/* The bridge's one export. c10_cuda_path: where libc10_cuda.so was found
 * loaded. Attaches the shim's tracker to the allocator, or says why not. */
typedef void (*cmt_torch_bridge_attach_fn)(const struct cmt_torch_bridge_host *host, const char *c10_cuda_path,
                                           struct cmt_torch_bridge_result *out);

#ifdef __cplusplus
}
#endif

#endif
