// SPDX-License-Identifier: MIT
//
// Prints what the PyTorch bridge (preload/torch/layout.h) needs to know of
// the installed PyTorch, read from its own headers by the compiler: the
// vtable slots of CUDAAllocator::attachAllocatorTraceTracker and ::name
// (Itanium C++ ABI: a pointer to a virtual member holds 1 + the slot's byte
// offset) and the offsets of TraceEntry's fields, as one line in the format
// of CUMEMTRACE_TORCH_LAYOUT, then the sizes it assumes, for the record.
// Built by samples/gpu/run_blocks_validation.sh against the wheel's headers.
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

using namespace c10::cuda::CUDACachingAllocator;

template <typename M>
static long slot_of(M member)
{
    struct {
        uintptr_t ptr;
        ptrdiff_t adj;
    } raw;
    static_assert(sizeof member == sizeof raw, "Itanium member pointer");
    std::memcpy(&raw, &member, sizeof raw);
    return (raw.ptr & 1) ? (long)((raw.ptr - 1) / sizeof(void*)) : -1;
}

#pragma GCC diagnostic ignored "-Winvalid-offsetof"
int main()
{
    std::printf("attach=%ld,name=%ld,action=%zu,device=%zu,addr=%zu,stream=%zu,size=%zu,mempool=%zu,"
                "actions=%d:%d:%d:%d:%d:%d:%d:%d:%d\n",
                slot_of(&CUDAAllocator::attachAllocatorTraceTracker), slot_of(&CUDAAllocator::name),
                offsetof(TraceEntry, action_), offsetof(TraceEntry, device_), offsetof(TraceEntry, addr_),
                offsetof(TraceEntry, stream_), offsetof(TraceEntry, size_), offsetof(TraceEntry, mempool_),
                (int)TraceEntry::ALLOC, (int)TraceEntry::FREE_REQUESTED, (int)TraceEntry::FREE_COMPLETED,
                (int)TraceEntry::SEGMENT_ALLOC, (int)TraceEntry::SEGMENT_FREE, (int)TraceEntry::SEGMENT_MAP,
                (int)TraceEntry::SEGMENT_UNMAP, (int)TraceEntry::SNAPSHOT, (int)TraceEntry::OOM);
    std::printf("sizes: TraceEntry %zu, action_ %zu, device_ %zu (signed %d), addr_ %zu, size_ %zu, mempool_ %zu, "
                "AllocatorTraceTracker %zu, std::string %zu\n",
                sizeof(TraceEntry), sizeof(TraceEntry::action_), sizeof(TraceEntry::device_),
                (int)std::is_signed<decltype(TraceEntry::device_)>::value, sizeof(TraceEntry::addr_),
                sizeof(TraceEntry::size_), sizeof(TraceEntry::mempool_), sizeof(AllocatorTraceTracker),
                sizeof(std::string));
    return 0;
}
