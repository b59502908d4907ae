// SPDX-License-Identifier: MIT
//
// libcumemtrace_torch.so: attaches a trace tracker to PyTorch's CUDA caching
// allocator (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker,
// the mechanism PyTorch offers its own NCCL memory registration) and hands
// each block and segment event to the shim. Built without PyTorch: the two
// vtable slots and TraceEntry's fields come from a layout keyed by the
// release (layout.c), checked at run time (docs/design.md, "Block layer").
//
// Loaded by the shim with dlopen only after libc10_cuda.so made its first
// segment, never unloaded: the allocator keeps copies of our std::function,
// whose manager and invoker are code of this object.

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <functional>

#include "bridge_abi.h"
#include "layout.h"
#include "cumemtrace/format.h"

namespace {

// TraceEntry, opaque: its fields are read at the layout's offsets. A
// reference to it is a pointer in the ABI, so std::function<void(const
// TraceEntryOpaque&)> has the layout and calling convention of PyTorch's
// AllocatorTraceTracker (std::function<void(const TraceEntry&)>).
struct TraceEntryOpaque;
using Tracker = std::function<void(const TraceEntryOpaque&)>;

const cmt_torch_bridge_host* host;
cmt_torch_layout layout;
uint8_t api_of_action[256];

// The mangled name of c10::cuda::CUDACachingAllocator::allocator, the
// std::atomic<CUDAAllocator*> that every release since 1.x exports
// (C10_CUDA_API).
const char kAllocatorSymbol[] = "_ZN3c104cuda20CUDACachingAllocator9allocatorE";

template <typename T>
T field(const char* entry, unsigned offset)
{
    T v;
    memcpy(&v, entry + offset, sizeof v);
    return v;
}

void on_trace(const TraceEntryOpaque& te)
{
    const char* p = reinterpret_cast<const char*>(&te);
    int action = field<int>(p, layout.off_action);
    if (action < 0 || action > 255 || api_of_action[action] == 0)
        return; // SNAPSHOT, or an action newer than the layout
    cmt_torch_block_event e{};
    e.api = api_of_action[action];
    e.device = field<int8_t>(p, layout.off_device);
    e.size = field<uint64_t>(p, layout.off_size);
    e.stream = reinterpret_cast<uint64_t>(field<void*>(p, layout.off_stream));
    e.pool[0] = field<uint64_t>(p, layout.off_mempool);
    e.pool[1] = field<uint64_t>(p, layout.off_mempool + 8);
    uint64_t addr = field<uint64_t>(p, layout.off_addr);
    if (e.api == CMT_API_TORCH_OOM)
        e.device_free = addr; // TraceEntry::addr_ holds CUDA's free bytes for OOM
    else
        e.addr = addr;
    host->record(&e);
}

void set_api_map()
{
    static const uint8_t apis[CMT_TORCH_ACT_COUNT] = {
        CMT_API_TORCH_ALLOC,         CMT_API_TORCH_FREE_REQUESTED, CMT_API_TORCH_FREE_COMPLETED,
        CMT_API_TORCH_SEGMENT_ALLOC, CMT_API_TORCH_SEGMENT_FREE,   CMT_API_TORCH_SEGMENT_MAP,
        CMT_API_TORCH_SEGMENT_UNMAP, 0 /* SNAPSHOT */,             CMT_API_TORCH_OOM};
    memset(api_of_action, 0, sizeof api_of_action);
    for (int a = 0; a < CMT_TORCH_ACT_COUNT; a++)
        if (layout.action[a] >= 0 && layout.action[a] < 256)
            api_of_action[layout.action[a]] = apis[a];
}

// torch/version.py beside torch/lib/libc10_cuda.so: __version__ = '2.11.0+cu130'
bool read_version(const char* c10_path, char* out, size_t cap)
{
    char path[4096];
    const char* slash = strrchr(c10_path, '/');
    if (!slash)
        return false;
    int n = snprintf(path, sizeof path, "%.*s/../version.py", (int)(slash - c10_path), c10_path);
    if (n < 0 || (size_t)n >= sizeof path)
        return false;
    FILE* f = fopen(path, "re");
    if (!f)
        return false;
    char line[256];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "__version__", 11) != 0)
            continue;
        const char* q = strpbrk(line, "'\"");
        if (!q)
            break;
        const char* e = strchr(q + 1, *q);
        if (!e || (size_t)(e - q - 1) >= cap)
            break;
        memcpy(out, q + 1, (size_t)(e - q - 1));
        out[e - q - 1] = '\0';
        found = true;
    }
    fclose(f);
    return found;
}

