/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_TORCH_LAYOUT_H
#define CUMEMTRACE_PRELOAD_TORCH_LAYOUT_H

/* What the bridge needs to know of one PyTorch release's
 * c10/cuda/CUDACachingAllocator.h, without PyTorch's headers: where two
 * virtual functions of CUDAAllocator sit in its vtable and where the fields
 * of TraceEntry are. Taken from the release's own header by
 * samples/gpu/torch_layout_probe.cpp (a pointer to a virtual member and
 * offsetof, compiled against the installed wheel) and checked at run time by
 * calling name(), which must answer "native" (docs/design.md, "Block
 * layer"). */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TraceEntry::Action, in PyTorch's order; each layout gives its values. */
enum cmt_torch_action {
    CMT_TORCH_ACT_ALLOC,
    CMT_TORCH_ACT_FREE_REQUESTED,
    CMT_TORCH_ACT_FREE_COMPLETED,
    CMT_TORCH_ACT_SEGMENT_ALLOC,
    CMT_TORCH_ACT_SEGMENT_FREE,
    CMT_TORCH_ACT_SEGMENT_MAP,
    CMT_TORCH_ACT_SEGMENT_UNMAP,
    CMT_TORCH_ACT_SNAPSHOT,
    CMT_TORCH_ACT_OOM,
    CMT_TORCH_ACT_COUNT
};

struct cmt_torch_layout {
    char version[32];      /* the release prefix it describes ("2.11."), or "override" */
    unsigned slot_attach;  /* CUDAAllocator::attachAllocatorTraceTracker */
    unsigned slot_name;    /* CUDAAllocator::name */
    unsigned off_action;   /* TraceEntry::action_ (int) */
    unsigned off_device;   /* TraceEntry::device_ (c10::DeviceIndex, int8) */
    unsigned off_addr;     /* TraceEntry::addr_ (size_t) */
    unsigned off_stream;   /* TraceEntry::stream_ (cudaStream_t) */
    unsigned off_size;     /* TraceEntry::size_ (size_t) */
    unsigned off_mempool;  /* TraceEntry::mempool_ (two unsigned long long) */
    int action[CMT_TORCH_ACT_COUNT]; /* TraceEntry::Action's value for each */
};

/* The layout known for this version string ("2.11.0+cu130"), or NULL. */
const struct cmt_torch_layout *cmt_torch_layout_for(const char *version);

/* Parses CUMEMTRACE_TORCH_LAYOUT, the probe's output line:
 *   attach=N,name=N,action=N,device=N,addr=N,stream=N,size=N,mempool=N,actions=A:B:C:D:E:F:G:H:I
 * Returns 0, or -1 when a key is missing or malformed. */
int cmt_torch_layout_parse(const char *text, struct cmt_torch_layout *out);

/* The versions known, for the note ("2.11"). */
const char *cmt_torch_layout_known(void);

#ifdef __cplusplus
}
#endif

#endif
