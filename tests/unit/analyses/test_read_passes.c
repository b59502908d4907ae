/* SPDX-License-Identifier: MIT */
/* The holders followed while the trace is read (read_passes.h): each
 * holder's own peak and what-if of PyTorch without its cache come from the
 * analysis's one reading, with the figures a reading of their own gives;
 * a stack named before its record makes the report read again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "report.h"
#include "test_util.h"
#include "trace_builder.h"

#define START 1000000000ull
#define MiB (1ull << 20)

static void alloc(struct cmt_trace_builder *b, uint64_t ts, uint64_t addr, uint64_t size, uint64_t stack)
{
    struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                          .has_device = true, .ts = START + ts, .addr = addr, .size = size, .stack = stack};
    CHECK(cmt_tb_event(b, 7, &e) == 0);
}

static void release(struct cmt_trace_builder *b, uint64_t ts, uint64_t addr)
{
    struct cmt_event e = {.type = CMT_REC_FREE, .api = CMT_API_CUDA_FREE, .kind = CMT_KIND_DEVICE,
                          .ts = START + ts, .addr = addr};
    CHECK(cmt_tb_event(b, 7, &e) == 0);
}

/* PyTorch without its cache (its tensors' own cudaMalloc), cuBLAS's
 * workspace and the program's own buffer; late: a tensor's allocation
 * fails before the first succeeds (while reading, its stack was not yet
 * known for a tensor's). */
static void write_trace(const char *path, bool late)
{
    struct cmt_trace_builder_options opt = {.pid = 42, .start_monotonic_ns = START, .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    CHECK(b != NULL);
    cmt_tb_module(b, "/opt/torch/lib/libc10_cuda.so", 0x7000000000, 0x7000000000, 0x7000100000, NULL, 0);
    cmt_tb_device(b, 0, "sim", 8ull << 30);
    uint64_t tensor_frame = cmt_tb_frame(b, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc",
                                         "CUDACachingAllocator.cpp", 10);
    uint64_t cublas_frame = cmt_tb_frame(b, "cublasCreate_v2", "cublas.cpp", 20);
    uint64_t main_frame = cmt_tb_frame(b, "main", "app.c", 30);
    uint32_t tensor = cmt_tb_stack(b, &tensor_frame, 1);
    uint32_t cublas = cmt_tb_stack(b, &cublas_frame, 1);
    uint32_t program = cublas + 1;
    if (late) { /* a tensor's cudaMalloc fails before any succeeds */
        struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                              .has_device = true, .ts = START + 5, .size = 1ull << 40, .result = 2, .stack = tensor};
        CHECK(cmt_tb_event(b, 7, &e) == 0);
    }
    CHECK_EQ_U64(cmt_tb_stack(b, &main_frame, 1), program);
    alloc(b, 10, 0x100000, 2 * MiB, tensor);
    alloc(b, 20, 0x400000, 4 * MiB, cublas);
    alloc(b, 30, 0x200000, 3 * MiB, tensor);
    alloc(b, 40, 0x800000, 8 * MiB, program);
    release(b, 50, 0x100000);
    alloc(b, 60, 0x100000, 6 * MiB, tensor); /* PyTorch's peak: 3 + 6 MiB */
    release(b, 70, 0x400000);
    release(b, 80, 0x200000);
    release(b, 90, 0x100000);
    cmt_tb_end(b, START + 100, 0);
    CHECK(cmt_tb_close(b) == 0);
}

struct result {
    struct cmt_holder_peak pytorch, cublas;
    bool has_own_peaks;
    uint64_t recorded_peak, requests, recorded_ooms;
    bool one_reading; /* the analysis's passes served the report */
    bool has_uncached; /* what-if of PyTorch without its cache was shown */
    bool holders_one_reading; /* the holders' own peaks came from the analysis's reading */
};

static struct result report(const char *path, bool follow)
{
    struct cmt_ta_settings settings[8];
    size_t n_settings = cmt_whatif_candidates(settings, 8);
    struct cmt_report_options ropt = {.top = 10, .max_frames = 8, .tree_min_percent = 1.0, .holder_peaks = true};
    ropt.frames.no_symbols = true;
    struct cmt_analysis_options aopt = {.whatif = true, .whatif_settings = settings, .n_whatif_settings = n_settings,
                                        .holder_frames = follow ? &ropt.frames : NULL, .holder_peaks = true};
    struct cmt_analysis a;
    CHECK(cmt_analysis_run_with(&a, path, 0, &aopt) == 0);
    struct result res = {0};
    res.one_reading = res.holders_one_reading = cmt_read_passes_holder_peaks(a.passes) != NULL;
    struct cmt_report r;
    CHECK(cmt_report_build(&r, &a, &ropt) == 0);
    for (size_t i = 0; i < r.n_accounts; i++) {
        if (r.accounts[i].account->cls != CMT_CLASS_DEVICE)
            continue;
        res.has_own_peaks = r.accounts[i].has_own_peaks;
        res.pytorch = r.accounts[i].own_peak[CMT_HOLDER_PYTORCH];
        res.cublas = r.accounts[i].own_peak[CMT_HOLDER_CUBLAS];
    }
    res.has_uncached = r.whatif_uncached != NULL;
    if (r.whatif_uncached) {
        CHECK_EQ_U64(r.whatif_uncached->n_devices, 1);
        res.recorded_peak = r.whatif_uncached->devices[0].recorded_peak;
        res.requests = r.whatif_uncached->devices[0].requests;
        res.recorded_ooms = r.whatif_uncached->devices[0].recorded_ooms;
    }
    /* handed over to the report when the one reading served it */
    res.one_reading = res.one_reading && a.passes && !a.passes->uncached_w;
    cmt_report_free(&r);
    cmt_analysis_free(&a);
    return res;
}

