/* SPDX-License-Identifier: MIT */
/* gen_pytorch_trace OUT.bin: writes the trace of a PyTorch training step as
 * the shim records it once Python frames are on (issue 14): native frames
 * that are real return addresses into the PyTorch-named test doubles
 * libtorch_cpu.so and libc10_cuda.so this program is linked with (module
 * records from dl_iterate_phdr, so the analyzer symbolizes them from those
 * files), CPython's evaluation loop (functions of this program named like
 * CPython's, and an interpreter module that is not on disk), and Python
 * frames (FRAME records of language 1) where the loop ran them, innermost
 * first. test_pytorch.py asserts the figures; they follow from this:
 *
 *   1 ms  20 MiB segment, forward at model.py:30 via aten::addmm  (kept)
 *   2 ms   8 MiB segment on autograd's thread, AddmmBackward0      (kept)
 *   3 ms   6 MiB segment, forward at model.py:31                   (freed at 4 ms)
 *          PyTorch's own peak: 34 MiB in 3 allocations at 3 ms
 *   5 ms   1 MiB without the cache (NativeCachingAllocator::allocate
 *          calling cudaMalloc itself), forward at model.py:42    (a leak)
 *   6 ms  40 MiB scratch at train.py:60 (no PyTorch frame)      (freed at 7 ms)
 *          the device peak: 69 MiB, PyTorch's share 29 MiB
 *   7.5 ms 512 KiB by a C extension of the program's (ext_alloc, a frame
 *          with a line) called from load at data.py:12             (a leak)
 *   8 ms  end; held by PyTorch at exit 28 MiB in 2 segments, leaked 1.5 MiB
 *          in 2 allocations.
 *
 * gen_pytorch_trace OUT.bin --host-cache: instead, PyTorch's pinned host
 * memory cache (CachingHostAllocator under Tensor.pin_memory() at
 * data.py:14, as a DataLoader's pin_memory or gloo's staging buffers do it):
 *
 *   1 ms  1 GiB pinned by the host cache                      (kept)
 *   2 ms  64 MiB pinned by the host cache                     (kept)
 *   3 ms  16 MiB pinned by the host cache                     (freed at 4 ms)
 *   5 ms  2 MiB cudaHostAlloc by ext_alloc at data.py:12       (a leak)
 *   6 ms  20 MiB device segment, forward at model.py:30       (kept)
 *   8 ms  end; held by PyTorch's host cache at exit 1088 MiB in 2 blocks,
 *         by PyTorch 20 MiB in 1 segment; leaked 2 MiB in 1 allocation.
 *
 * gen_pytorch_trace OUT.bin --churn: instead, 4,000 segments of the forward
 * stack at addresses that crowd the analyzer's tables, released in a
 * shuffled order while others are made; prints the bytes, count and time (ns
 * since the start) of the most ever live at once, computed here by plain
 * sums, for the test to hold the report's PyTorch own peak against.
 *
 * gen_pytorch_trace OUT.bin --oom-capacity: instead, a batch too large
 * with the block layer on (as train_mlp.py on an H200), an 80 GiB device:
 *
 *   0.5 ms the block layer on (PyTorch 2.11, native)
 *   1 ms   a 60 GiB segment (model.py:30), one tensor of 60 GiB in it; a
 *          2 MiB segment of the small pool with tensors of 1 MiB and
 *          480 KiB: the cache holds 544 KiB reserved but unallocated
 *   2 ms   cudaMalloc of a 30 GiB segment (model.py:31) fails, 19 GiB free
 *          of 80 GiB; PyTorch frees nothing of its cache and asks again at
 *          2.1 ms: fails again; its OOM record at 2.2 ms (30 GiB asked,
 *          19 GiB free): capacity, expandable segments would not serve it
 *   2.5 ms a 1 GiB segment elsewhere (train.py:60), kept
 *   3 ms   end.
 *
 * gen_pytorch_trace OUT.bin --oom-fragments: the same, but the segment's
 * tensors are two of 20 GiB at either end: the cache holds 20 GiB free
 * between them, which with the device's 19 GiB would have served the
 * tensor (PyTorch's verdict: fragmentation).
 *
 * gen_pytorch_trace OUT.bin --oom-late: as --oom-capacity, but PyTorch's
 * OOM record comes at 2.6 ms, after the thread's next allocation (2.5 ms):
 * not the driver failures' own.
 *
 * gen_pytorch_trace OUT.bin --oom-stranded: a fragmented cache as PyTorch
 * 2.11's defaults make it (every record is what its allocator does with
 * these requests), on the same 80 GiB device with 1 GiB taken by the
 * context (room for the cache: 79 GiB), no settings set:
 *
 *   1 ms   t1, t2, t3: 20 GiB each (model.py:30), a segment each (S1, S2,
 *          S3: 60 GiB reserved)
 *   1.3 ms t1 and t3 freed: both segments cached, unsplit
 *   1.4 ms t4, t5: 1 GiB each (model.py:31), best fit: S1 (the lower of two
 *          20 GiB blocks), then S1's 19 GiB rest; S1 split, 18 GiB free
 *   1.6 ms t6: 19 GiB (model.py:31): S1's 18 GiB too small, S3 split, 1 GiB
 *          free. Allocated 41 GiB, reserved 60 GiB: 19 GiB free in the cache,
 *          none of it in an unsplit segment
 *   2 ms   t7: 30 GiB (model.py:42): no cached block; cudaMalloc of 30 GiB
 *          fails (19 GiB free on the device); nothing unsplit to release;
 *          the retry fails; PyTorch's OOM record at 2.2 ms: the cache's
 *          19 GiB and the device's 19 GiB would cover it (fragmentation)
 *   3 ms   end.
 * Replayed (test_pytorch.py's oom_block_stranded asserts each figure):
 * the defaults and garbage_collection_threshold:0.6 (no memory fraction)
 * fail at t7 as the run did; roundup_power2_divisions:4 rounds t6 to
 * 20 GiB (S3 whole) and t7 to 32 GiB, and fails there too (42 + 32 GiB
 * allocated, within 79 GiB: fragmentation); max_split_size_mb:128 and :512
 * keep the 20 GiB blocks whole (t4, t5 get segments of their own, 62 GiB;
 * t6 and t7 each release one cached 20 GiB segment first): no failure,
 * reserved peak 71 GiB; expandable segments map t1-t3 in one range, t4,
 * t5 at its start, t6 at t3's place; t7 grows the 1 GiB free at the end by
 * 29 GiB in 20 MiB pages (1485 pages, 29700 MiB), which fits once the
 * 18 GiB free at the start is unmapped (921 whole pages, 18420 MiB): no
 * failure, reserved peak 60 GiB - 18420 MiB + 29700 MiB = 72720 MiB.
 * --oom-stranded-twice: the same, and the program, having caught the error,
 * asks for the 30 GiB again at 2.5 ms: it fails the same way (PyTorch's
 * OOM record at 2.7 ms), a second failure the replay does not follow (each
 * setting's first failure is all it keeps).
 *
 * gen_pytorch_trace OUT.bin --uncached: PyTorch with its cache off
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1: a cudaMalloc and a cudaFree per
 * tensor, NativeCachingAllocator calling cudaMalloc itself, no block layer)
 * on the 80 GiB device, 1 GiB taken by the context:
 *
 *   1 ms   t1 6 MiB, t2 8 MiB, t3 20 MiB (model.py:42)
 *   1.3 ms t1 freed; t4 4 MiB
 *   1.5 ms 32 MiB by a C extension (ext_alloc, data.py:12): no tensor
 *   2 ms   t5 79.5 GiB: cudaMalloc fails (with the cache off PyTorch
 *          raises at once)
 *   2.5 ms t2, t3, t4 freed; 3 ms end.
 * With PyTorch's cache (test_whatif.py's uncached_built): t1 under 10 MiB
 * takes a 20 MiB segment, t2 its rest (14 MiB: split, 6 MiB left), t3 a
 * 20 MiB segment of its own: reserved 40 MiB, allocated 34 MiB (the
 * tensors' own peak, 34 MiB, is the recorded reserve); t4 takes t1's freed
 * 6 MiB (split); t5 runs out under every setting: the cache's room is
 * 80 GiB less the context's 1 GiB and the extension's 32 MiB, and with
 * 32 MiB of tensors allocated 79.5 GiB more is 576 MiB too many (capacity;
 * roundup_power2_divisions:4 rounds it to 80 GiB: 1088 MiB too many).
 * Expandable segments map 20 MiB pages: t1, t2, t3 in 40 MiB, the same.
 *
 * gen_pytorch_trace OUT.bin --uncached-churn: the cache off, as above, and
 * a forward pass of 12 steps whose tensor grows by 1 MiB a step (1 to
 * 12 MiB, model.py:42), each a cudaMalloc at step k ms + 1 ms, freed
 * 0.1 ms later: 12 calls, 12 short-lived, 12 distinct sizes; 13 ms end. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_builder.h"

#define MiB (1024ull * 1024ull)
#define MS 1000000ull
#define START 7000000000000ull
#define REALTIME 1767225600000000000ull

void *alloc_block(size_t) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11alloc_blockEm");
void *device_malloc(size_t) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEm");
void *native_allocate(size_t) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator8allocateEm");
void *empty_generic(size_t) __asm__("_ZN2at6detail13empty_genericEm");
void *wrapper_cuda_addmm(size_t) __asm__("_ZN2at12_GLOBAL__N_118wrapper_CUDA_addmmEm");
void *variable_type_addmm(size_t) __asm__("_ZN5torch8autograd12VariableType5addmmEm");
void *dispatcher_call(size_t) __asm__("_ZN3c1010Dispatcher4callEm");
void *ops_addmm_call(size_t) __asm__("_ZN2at4_ops5addmm4callEm");
void *thp_variable_addmm(size_t) __asm__("_ZN5torch8autograd17THPVariable_addmmEm");
void *pybind_dispatcher(size_t) __asm__("_ZN8pybind1112cpp_function10dispatcherEm");
void *ops_mm_call(size_t) __asm__("_ZN2at4_ops2mm4callEm");
void *addmm_backward_apply(size_t) __asm__("_ZN5torch8autograd9generated14AddmmBackward05applyEm");
void *engine_evaluate_function(size_t) __asm__("_ZN5torch8autograd6Engine17evaluate_functionEm");
void *engine_thread_main(void *) __asm__("_ZN5torch8autograd6Engine11thread_mainEm");
void *host_allocate_host_memory(size_t)
    __asm__("_ZN2at4cuda12_GLOBAL__N_128CUDACachingHostAllocatorImpl20allocate_host_memoryEmPPv");
void *host_allocator_allocate(size_t) __asm__("_ZN2at4cuda12_GLOBAL__N_124CUDACachingHostAllocator8allocateEm");
void *native_pin_memory(size_t) __asm__("_ZN2at6native11_pin_memoryEm");
void *ops_pin_memory_call(size_t) __asm__("_ZN2at4_ops11_pin_memory4callEm");

/* CPython's evaluation loop and call protocol, as this program's own
 * functions: the analyzer folds them by name. Never called. */
