/* SPDX-License-Identifier: MIT */
/* gen_tensor_trace OUT.bin [OPTION...]: the trace of a PyTorch training
 * script as the shim records it with the block layer on (PyTorch 2.11),
 * shaped like samples/gpu/torch_workloads.py's `train` mode, written by the
 * trace builder. Every module path is one the analysing machine does not
 * have (/opt/venv/...): frames are module+offset only, as on a CI server
 * that collects a GPU runner's traces; Python frames are FRAME records.
 * test_tensors.py asserts the figures; they follow from this.
 *
 * The script (train.py): a model of 2 blocks built at module level and
 * moved with .cuda() (<module> at train.py:20; weights of 128 MiB, up and
 * down per block, 512 MiB in all), AdamW built beside it, then steps
 * (train_step, called from run_train at :45, from <module> at :50):
 *   x = torch.randn(...)                          train.py:30, 64 MiB
 *   out = model(x)                                train.py:32, per block
 *       h = self.up(x)          Block.forward :12, 128 MiB (saved)
 *       h = gelu(h)             Block.forward :13, 128 MiB (saved)
 *       return x + self.down(h) Block.forward :14, 64 MiB for down(h),
 *                               released after the add, and 64 MiB out
 *   loss = out.pow(2).mean()                      train.py:33, 64 MiB
 *       (released at once) and 2 MiB (the loss, released at the step's end)
 *   loss.backward()                               train.py:35: the loss's
 *       gradient of ones, 2 MiB, on the calling thread (_make_grads);
 *       on pt_autograd_0, native frames only, per block (last first):
 *       dW_down 128 MiB (kept: a gradient), 128 MiB (released), dW_up
 *       128 MiB (kept), 64 MiB (released), then the block's h, gelu and
 *       out released (the first block's x too); the ones at the end
 *   opt.step()                                    train.py:37: at step 0
 *       AdamW's state, 2 x 128 MiB per weight (1 GiB, _init_group); every
 *       step 4 x 128 MiB of foreach temporaries, released at its end; then
 *       zero_grad(set_to_none=True) releases the gradients
 *   --leak: history.append(out.detach())          train.py:39: the last
 *       block's out is kept, 64 MiB (67108864 B) a step
 * and at the first matmul cuBLAS's own handle state: cuMemAlloc of 64 MiB
 * inside libcublas.so.13 (kept to exit, as PyTorch never destroys it).
 *
 * Tensors live (MiB): 512 after setup; from step 1 on 1536 at each step's
 * start, 2306 at the forward pass's peak (the loss's 64 + 2 MiB), 2564 at the
 * backward pass's (the last block's 64 MiB temporary: params 512,
 * optimizer state 1024, activations 706, gradients 256, temporaries 66),
 * 2562 at the optimizer's; with --leak 64 MiB more per step before it.
 *
 * Options: --steps N (12), --leak, --nvtx (each step an NVTX range "step N"
 * with "forward", "backward" and "optimizer" inside), --expandable
 * (expandable segments: cuMemCreate/cuMemMap; the first cuMemCreate is
 * PyTorch's handle-type probe, failing with CUDA_ERROR_NOT_PERMITTED and
 * asked again), --inference (no backward pass nor optimizer: the model's
 * forward only), --workspace (a 32 MiB cuBLAS workspace taken from the
 * cache under a frame named at::cuda::getCurrentCUDABlasHandle(), kept).
 *
 * gen_tensor_trace OUT.bin --frag-oom: torch_workloads.py's frag_oom on a
 * device of 80 GiB with 1 GiB taken before: a tensor of 190 x 424 MiB
 * (its own segment) released, 190 tensors of 424 MiB made in that cached
 * segment, every other one released (95 kept: 40280 MiB free in the cache
 * in 424 MiB ranges, 336 MiB free on the device), then 1 GiB asked:
 * cudaMalloc fails, PyTorch frees no cached segment (none is free) and asks
 * again, fails again, then its OOM record: fragmentation inside the cache.
 * --capacity-oom: tensors of 2 GiB until the device is full: 39 fit, the
 * 40th fails the same way (capacity). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define START 8000000000000ull
#define REALTIME 1767225600000000000ull
#define DEVICE_BYTES (80 * GiB)
#define MAIN 100
#define AUTOGRAD 101

static struct cmt_trace_builder *b;
static uint64_t now = 1000000; /* ns since START; every record one microsecond after the last */
static bool expandable;

