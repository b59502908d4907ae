/* SPDX-License-Identifier: MIT */
/* gen_xla_trace OUT.bin: a JAX run's NVTX ranges as XLA names them (issue
 * 33 item 9), for the phase rule of XLA's compiler (test_phases.py,
 * test_xla_compiler_ranges). XLA's GPU compiler opens a range per module it
 * compiles ("XlaCompileBackend:#module=jit_f,program_id=3#") and, inside
 * it, ranges of its passes ("XlaEmitLlvmIr", "XlaCompileGpuAsm"), all in
 * TSL's NVTX domain, as the program's own annotations
 * (jax.profiler.TraceAnnotation) are. Device 0 has 8 GiB.
 *
 *   thread 7001: train_step [TSL]
 *       params 64 MiB (train.py:10), kept
 *       XlaCompileBackend:#module=jit_f,program_id=3# [TSL]
 *           three times: XlaEmitLlvmIr > XlaCompileGpuAsm, each
 *           autotuning 256 MiB (train.py:20) freed inside
 *           -> the peak, 320 MiB, is in the first XlaCompileGpuAsm
 *       out 32 MiB (train.py:30), kept
 *   thread 7002 (XLA's compile thread, no range of the program):
 *       XlaCompileBackend:#module=jit_g,program_id=4# > XlaAutotunerMeasurement
 *           a 16 GiB cuMemAlloc that fails (out of memory)
 *           16 MiB (train.py:40) freed inside
 *       XlaCompileGpuAsm alone (a range naming no module): 8 MiB
 *       (train.py:50) freed inside */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)
#define MS 1000000ull
#define START 7000000000000ull
#define MAIN 7001
#define COMPILER 7002

static struct cmt_trace_builder *b;
static uint64_t now;
static uint32_t tsl;

static void fail(const char *what)
{
    fprintf(stderr, "gen_xla_trace: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void put(uint32_t tid, uint8_t type, uint8_t api, uint64_t addr, uint64_t size, uint32_t stack,
                int32_t result, uint64_t aux0, uint64_t aux1)
{
    now += MS;
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = type == CMT_REC_ALLOC,
        .device = 0,
        .result = result,
        .ts = START + now,
        .addr = addr,
        .size = size,
        .stack = stack,
        .aux = {aux0, aux1},
    };
    if (cmt_tb_event(b, tid, &e) != 0)
        fail("event");
}

static void push(uint32_t tid, const char *name)
{
    put(tid, CMT_REC_MARK, CMT_API_MARK_PUSH, 0, 0, 0, 0, cmt_tb_string(b, name), tsl);
}

static void pop(uint32_t tid)
{
    put(tid, CMT_REC_MARK, CMT_API_MARK_POP, 0, 0, 0, 0, 0, tsl);
}

static void alloc(uint32_t tid, uint64_t addr, uint64_t size, uint32_t stack)
{
    put(tid, CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, addr, size, stack, 0, 0, 0);
}

static void release(uint32_t tid, uint64_t addr)
{
    put(tid, CMT_REC_FREE, CMT_API_CU_MEM_FREE, addr, 0, 0, 0, 0, 0);
}

static uint32_t site(unsigned line)
{
    uint64_t f = cmt_tb_frame_language(b, "train", "train.py", line, 1);
    return cmt_tb_stack(b, &f, 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_xla_trace OUT.bin\n");
        return 2;
    }
    struct cmt_trace_builder_options opt = {.pid = 7000, .start_monotonic_ns = START,
                                            .start_realtime_ns = 1767225600000000000ull, .clean_exit = true};
    b = cmt_tb_create(argv[1], &opt);
    if (!b)
        fail(argv[1]);
    const char *args[] = {"python3", "train.py"};
    cmt_tb_process(b, 7000, 1, "/usr/bin/python3", 2, args, "gpu-host", -1, "/work");
    cmt_tb_thread(b, MAIN, "python3");
    cmt_tb_thread(b, COMPILER, "xla_compile");
    cmt_tb_device(b, 0, "Test GPU 8 GiB", 8 * GiB);
    tsl = cmt_tb_string(b, "TSL");
    uint32_t params = site(10), tune = site(20), out = site(30), tune_g = site(40), asm_only = site(50);

    push(MAIN, "train_step");
    alloc(MAIN, 0x7f0000000000ull, 64 * MiB, params);
    push(MAIN, "XlaCompileBackend:#module=jit_f,program_id=3#");
    for (int i = 0; i < 3; i++) {
        push(MAIN, "XlaEmitLlvmIr");
        push(MAIN, "XlaCompileGpuAsm");
        alloc(MAIN, 0x7f0010000000ull, 256 * MiB, tune);
        release(MAIN, 0x7f0010000000ull);
        pop(MAIN);
        pop(MAIN);
    }
    pop(MAIN);
    alloc(MAIN, 0x7f0020000000ull, 32 * MiB, out);
    pop(MAIN);

    push(COMPILER, "XlaCompileBackend:#module=jit_g,program_id=4#");
    push(COMPILER, "XlaAutotunerMeasurement");
    put(COMPILER, CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 0, 16 * GiB, tune_g, 2, 0, 0); /* CUDA_ERROR_OUT_OF_MEMORY */
    alloc(COMPILER, 0x7f0030000000ull, 16 * MiB, tune_g);
    release(COMPILER, 0x7f0030000000ull);
    pop(COMPILER);
    pop(COMPILER);
    push(COMPILER, "XlaCompileGpuAsm");
    alloc(COMPILER, 0x7f0040000000ull, 8 * MiB, asm_only);
    release(COMPILER, 0x7f0040000000ull);
    pop(COMPILER);

    cmt_tb_end(b, START + now + MS, 0);
    if (cmt_tb_close(b) != 0)
        fail("close");
    return 0;
}