void *_PyEval_EvalFrameDefault(void *f);
void *PyObject_Vectorcall(void *f);
void *ext_alloc(void *f);
__attribute__((noinline, used)) void *_PyEval_EvalFrameDefault(void *f) { return f; }
/* The program's own C extension: a native user frame with a line, inside
 * the Python line that names the site. */
__attribute__((noinline, used)) void *ext_alloc(void *f) { return f; }
__attribute__((noinline, used)) void *PyObject_Vectorcall(void *f) { return f; }

#define PYTHON_MODULE "/opt/cmt-test-python/bin/python3.12"
#define PYTHON_LO 0x10000000ull

static struct cmt_trace_builder *b;
static const uint8_t no_build_id[1]; /* none recorded: the first file found is used */

static void fail(const char *what)
{
    fprintf(stderr, "gen_pytorch_trace: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Records every loaded object with a path as a module. */
static int add_module(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    char exe[4096];
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return 0;
        exe[n] = '\0';
        path = exe;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (hi > lo && path[0] == '/')
        cmt_tb_module(b, path, info->dlpi_addr, lo, hi, no_build_id, 0);
    return 0;
}

/* A return address inside fn: the analyzer looks up ip - 1. */
static uint64_t ret(void *fn)
{
    return (uint64_t)(uintptr_t)fn + 1;
}

static void event(uint32_t tid, uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stk)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = type == CMT_REC_ALLOC && cmt_api_default_kind(api) != CMT_KIND_HOST_PINNED,
        .device = 0,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .stack = stk,
    };
    if (cmt_tb_event(b, tid, &e) != 0)
        fail("event");
}