static void fail(const char *what)
{
    fprintf(stderr, "gen_tensor_trace: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t tick(void)
{
    now += 1000;
    return START + now;
}

static void record(uint32_t tid, uint8_t type, uint8_t api, uint64_t addr, uint64_t size, uint32_t stack,
                   int32_t result, uint64_t aux0, uint64_t aux1, uint64_t aux2)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = true,
        .device = 0,
        .ts = tick(),
        .addr = addr,
        .size = size,
        .stack = stack,
        .result = result,
        .aux = {aux0, aux1, aux2},
    };
    if (cmt_tb_event(b, tid, &e) != 0)
        fail("event");
}

static void mark(uint8_t api, const char *name)
{
    struct cmt_event e = {.type = CMT_REC_MARK, .api = api, .kind = CMT_KIND_DEVICE, .ts = tick(),
                          .aux = {name ? cmt_tb_string(b, name) : 0}};
    if (cmt_tb_event(b, MAIN, &e) != 0)
        fail("mark");
}

/* ---- fake modules: paths this machine does not have -------------------------------------------- */

#define C10 0x7f1000000000ull
#define TORCH_CPU 0x7f2000000000ull
#define TORCH_CUDA 0x7f3000000000ull
#define CUBLAS 0x7f4000000000ull
#define CUDART 0x7f5000000000ull
#define PYTHON 0x10000000ull
static const uint8_t no_build_id[1];

