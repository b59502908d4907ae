// SPDX-License-Identifier: MIT
// A library with a function in an anonymous namespace, built with -g: GCC
// gives it no DW_AT_linkage_name (internal linkage), only DW_AT_name
// "malloc". test_cxx.c checks the symbolizer names it in full, as the ELF
// symbol table does, so rules on the qualified name match it.

// Its own return address: the library cannot call the test program's
// symt_ra (an executable exports nothing).
extern "C" __attribute__((noinline, visibility("default"))) void *anon_ra(void)
{
    return __builtin_return_address(0);
}

namespace c10 {
namespace cuda {
namespace CUDACachingAllocator {
namespace {
struct DeviceCachingAllocator {
    void *malloc(unsigned long size, int *line);
};

__attribute__((noinline)) void *DeviceCachingAllocator::malloc(unsigned long size, int *line)
{
    void *r = anon_ra(); *line = __LINE__ + 0 * static_cast<int>(size);
    return r;
}
} // namespace
} // namespace CUDACachingAllocator
} // namespace cuda
} // namespace c10

extern "C" __attribute__((visibility("default"))) void *anon_malloc_site(int *line);

extern "C" void *anon_malloc_site(int *line)
{
    c10::cuda::CUDACachingAllocator::DeviceCachingAllocator a;
    return a.malloc(64, line);
}