static void record(uint32_t tid, uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stk,
                   int32_t result, uint64_t aux0, uint64_t aux1, uint64_t aux2)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = true,
        .device = 0,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .stack = stk,
        .result = result,
        .aux = {aux0, aux1, aux2},
    };
    if (cmt_tb_event(b, tid, &e) != 0)
        fail("record");
}

#define GiB (1024ull * MiB)
#define KiB 1024ull

/* --oom-capacity, --oom-fragments (the header comment). */
static void oom(bool fragments, bool late, uint32_t s_seg, uint32_t s_fail, uint32_t s_tensor, uint32_t s_other)
{
    const uint64_t A = 0x7f0000000000ull, O = 0x7f2000000000ull, total = 80 * GiB, free = 19 * GiB;
    cmt_tb_allocator(b, START + MS / 2, CMT_FRAMEWORK_PYTORCH, "2.11.0+cu130", CMT_BLOCKS_ON, "native", NULL,
                     "garbage_collection_threshold:0.8");
    record(4242, CMT_REC_SAMPLE, CMT_API_SAMPLE_START, MS / 2 + 1, 0, 0, 0, 0, total - GiB, total, 0);
    record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS, A, 60 * GiB, s_seg, 0, 0, 0, 0);
    record(4242, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, 1 * MS + 10, A, 60 * GiB, 0, 0, 0, 0, 0);
    if (fragments) {
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 20, A, 20 * GiB, s_tensor, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 30, A + 40 * GiB, 20 * GiB, s_tensor, 0, 0, 0, 0);
    } else {
        const uint64_t S = A + 60 * GiB;
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 20, A, 60 * GiB, s_tensor, 0, 0, 0, 0);
        record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS + 30, S, 2 * MiB, s_seg, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, 1 * MS + 40, S, 2 * MiB, 0, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 50, S, 1 * MiB, s_tensor, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 60, S + MiB, 480 * KiB, s_tensor, 0, 0, 0, 0);
    }
    for (unsigned k = 0; k < 2; k++) {
        uint64_t t = 2 * MS + k * MS / 10;
        record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, t, 0, 30 * GiB, s_fail, 2, 0, 0, 0);
        record(4242, CMT_REC_SAMPLE, CMT_API_SAMPLE_FAILURE, t + 10, 0, 30 * GiB, 0, 0, free, total, 0);
    }
    if (!late)
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_OOM, 2 * MS + MS / 5, 0, 30 * GiB, s_fail, 0, 0, 0, free);
    record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 2 * MS + MS / 2, O, 1 * GiB, s_other, 0, 0, 0, 0);
    if (late)
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_OOM, 2 * MS + 6 * MS / 10, 0, 30 * GiB, s_fail, 0, 0, 0, free);
    cmt_tb_end(b, START + 3 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

/* --oom-stranded (the header comment). */
static void oom_stranded(uint32_t s_big, uint32_t s_small, uint32_t s_fail, bool twice)
{
    const uint64_t S1 = 0x7f0000000000ull, S2 = 0x7f0600000000ull, S3 = 0x7f0c00000000ull;
    const uint64_t total = 80 * GiB, free = 19 * GiB;
    cmt_tb_allocator(b, START + MS / 2, CMT_FRAMEWORK_PYTORCH, "2.11.0+cu130", CMT_BLOCKS_ON, "native", NULL, NULL);
    record(4242, CMT_REC_SAMPLE, CMT_API_SAMPLE_START, MS / 2 + 1, 0, 0, 0, 0, total - GiB, total, 0);
    const uint64_t seg[3] = {S1, S2, S3};
    for (unsigned i = 0; i < 3; i++) {
        uint64_t t = 1 * MS + i * 100;
        record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, t, seg[i], 20 * GiB, s_big, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, t + 10, seg[i], 20 * GiB, 0, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, t + 20, seg[i], 20 * GiB, s_big, 0, 0, 0, 0);
    }
    for (unsigned i = 0; i < 3; i += 2) {
        uint64_t t = 1 * MS + 3 * MS / 10 + i * 100;
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, t, seg[i], 20 * GiB, 0, 0, 0, 0, 0);
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_FREE_COMPLETED, t + 10, seg[i], 20 * GiB, 0, 0, 0, 0, 0);
    }
    record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 4 * MS / 10, S1, 1 * GiB, s_small, 0, 0, 0, 0);
    record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 5 * MS / 10, S1 + GiB, 1 * GiB, s_small, 0, 0, 0, 0);
    record(4242, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 1 * MS + 6 * MS / 10, S3, 19 * GiB, s_small, 0, 0, 0, 0);
    for (unsigned n = 0; n < (twice ? 2u : 1u); n++) {
        uint64_t at = 2 * MS + n * MS / 2;
        for (unsigned k = 0; k < 2; k++) {
            uint64_t t = at + k * MS / 10;
            record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, t, 0, 30 * GiB, s_fail, 2, 0, 0, 0);
            record(4242, CMT_REC_SAMPLE, CMT_API_SAMPLE_FAILURE, t + 10, 0, 30 * GiB, 0, 0, free, total, 0);
        }
        record(4242, CMT_REC_BLOCK, CMT_API_TORCH_OOM, at + MS / 5, 0, 30 * GiB, s_fail, 0, 0, 0, free);
    }
    cmt_tb_end(b, START + 3 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

/* --uncached (the header comment). */
static void uncached(uint32_t s_tensor, uint32_t s_ext)
{
    const uint64_t total = 80 * GiB, base = 0x7f0000000000ull;
    const uint64_t t1 = base, t2 = base + 0x2000000, t3 = base + 0x4000000, t4 = base + 0x6000000,
                   ext = base + 0x8000000;
    record(4242, CMT_REC_SAMPLE, CMT_API_SAMPLE_START, MS / 2, 0, 0, 0, 0, total - GiB, total, 0);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS, t1, 6 * MiB, s_tensor);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS + MS / 10, t2, 8 * MiB, s_tensor);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS + 2 * MS / 10, t3, 20 * MiB, s_tensor);
    event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, 1 * MS + 3 * MS / 10, t1, 0, 0);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS + 4 * MS / 10, t4, 4 * MiB, s_tensor);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS + 5 * MS / 10, ext, 32 * MiB, s_ext);
    record(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 2 * MS, 0, 79 * GiB + 512 * MiB, s_tensor, 2, 0, 0, 0);
    record(4242, CMT_REC_SAMPLE, CMT_API_SAMPLE_FAILURE, 2 * MS + 10, 0, 79 * GiB + 512 * MiB, 0, 0,
           total - GiB - 64 * MiB, total, 0);
    event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, 2 * MS + MS / 2, t2, 0, 0);
    event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, 2 * MS + MS / 2 + 1, t3, 0, 0);
    event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, 2 * MS + MS / 2 + 2, t4, 0, 0);
    cmt_tb_end(b, START + 3 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

/* --uncached-churn (the header comment). */
static void uncached_churn(uint32_t s_tensor)
{
    const uint64_t base = 0x7f0000000000ull;
    for (uint64_t k = 0; k < 12; k++) {
        uint64_t addr = base + k * 0x1000000;
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, (k + 1) * MS, addr, (k + 1) * MiB, s_tensor);
        event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, (k + 1) * MS + MS / 10, addr, 0, 0);
    }
    cmt_tb_end(b, START + 13 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

/* Segments made and released in a shuffled order (an LCG: the same trace
 * every run); the most live at once is summed here. */
static void churn(uint32_t stack)
{
    enum { N = 4000 };
    static uint64_t addr[N], size[N];
    static bool live[N];
    uint64_t seed = 12345, ts = 1 * MS, bytes = 0, count = 0, best = 0, best_count = 0, best_ts = 0;
    for (unsigned i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* 2 MiB apart: the low bits alike, as segments are */
        addr[i] = 0x7f0000000000ull + (uint64_t)i * (2u << 20);
        size[i] = (2u << 20) * (1 + (seed >> 60));
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, ts++, addr[i], size[i], stack);
        live[i] = true;
        bytes += size[i];
        count++;
        if (bytes > best) {
            best = bytes;
            best_count = count;
            best_ts = ts - 1;
        }
        /* release one or two earlier ones, picked at random */
        for (unsigned k = 0; k < 1 + ((seed >> 40) & 1); k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            unsigned j = (unsigned)((seed >> 33) % (i + 1));
            if (!live[j])
                continue;
            event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, ts++, addr[j], 0, 0);
            live[j] = false;
            bytes -= size[j];
            count--;
        }
    }
    printf("%llu %llu %llu\n", (unsigned long long)best, (unsigned long long)best_count,
           (unsigned long long)best_ts);
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && (!strcmp(argv[2], "--churn") || !strcmp(argv[2], "--host-cache") ||
                                     !strcmp(argv[2], "--oom-capacity") || !strcmp(argv[2], "--oom-fragments") ||
                                     !strcmp(argv[2], "--oom-late") || !strcmp(argv[2], "--oom-stranded") ||
                                     !strcmp(argv[2], "--oom-stranded-twice") || !strcmp(argv[2], "--uncached") ||
                                     !strcmp(argv[2], "--uncached-churn")))) {
        fprintf(stderr, "usage: gen_pytorch_trace OUT.bin [--churn | --host-cache | --oom-capacity | --oom-fragments | "
                        "--oom-late | --oom-stranded | --oom-stranded-twice | --uncached | --uncached-churn]\n");
        return 2;
    }
    struct cmt_trace_builder_options opt = {
        .pid = 4242, .start_monotonic_ns = START, .start_realtime_ns = REALTIME, .clean_exit = true};
    b = cmt_tb_create(argv[1], &opt);
    if (!b)
        fail(argv[1]);
    const char *args[] = {"python3", "train.py"};
    cmt_tb_process(b, 4242, 1, "/usr/bin/python3.12", 2, args, "trainhost", -1, "/home/u/proj");
    cmt_tb_device(b, 0, "Test GPU", 80ull << 30);
    cmt_tb_thread(b, 4242, "python3");
    cmt_tb_thread(b, 4250, "pt_autograd_0");
    dl_iterate_phdr(add_module, NULL);
    cmt_tb_module(b, PYTHON_MODULE, 0, PYTHON_LO, PYTHON_LO + 0x1000000, no_build_id, 0);

    uint64_t eval = ret((void *)_PyEval_EvalFrameDefault), call = ret((void *)PyObject_Vectorcall);
    uint64_t py_main = PYTHON_LO + 0x54caed; /* an anonymous frame of the interpreter */
    uint64_t fwd30 = cmt_tb_frame_language(b, "forward", "/home/u/proj/model.py", 30, 1);
    uint64_t fwd31 = cmt_tb_frame_language(b, "forward", "/home/u/proj/model.py", 31, 1);
    uint64_t fwd42 = cmt_tb_frame_language(b, "forward", "/home/u/proj/model.py", 42, 1);
    uint64_t impl = cmt_tb_frame_language(b, "_call_impl",
                                          "/home/u/venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
                                          1750, 1);
    uint64_t step = cmt_tb_frame_language(b, "train_step", "/home/u/proj/train.py", 55, 1);
    uint64_t scratch = cmt_tb_frame_language(b, "scratch", "/home/u/proj/train.py", 60, 1);
    uint64_t module = cmt_tb_frame_language(b, "<module>", "/home/u/proj/train.py", 80, 1);
    uint64_t load = cmt_tb_frame_language(b, "load", "/home/u/proj/data.py", 12, 1);
    uint64_t runpy = cmt_tb_frame_language(b, "_run_code", "/usr/lib/python3.12/runpy.py", 88, 1);
    uint64_t frozen = cmt_tb_frame_language(b, "_call_with_frames_removed", "<frozen importlib._bootstrap>", 488, 1);

    /* Python above the binding: model.forward called through
     * nn.Module._call_impl from train_step, from the script, run by runpy. */