static void modules(void)
{
    static const struct {
        const char *path;
        uint64_t lo;
    } m[] = {
        {"/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so", C10},
        {"/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so", TORCH_CPU},
        {"/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", TORCH_CUDA},
        {"/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13", CUBLAS},
        {"/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13", CUDART},
        {"/usr/bin/python3.12", PYTHON},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        cmt_tb_module(b, m[i].path, m[i].lo, m[i].lo, m[i].lo + 0x10000000, no_build_id, 0);
}

/* ---- stacks ------------------------------------------------------------------------------------ */

#define TRAIN "/home/u/proj/train.py"
#define SITE "/opt/venv/lib/python3.12/site-packages/torch/"

static uint32_t stack_of(const uint64_t *native, size_t n_native, const uint64_t *py, size_t n_py)
{
    uint64_t f[64];
    size_t n = 0;
    for (size_t i = 0; i < n_native; i++)
        f[n++] = native[i];
    for (size_t i = 0; i < n_py; i++)
        f[n++] = py[i];
    f[n++] = PYTHON + 0x54caed; /* the interpreter's main: folded */
    return cmt_tb_stack(b, f, (uint32_t)n);
}

static uint64_t py(const char *function, const char *file, uint32_t line)
{
    return cmt_tb_frame_language(b, function, file, line, 1);
}

struct stacks {
    uint32_t model, batch, up, gelu, res, pow, loss, ones, state, opt_tmp, bw_grad, bw_tmp, cublas, workspace;
};

static void make_stacks(struct stacks *s)
{
    /* the caching allocator's frames over an operation's */
    uint64_t alloc[] = {C10 + 0x2f4cb, C10 + 0x42728, TORCH_CPU + 0x197746c, TORCH_CUDA + 0xcd035f};
    uint64_t run = py("run_train", TRAIN, 45), module = py("<module>", TRAIN, 50);
    uint64_t model[] = {py("Module.cuda.<locals>.<lambda>", SITE "nn/modules/module.py", 1100),
                        py("Module._apply", SITE "nn/modules/module.py", 930),
                        py("Module._apply", SITE "nn/modules/module.py", 930),
                        py("Module.cuda", SITE "nn/modules/module.py", 1110), py("<module>", TRAIN, 20)};
    s->model = stack_of(alloc, 4, model, 5);
    uint64_t batch[] = {py("train_step", TRAIN, 30), run, module};
    s->batch = stack_of(alloc, 4, batch, 3);
    uint64_t impl = py("Module._call_impl", SITE "nn/modules/module.py", 1750);
    uint64_t seq = py("Sequential.forward", SITE "nn/modules/container.py", 250);
    uint64_t fwd = py("train_step", TRAIN, 32);
    uint64_t up[] = {py("Block.forward", TRAIN, 12), impl, seq, impl, fwd, run, module};
    s->up = stack_of(alloc, 4, up, 7);
    up[0] = py("Block.forward", TRAIN, 13);
    s->gelu = stack_of(alloc, 4, up, 7);
    up[0] = py("Block.forward", TRAIN, 14);
    s->res = stack_of(alloc, 4, up, 7);
    uint64_t loss[] = {py("train_step", TRAIN, 33), run, module};
    s->pow = stack_of(alloc, 3, loss, 3);
    s->loss = stack_of(alloc, 4, loss, 3);
    uint64_t ones[] = {py("_make_grads", SITE "autograd/__init__.py", 90),
                       py("backward", SITE "autograd/__init__.py", 354), py("Tensor.backward", SITE "_tensor.py", 648),
                       py("train_step", TRAIN, 35), run, module};
    s->ones = stack_of(alloc, 4, ones, 6);
    uint64_t wrapper = py("Optimizer.profile_hook_step.<locals>.wrapper", SITE "optim/optimizer.py", 485);
    uint64_t state[] = {py("AdamW._init_group", SITE "optim/adamw.py", 130), py("AdamW.step", SITE "optim/adamw.py", 209),
                        wrapper, py("train_step", TRAIN, 37), run, module};
    s->state = stack_of(alloc, 4, state, 6);
    uint64_t tmp[] = {py("_multi_tensor_adamw", SITE "optim/adamw.py", 600), py("adamw", SITE "optim/adamw.py", 400),
                      py("AdamW.step", SITE "optim/adamw.py", 220), wrapper, py("train_step", TRAIN, 37), run, module};
    s->opt_tmp = stack_of(alloc, 4, tmp, 7);
    /* autograd's device thread: no Python frames, no names */
    uint64_t grad[] = {C10 + 0x2f4cb, C10 + 0x42728, TORCH_CPU + 0x4fc547f, TORCH_CPU + 0x5e4d689,
                       TORCH_CPU + 0x5e52eeb};
    s->bw_grad = stack_of(grad, 5, NULL, 0);
    grad[2] = TORCH_CPU + 0x4fc5201;
    s->bw_tmp = stack_of(grad, 5, NULL, 0);
    uint64_t blas[] = {CUBLAS + 0x5b45ee, CUBLAS + 0x585c43, CUBLAS + 0x169f9d, TORCH_CUDA + 0x3a4bd29};
    uint64_t upf[] = {py("Block.forward", TRAIN, 12), impl, seq, impl, fwd, run, module};
    s->cublas = stack_of(blas, 4, upf, 7);
    uint64_t ws[] = {C10 + 0x2f4cb, cmt_tb_frame(b, "at::cuda::getCurrentCUDABlasHandle()", "", 0),
                     TORCH_CUDA + 0x3a4b238};
    s->workspace = stack_of(ws, 3, upf, 7);
}

/* ---- a small caching allocator: a segment per size, reused ------------------------------------- */

struct seg {
    uint64_t addr, size;
    bool busy;
};
static struct seg segs[8192];
static size_t n_segs;
static uint64_t next_addr = 0x7e0000000000ull;
static uint64_t next_handle = 0x10000ull;
static bool probed;

static void new_segment(uint32_t tid, uint64_t size, uint32_t stack)
{
    uint64_t addr = next_addr;
    next_addr += size;
    if (expandable) {
        if (!probed) {
            /* PyTorch's first cuMemCreate asks for a shareable handle type
             * the driver refuses, then asks again without it */
            record(tid, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 0, size, stack, 800, 0, 0, 0);
            probed = true;
        }
        uint64_t h = next_handle++;
        record(tid, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, h, size, stack, 0, 0, 0, 0);
        record(tid, CMT_REC_ALLOC, CMT_API_CU_MEM_MAP, addr, size, stack, 0, h, 0, 0);
        record(tid, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_MAP, addr, size, 0, 0, 0, 0, 0);
    } else {
        record(tid, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, addr, size, stack, 0, 0, 0, 0);
        record(tid, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, addr, size, 0, 0, 0, 0, 0);
    }
    segs[n_segs++] = (struct seg){addr, size, false};
}

static uint64_t talloc(uint32_t tid, uint64_t size, uint32_t stack)
{
    size_t i = 0;
    while (i < n_segs && (segs[i].busy || segs[i].size != size))
        i++;
    if (i == n_segs) {
        if (n_segs == sizeof segs / sizeof segs[0])
            fail("too many segments");
        new_segment(tid, size, stack);
    }
    segs[i].busy = true;
    record(tid, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, segs[i].addr, size, stack, 0, 0, 0, 0);
    return segs[i].addr;
}

static void tfree(uint32_t tid, uint64_t addr)
{
    size_t i = 0;
    while (i < n_segs && segs[i].addr != addr)
        i++;
    if (i == n_segs || !segs[i].busy)
        fail("free of no tensor");
    segs[i].busy = false;
    record(tid, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, addr, segs[i].size, 0, 0, 0, 0, 0);
    record(tid, CMT_REC_BLOCK, CMT_API_TORCH_FREE_COMPLETED, addr, segs[i].size, 0, 0, 0, 0, 0);
}

/* ---- the training script ----------------------------------------------------------------------- */

#define BLOCKS 2
#define W_BYTES (128 * MiB)  /* each weight */
#define X_BYTES (64 * MiB)   /* batch x width floats */
#define H_BYTES (128 * MiB)  /* batch x 2 width */

struct opts {
    unsigned steps;
    bool leak, nvtx, inference, workspace;
};

static void train(const struct stacks *s, const struct opts *o)
{
    uint64_t weights[2 * BLOCKS], state[4 * BLOCKS], grads[2 * BLOCKS];
    for (unsigned i = 0; i < 2 * BLOCKS; i++)
        weights[i] = talloc(MAIN, W_BYTES, s->model);
    bool have_state = false, have_cublas = false;
    for (unsigned step = 0; step < o->steps; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %u", step);
        if (o->nvtx) {
            mark(CMT_API_MARK_PUSH, name);
            mark(CMT_API_MARK_PUSH, "forward");
        }
        uint64_t x = talloc(MAIN, X_BYTES, s->batch);
        uint64_t in = x, h[BLOCKS], g[BLOCKS], out[BLOCKS];
        for (unsigned k = 0; k < BLOCKS; k++) {
            h[k] = talloc(MAIN, H_BYTES, s->up);
            if (!have_cublas) {
                record(MAIN, CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 0x7d0000000000ull, 64 * MiB, s->cublas, 0, 0, 0, 0);
                if (o->workspace)
                    talloc(MAIN, 32 * MiB, s->workspace);
                have_cublas = true;
            }
            g[k] = talloc(MAIN, H_BYTES, s->gelu);
            uint64_t d = talloc(MAIN, X_BYTES, s->res);
            out[k] = talloc(MAIN, X_BYTES, s->res);
            tfree(MAIN, d);
            in = out[k];
        }
        (void)in;
        uint64_t pw = talloc(MAIN, X_BYTES, s->pow);
        uint64_t loss = talloc(MAIN, 2 * MiB, s->loss);
        tfree(MAIN, pw);
        if (o->nvtx)
            mark(CMT_API_MARK_POP, NULL);
        if (o->inference) {
            for (unsigned k = BLOCKS; k-- > 0;) {
                tfree(MAIN, h[k]);
                tfree(MAIN, g[k]);
                if (!(o->leak && k == BLOCKS - 1))
                    tfree(MAIN, out[k]);
            }
            tfree(MAIN, x);
            tfree(MAIN, loss);
            if (o->nvtx)
                mark(CMT_API_MARK_POP, NULL);
            continue;
        }
        if (o->nvtx)
            mark(CMT_API_MARK_PUSH, "backward");
        uint64_t ones = talloc(MAIN, 2 * MiB, s->ones);
        for (unsigned k = BLOCKS; k-- > 0;) {
            grads[2 * k + 1] = talloc(AUTOGRAD, W_BYTES, s->bw_grad);
            tfree(AUTOGRAD, talloc(AUTOGRAD, H_BYTES, s->bw_tmp));
            grads[2 * k] = talloc(AUTOGRAD, W_BYTES, s->bw_grad);
            tfree(AUTOGRAD, talloc(AUTOGRAD, X_BYTES, s->bw_tmp));
            tfree(AUTOGRAD, h[k]);
            tfree(AUTOGRAD, g[k]);
            if (!(o->leak && k == BLOCKS - 1))
                tfree(AUTOGRAD, out[k]);
        }
        tfree(AUTOGRAD, x);
        tfree(MAIN, ones);
        if (o->nvtx) {
            mark(CMT_API_MARK_POP, NULL);
            mark(CMT_API_MARK_PUSH, "optimizer");
        }
        if (!have_state) {
            for (unsigned i = 0; i < 4 * BLOCKS; i++)
                state[i] = talloc(MAIN, W_BYTES, s->state);
            have_state = true;
        }
        uint64_t tmp[2 * BLOCKS];
        for (unsigned i = 0; i < 2 * BLOCKS; i++)
            tmp[i] = talloc(MAIN, W_BYTES, s->opt_tmp);
        for (unsigned i = 0; i < 2 * BLOCKS; i++)
            tfree(MAIN, tmp[i]);
        for (unsigned i = 0; i < 2 * BLOCKS; i++)
            tfree(MAIN, grads[i]); /* zero_grad(set_to_none=True) */
        if (o->nvtx)
            mark(CMT_API_MARK_POP, NULL);
        tfree(MAIN, loss);
        if (o->nvtx)
            mark(CMT_API_MARK_POP, NULL);
    }
    (void)state;
    (void)weights;
}

/* ---- out of memory ----------------------------------------------------------------------------- */

static void sample(uint8_t api, uint64_t free_bytes, uint64_t size)
{
    record(MAIN, CMT_REC_SAMPLE, api, 0, size, 0, 0, free_bytes, DEVICE_BYTES, 0);
}

/* cudaMalloc fails, PyTorch releases what it can of its cache (nothing
 * here), asks again, fails again, then reports its OOM. */
static void oom(uint64_t size, uint32_t stack, uint64_t device_free)
{
    for (unsigned k = 0; k < 2; k++) {
        record(MAIN, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, size, stack, 2, 0, 0, 0);
        sample(CMT_API_SAMPLE_FAILURE, device_free, size);
    }
    record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_OOM, 0, size, stack, 0, 0, 0, device_free);
}