using VirtualFn = void*;

VirtualFn slot(void* object, unsigned index)
{
    VirtualFn const* vtable = *static_cast<VirtualFn const* const*>(object);
    return vtable[index];
}

// std::string name(), called through the vtable into a raw buffer: the
// wheel's std::string is the C++11 ABI one (pointer, length, 16-byte local
// buffer) since 2.7's manylinux_2_28 builds. Only a short name held in the
// local buffer is accepted, so nothing is ever freed here and an old-ABI
// string (one pointer) fails the check instead of being misread.
bool ask_name(void* object, char* out, size_t cap)
{
    alignas(16) unsigned char buf[64];
    memset(buf, 0, sizeof buf);
    auto fn = reinterpret_cast<void (*)(void*, void*)>(slot(object, layout.slot_name));
    try {
        fn(buf, object); // sret first, then this (Itanium C++ ABI)
    } catch (...) {
        return false;
    }
    const char* data;
    size_t len;
    memcpy(&data, buf, sizeof data);
    memcpy(&len, buf + 8, sizeof len);
    if (data != reinterpret_cast<const char*>(buf + 16) || len > 15 || len + 1 > cap)
        return false;
    memcpy(out, data, len);
    out[len] = '\0';
    return true;
}

void say(cmt_torch_bridge_result* out, int status, const char* fmt, const char* a = "", const char* b = "")
{
    out->status = status;
    snprintf(out->why, sizeof out->why, fmt, a, b);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
cmt_torch_bridge_attach(const cmt_torch_bridge_host* h, const char* c10_cuda_path, cmt_torch_bridge_result* out)
{
    memset(out, 0, sizeof *out);
    if (!h || h->abi != CMT_TORCH_BRIDGE_ABI) {
        say(out, CMT_TORCH_BRIDGE_FAILED, "the PyTorch bridge is from another build of the shim: install both from one build");
        return;
    }
    if (!read_version(c10_cuda_path, out->version, sizeof out->version))
        out->version[0] = '\0';
    if (h->layout_override) {
        if (cmt_torch_layout_parse(h->layout_override, &layout) != 0) {
            say(out, CMT_TORCH_BRIDGE_UNKNOWN_VERSION,
                "CUMEMTRACE_TORCH_LAYOUT is not a layout line of samples/gpu/torch_layout_probe.cpp: "
                "set it to the probe's output, or unset it");
            return;
        }
    } else {
        const cmt_torch_layout* known = out->version[0] ? cmt_torch_layout_for(out->version) : nullptr;
        if (!known) {
            say(out, CMT_TORCH_BRIDGE_UNKNOWN_VERSION,
                "PyTorch %s is not a release this build knows the allocator of (it knows %s): "
                "driver layer only; CUMEMTRACE_TORCH_LAYOUT gives its layout",
                out->version[0] ? out->version : "(version not found)", cmt_torch_layout_known());
            return;
        }
        layout = *known;
    }
    void* lib = dlopen(c10_cuda_path, RTLD_NOW | RTLD_NOLOAD);
    void* sym = lib ? dlsym(lib, kAllocatorSymbol) : nullptr;
    void* object = sym ? __atomic_load_n(static_cast<void**>(sym), __ATOMIC_ACQUIRE) : nullptr;
    if (!object) {
        say(out, CMT_TORCH_BRIDGE_NO_ALLOCATOR, "libc10_cuda.so has no CUDA allocator set (%s)", kAllocatorSymbol);
        return;
    }
    if (!ask_name(object, out->backend, sizeof out->backend)) {
        say(out, CMT_TORCH_BRIDGE_BAD_LAYOUT,
            "the allocator did not answer its name at the layout's slot for PyTorch %s: no block layer",
            out->version);
        return;
    }
    if (strcmp(out->backend, "native") != 0) {
        say(out, CMT_TORCH_BRIDGE_NOT_NATIVE,
            "PyTorch's allocator backend is %s, not the caching allocator: no block layer, the driver layer "
            "only",
            out->backend);
        return;
    }
    host = h;
    set_api_map();
    auto attach = reinterpret_cast<void (*)(void*, Tracker*)>(slot(object, layout.slot_attach));
    try {
        // Passed by value: the caller makes the temporary and destroys it
        // after the call (Itanium C++ ABI); the allocator keeps copies.
        Tracker tracker(on_trace);
        attach(object, &tracker);
    } catch (...) {
        say(out, CMT_TORCH_BRIDGE_FAILED, "attachAllocatorTraceTracker threw: no block layer");
        return;
    }
    out->status = CMT_TORCH_BRIDGE_ATTACHED;
}