#define PYTHON_ABOVE(fwd) call, eval, fwd, impl, eval, step, eval, module, eval, frozen, runpy, py_main
    uint64_t forward_cached[][32] = {
        {ret(alloc_block), ret(device_malloc), ret(native_allocate), ret(empty_generic), ret(wrapper_cuda_addmm),
         ret(variable_type_addmm), ret(dispatcher_call), ret(ops_addmm_call), ret(thp_variable_addmm),
         ret(pybind_dispatcher), PYTHON_ABOVE(fwd30)},
        {ret(alloc_block), ret(device_malloc), ret(native_allocate), ret(empty_generic), ret(wrapper_cuda_addmm),
         ret(variable_type_addmm), ret(dispatcher_call), ret(ops_addmm_call), ret(thp_variable_addmm),
         ret(pybind_dispatcher), PYTHON_ABOVE(fwd31)},
        {ret(native_allocate), ret(empty_generic), ret(wrapper_cuda_addmm), ret(variable_type_addmm),
         ret(dispatcher_call), ret(ops_addmm_call), ret(thp_variable_addmm), ret(pybind_dispatcher),
         PYTHON_ABOVE(fwd42)},
        {ret(alloc_block), ret(device_malloc), ret(native_allocate), ret(empty_generic), ret(wrapper_cuda_addmm),
         ret(variable_type_addmm), ret(dispatcher_call), ret(ops_addmm_call), ret(thp_variable_addmm),
         ret(pybind_dispatcher), PYTHON_ABOVE(fwd42)},
    };
    uint32_t s_fwd30 = cmt_tb_stack(b, forward_cached[0], 22);
    uint32_t s_fwd31 = cmt_tb_stack(b, forward_cached[1], 22);
    uint32_t s_uncached = cmt_tb_stack(b, forward_cached[2], 20);
    uint32_t s_fwd42 = cmt_tb_stack(b, forward_cached[3], 22);
    uint64_t backward[] = {ret(alloc_block), ret(device_malloc), ret(native_allocate), ret(empty_generic),
                           ret(ops_mm_call), ret(addmm_backward_apply), ret(engine_evaluate_function),
                           ret(engine_thread_main)};
    uint32_t s_backward = cmt_tb_stack(b, backward, 8);
    uint64_t scratch_stack[] = {call, eval, scratch, eval, module, eval, frozen, runpy, py_main};
    uint32_t s_scratch = cmt_tb_stack(b, scratch_stack, 9);
    uint64_t ext_stack[] = {ret((void *)ext_alloc), call, eval, load, eval, module, eval, frozen, runpy, py_main};
    uint32_t s_ext = cmt_tb_stack(b, ext_stack, 10);

    uint64_t pin = cmt_tb_frame_language(b, "collate", "/home/u/proj/data.py", 14, 1);
    uint64_t pin_stack[] = {ret(host_allocate_host_memory), ret(host_allocator_allocate), ret(native_pin_memory),
                            ret(ops_pin_memory_call), ret(pybind_dispatcher), call, eval, pin, eval, load, eval,
                            module, eval, frozen, runpy, py_main};
    uint32_t s_pin = cmt_tb_stack(b, pin_stack, 16);

    if (argc == 3 && !strcmp(argv[2], "--host-cache")) {
        const uint64_t H1 = 0x7e0000000000ull, H2 = 0x7e0040000000ull, H3 = 0x7e0044000000ull,
                       H4 = 0x7e0046000000ull, D = 0x7f0000000000ull;
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_HOST_ALLOC, 1 * MS, H1, 1024 * MiB, s_pin);
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_HOST_ALLOC, 2 * MS, H2, 64 * MiB, s_pin);
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_HOST_ALLOC, 3 * MS, H3, 16 * MiB, s_pin);
        event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE_HOST, 4 * MS, H3, 0, 0);
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_HOST_ALLOC, 5 * MS, H4, 2 * MiB, s_ext);
        event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 6 * MS, D, 20 * MiB, s_fwd30);
        cmt_tb_end(b, START + 8 * MS, CMT_END_EXIT);
        if (cmt_tb_close(b) != 0)
            fail("close");
        return 0;
    }
    if (argc == 3 && (!strcmp(argv[2], "--oom-capacity") || !strcmp(argv[2], "--oom-fragments") ||
                      !strcmp(argv[2], "--oom-late"))) {
        oom(!strcmp(argv[2], "--oom-fragments"), !strcmp(argv[2], "--oom-late"), s_fwd30, s_fwd31, s_fwd30, s_scratch);
        return 0;
    }
    if (argc == 3 && (!strcmp(argv[2], "--oom-stranded") || !strcmp(argv[2], "--oom-stranded-twice"))) {
        oom_stranded(s_fwd30, s_fwd31, s_fwd42, !strcmp(argv[2], "--oom-stranded-twice"));
        return 0;
    }
    if (argc == 3 && !strcmp(argv[2], "--uncached-churn")) {
        uncached_churn(s_uncached);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[2], "--uncached")) {
        uncached(s_uncached, s_ext);
        return 0;
    }
    if (argc == 3) {
        churn(s_fwd30);
        cmt_tb_end(b, START + 100 * MS, CMT_END_EXIT);
        if (cmt_tb_close(b) != 0)
            fail("close");
        return 0;
    }
    const uint64_t A = 0x7f0000000000ull, B = 0x7f0002000000ull, C = 0x7f0004000000ull, L = 0x7f0006000000ull,
                   S = 0x7f0008000000ull, E = 0x7f000c000000ull;
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1 * MS, A, 20 * MiB, s_fwd30);
    event(4250, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 2 * MS, B, 8 * MiB, s_backward);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 3 * MS, C, 6 * MiB, s_fwd31);
    event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, 4 * MS, C, 0, 0);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 5 * MS, L, 1 * MiB, s_uncached);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 6 * MS, S, 40 * MiB, s_scratch);
    event(4242, CMT_REC_FREE, CMT_API_CUDA_FREE, 7 * MS, S, 0, 0);
    event(4242, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 7 * MS + MS / 2, E, 512 * 1024, s_ext);
    cmt_tb_end(b, START + 8 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
    return 0;
}