static void frag_oom(const struct stacks *s)
{
    const uint64_t piece = 424 * MiB, n = 190, used = 1 * GiB;
    sample(CMT_API_SAMPLE_START, DEVICE_BYTES - used, 0);
    uint64_t seg = next_addr;
    record(MAIN, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, seg, n * piece, s->batch, 0, 0, 0, 0);
    record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, seg, n * piece, 0, 0, 0, 0, 0);
    record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, seg, n * piece, s->batch, 0, 0, 0, 0);
    record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, seg, n * piece, 0, 0, 0, 0, 0);
    record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_FREE_COMPLETED, seg, n * piece, 0, 0, 0, 0, 0);
    for (uint64_t i = 0; i < n; i++)
        record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, seg + i * piece, piece, s->up, 0, 0, 0, 0);
    for (uint64_t i = 0; i < n; i += 2) {
        record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, seg + i * piece, piece, 0, 0, 0, 0, 0);
        record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_FREE_COMPLETED, seg + i * piece, piece, 0, 0, 0, 0, 0);
    }
    oom(1 * GiB, s->gelu, DEVICE_BYTES - used - n * piece);
    for (uint64_t i = 1; i < n; i += 2) {
        record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, seg + i * piece, piece, 0, 0, 0, 0, 0);
        record(MAIN, CMT_REC_BLOCK, CMT_API_TORCH_FREE_COMPLETED, seg + i * piece, piece, 0, 0, 0, 0, 0);
    }
}