static void check_figures(const struct result *r, uint64_t failed)
{
    CHECK(r->has_uncached);
    CHECK_EQ_U64(r->requests, 3);
    CHECK_EQ_U64(r->recorded_ooms, failed);
    CHECK(r->has_own_peaks);
    CHECK_EQ_U64(r->pytorch.bytes, 9 * MiB);
    CHECK_EQ_U64(r->pytorch.count, 2);
    CHECK_EQ_U64(r->pytorch.ts, START + 60);
    CHECK_EQ_U64(r->cublas.bytes, 4 * MiB);
    CHECK_EQ_U64(r->cublas.count, 1);
    CHECK_EQ_U64(r->cublas.ts, START + 20);
    CHECK_EQ_U64(r->recorded_peak, 9 * MiB); /* the tensors' cudaMalloc, and nothing else */
}

static void vmm(struct cmt_trace_builder *b, uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size,
                uint64_t stack, uint64_t handle)
{
    struct cmt_event e = {.type = type, .api = api, .kind = (uint8_t)cmt_api_default_kind(api), .has_device = true,
                          .ts = START + ts, .addr = addr, .size = size, .stack = stack, .aux = {handle}};
    CHECK(cmt_tb_event(b, 7, &e) == 0);
}

/* PyTorch's expandable segments releasing a handle while it is still
 * mapped: its memory stays until the unmap (the replay's rule, cuMemRelease's
 * documentation), so PyTorch's own peak holds both handles, whether the
 * analysis's reading followed the holders or the report read again. */
static void check_vmm(const char *path)
{
    struct cmt_trace_builder_options opt = {.pid = 42, .start_monotonic_ns = START, .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    CHECK(b != NULL);
    cmt_tb_module(b, "/opt/torch/lib/libc10_cuda.so", 0x7000000000, 0x7000000000, 0x7000100000, NULL, 0);
    cmt_tb_device(b, 0, "sim", 8ull << 30);
    uint64_t frame = cmt_tb_frame(b, "c10::cuda::CUDACachingAllocator::Native::ExpandableSegment::map",
                                  "CUDACachingAllocator.cpp", 10);
    uint32_t segment = cmt_tb_stack(b, &frame, 1);
    vmm(b, CMT_REC_ALLOC, CMT_API_CU_MEM_ADDRESS_RESERVE, 10, 0x10000000, 64 * MiB, segment, 0);
    vmm(b, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 20, 0xa1, 2 * MiB, segment, 0);
    vmm(b, CMT_REC_ALLOC, CMT_API_CU_MEM_MAP, 30, 0x10000000, 2 * MiB, segment, 0xa1);
    vmm(b, CMT_REC_FREE, CMT_API_CU_MEM_RELEASE, 40, 0xa1, 0, 0, 0); /* still mapped: the memory stays */
    vmm(b, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 50, 0xa2, 4 * MiB, segment, 0); /* 6 MiB: the peak */
    vmm(b, CMT_REC_FREE, CMT_API_CU_MEM_UNMAP, 60, 0x10000000, 2 * MiB, 0, 0);   /* 0xa1's memory goes */
    vmm(b, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 70, 0xa3, 1 * MiB, segment, 0); /* 5 MiB */
    cmt_tb_end(b, START + 100, 0);
    CHECK(cmt_tb_close(b) == 0);
    struct result once = report(path, true), again = report(path, false);
    CHECK(once.holders_one_reading);
    CHECK(!again.holders_one_reading);
    const struct result *both[] = {&once, &again};
    for (size_t i = 0; i < 2; i++) {
        CHECK(both[i]->has_own_peaks);
        CHECK_EQ_U64(both[i]->pytorch.bytes, 6 * MiB);
        CHECK_EQ_U64(both[i]->pytorch.count, 2);
        CHECK_EQ_U64(both[i]->pytorch.ts, START + 50);
    }
}

int main(void)
{
    char dir[] = "/tmp/cmt-test-read-passes-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/t.bin", dir);

    write_trace(path, false);
    struct result once = report(path, true), again = report(path, false);
    CHECK(once.one_reading);   /* followed while read */
    CHECK(!again.one_reading); /* not asked: the report read the trace again */
    check_figures(&once, 0);
    check_figures(&again, 0);

    /* The pass answered "not a tensor" for the failure, which the whole
     * trace says was one: the report reads again for what-if, with the
     * figures a reading of its own gives (the recorded out-of-memory error). */
    write_trace(path, true);
    struct result late = report(path, true);
    CHECK(!late.one_reading);
    check_figures(&late, 1);

    check_vmm(path);

    unlink(path);
    rmdir(dir);
    printf("read_passes: ok\n");
    return 0;
}