static void capacity_oom(const struct stacks *s)
{
    const uint64_t used = 1 * GiB;
    sample(CMT_API_SAMPLE_START, DEVICE_BYTES - used, 0);
    unsigned n = 0;
    uint64_t addrs[64];
    while ((n + 1) * 2 * GiB <= DEVICE_BYTES - used)
        addrs[n++] = talloc(MAIN, 2 * GiB, s->up);
    oom(2 * GiB, s->up, DEVICE_BYTES - used - n * 2 * GiB);
    for (unsigned i = 0; i < n; i++)
        tfree(MAIN, addrs[i]);
}

int main(int argc, char **argv)
{
    struct opts o = {.steps = 12};
    bool frag = false, capacity = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--leak"))
            o.leak = true;
        else if (!strcmp(argv[i], "--nvtx"))
            o.nvtx = true;
        else if (!strcmp(argv[i], "--inference"))
            o.inference = true;
        else if (!strcmp(argv[i], "--workspace"))
            o.workspace = true;
        else if (!strcmp(argv[i], "--expandable"))
            expandable = true;
        else if (!strcmp(argv[i], "--frag-oom"))
            frag = true;
        else if (!strcmp(argv[i], "--capacity-oom"))
            capacity = true;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            o.steps = (unsigned)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "gen_tensor_trace: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (argc < 2) {
        fprintf(stderr, "usage: gen_tensor_trace OUT.bin [--steps N] [--leak] [--nvtx] [--expandable] [--inference] "
                        "[--workspace] [--frag-oom | --capacity-oom]\n");
        return 2;
    }
    struct cmt_trace_builder_options opt = {
        .pid = 4300, .start_monotonic_ns = START, .start_realtime_ns = REALTIME, .clean_exit = true};
    b = cmt_tb_create(argv[1], &opt);
    if (!b)
        fail(argv[1]);
    const char *args[] = {"python3", "train.py"};
    cmt_tb_process(b, 4300, 1, "/usr/bin/python3.12", 2, args, "gpuhost", -1, "/home/u/proj");
    cmt_tb_device(b, 0, "Test GPU", DEVICE_BYTES);
    cmt_tb_thread(b, MAIN, "python3");
    cmt_tb_thread(b, AUTOGRAD, "pt_autograd_0");
    modules();
    struct stacks s;
    make_stacks(&s);
    cmt_tb_allocator(b, START + now, CMT_FRAMEWORK_PYTORCH, "2.11.0+cu130", CMT_BLOCKS_ON, "native", NULL,
                     expandable ? "expandable_segments:True" : NULL);
    if (frag)
        frag_oom(&s);
    else if (capacity)
        capacity_oom(&s);
    else
        train(&s, &o);
    cmt_tb_end(b, tick(), CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
    return 0;
}
