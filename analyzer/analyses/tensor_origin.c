/* SPDX-License-Identifier: MIT */
/* The rule table of tensor origins (tensor_origin.h). */
#include "tensor_origin.h"

#include <fnmatch.h>
#include <string.h>

#define P CMT_ORIGIN_PARAMETER
#define B CMT_ORIGIN_BACKWARD
#define R CMT_ORIGIN_RECOMPUTE
#define O CMT_ORIGIN_OPTIMIZER

/* First match wins. Python frames are read from the trace (FRAME records):
 * files as the interpreter named them, functions by their qualified name
 * (co_qualname: "Module._apply", "AdamW.step"). The names are PyTorch
 * 2.x's and transformers 4.x's, read in their sources; the rules marked
 * H200 were seen in the tensor traces of samples/gpu/torch_workloads.py.
 * Workspaces come first: PyTorch takes them from its cache under the
 * operation that first needs them, whose Python line would otherwise file
 * them with that operation's tensors. Recomputation comes before the
 * backward rules (it runs on autograd's thread but makes activations), the
 * optimizer before backward (a step run from a gradient hook is still the
 * optimizer's), parameters last: torch.nn's layers also run in the forward
 * pass, where only their __init__ and the moves of a whole model make
 * parameters. */
static const struct cmt_tensor_origin_rule rules[] = {
    /* -- libraries' workspaces taken from PyTorch's cache (function names: PyTorch's symbols) -- */
    {"", "at::cuda::getCurrentCUDABlasHandle*", "", "", CMT_ORIGIN_CUBLAS,
     "cuBLAS workspace, one per handle and stream (at::cuda::setWorkspaceForHandle)"},
    {"", "at::cuda::getCurrentCUDABlasLtHandle*", "", "", CMT_ORIGIN_CUBLAS, "cuBLASLt handle's workspace"},
    {"", "at::cuda::getCUDABlasLtWorkspace*", "", "", CMT_ORIGIN_CUBLAS, "cuBLASLt workspace, one per handle"},
    {"", "*setWorkspaceForHandle*", "", "", CMT_ORIGIN_CUBLAS, "cuBLAS workspace set on a handle"},
    {"", "at::native::*Workspace::Workspace*", "", "", CMT_ORIGIN_CUDNN,
     "cuDNN v7 convolution workspace (Conv_v7.cpp)"},
    {"", "at::native::*allocate_workspace*", "", "", CMT_ORIGIN_CUDNN, "cuDNN v7 algorithm search workspace"},
    {"", "at::native::*run_conv_plan*", "", "", CMT_ORIGIN_CUDNN, "cuDNN v8 convolution workspace (Conv_v8.cpp)"},
    {"", "at::native::*run_single_conv*", "", "", CMT_ORIGIN_CUDNN, "cuDNN v8 convolution workspace"},
    {"", "c10d::ProcessGroupNCCL*", "", "", CMT_ORIGIN_NCCL, "NCCL's buffers of a process group"},
    {"", "c10d::NCCLComm*", "", "", CMT_ORIGIN_NCCL, "NCCL communicator memory"},
    {"", "", "libnccl*", "", CMT_ORIGIN_NCCL, "allocations NCCL itself asks of the cache"},

    /* -- activation checkpointing: the forward pass again, inside backward -- */
    {"*/torch/utils/checkpoint.py", "", "", "pt_autograd_*", R,
     "torch.utils.checkpoint recomputing a segment's activations on autograd's thread"},

    /* -- the optimizer's step and what belongs to it -- */
    {"*/torch/optim/*.py", "", "", "", O, "torch.optim: AdamW.step, _init_group (its state), the foreach kernels (H200)"},
    {"*/torch/distributed/optim/*.py", "", "", "", O, "ZeroRedundancyOptimizer and the functional optimizers"},
    {"*/torch/amp/grad_scaler.py", "", "", "", O, "GradScaler's unscale and step"},
    {"*/torch/cuda/amp/grad_scaler.py", "", "", "", O, "GradScaler of torch.cuda.amp (older releases)"},
    {"*/torch/nn/utils/clip_grad.py", "", "", "", O, "clip_grad_norm_ (part of the update)"},
    {"*/transformers/optimization.py", "", "", "", O, "transformers' own optimizers (Adafactor)"},
    {"*/bitsandbytes/optim/*.py", "", "", "", O, "bitsandbytes' 8-bit optimizers"},
    {"*/apex/optimizers/*.py", "", "", "", O, "apex's fused optimizers"},

    /* -- the backward pass -- */
    {"", "", "", "pt_autograd_*", B, "autograd's device threads run the backward pass of CUDA tensors (H200)"},
    {"*/torch/autograd/__init__.py", "", "", "", B,
     "torch.autograd.backward on the calling thread (_make_grads: the loss's gradient of ones)"},
    {"*/torch/autograd/graph.py", "", "", "", B, "_engine_run_backward"},
    {"*/torch/_tensor.py", "Tensor.backward", "", "", B, "loss.backward()"},
    {"", "torch::autograd::Engine::*", "", "", B, "autograd's engine (with PyTorch's symbols)"},

    /* -- building, loading and moving a model -- */
    {"*/torch/nn/modules/module.py", "Module._apply*", "", "", P, "model.cuda(), model.to(...) (H200)"},
    {"*/torch/nn/modules/module.py", "Module.to_empty*", "", "", P, "materialising a model built on the meta device"},
    {"*/torch/nn/modules/*.py", "*.__init__", "", "", P, "nn.Linear(..., device=\"cuda\") and other torch.nn layers"},
    {"*/torch/nn/modules/*.py", "*.reset_parameters", "", "", P, "a layer's initial weights"},
    {"*/torch/nn/init.py", "", "", "", P, "torch.nn.init"},
    {"*/torch/nn/parameter.py", "", "", "", P, "nn.Parameter"},
    {"*/transformers/modeling_utils.py", "*from_pretrained*", "", "", P, "a Hugging Face model loaded"},
    {"*/transformers/modeling_utils.py", "*_load_*", "", "", P, "a Hugging Face checkpoint's tensors"},
    {"*/transformers/modeling_utils.py", "*init_weights*", "", "", P, "a Hugging Face model's initial weights"},
    {"*/transformers/modeling_utils.py", "*tie_weights*", "", "", P, "a Hugging Face model's tied weights"},
    {"*/transformers/models/*.py", "*.__init__", "", "", P, "a Hugging Face model built from its config"},
    {"*/accelerate/utils/modeling.py", "set_module_tensor_to_device", "", "", P, "accelerate placing a model"},
};

const struct cmt_tensor_origin_rule *cmt_tensor_origin_rules(size_t *n)
{
    *n = sizeof rules / sizeof rules[0];
    return rules;
}

const char *cmt_tensor_origin_name(enum cmt_tensor_origin o)
{
    static const char *const names[CMT_ORIGIN_COUNT] = {"program",   "parameter", "backward", "recompute",
                                                         "optimizer", "cublas",    "cudnn",    "nccl"};
    return o < CMT_ORIGIN_COUNT ? names[o] : "program";
}

const char *cmt_tensor_origin_words(enum cmt_tensor_origin o)
{
    static const char *const words[CMT_ORIGIN_COUNT] = {
        "the program's code",  "a model's building", "the backward pass", "checkpointing's recomputation",
        "the optimizer's step", "cuBLAS's workspace", "cuDNN's workspace",  "NCCL"};
    return o < CMT_ORIGIN_COUNT ? words[o] : words[0];
}

static bool glob(const char *pattern, const char *s)
{
    return !*pattern || (s && fnmatch(pattern, s, 0) == 0);
}

static bool frame_matches(const struct cmt_tensor_origin_rule *rule, const struct cmt_frame *fr)
{
    if (*rule->file && (!fr->file || fnmatch(rule->file, fr->file, 0) != 0))
        return false;
    if (*rule->function && (!fr->function || fnmatch(rule->function, fr->function, 0) != 0))
        return false;
    if (*rule->module) {
        const char *mod = fr->module && *fr->module ? cmt_basename(fr->module) : NULL;
        if (!mod || fnmatch(rule->module, mod, 0) != 0)
            return false;
    }
    return true;
}

int cmt_tensor_origin_rule(struct cmt_frames *f, uint64_t stack, const char *thread_name)
{
    const struct cmt_stack_frames *sf = stack ? cmt_frames_get_unfolded(f, stack) : NULL;
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        const struct cmt_tensor_origin_rule *rule = &rules[r];
        if (*rule->thread && !(thread_name && *thread_name && glob(rule->thread, thread_name)))
            continue;
        if (!*rule->file && !*rule->function && !*rule->module)
            return (int)r; /* a rule of the thread alone */
        for (size_t i = 0; sf && i < sf->n; i++)
            if (frame_matches(rule, &sf->frames[i]))
                return (int)r;
    }
    return -1;
}

enum cmt_tensor_origin cmt_tensor_origin_of(struct cmt_frames *f, uint64_t stack, const char *thread_name)
{
    int r = cmt_tensor_origin_rule(f, stack, thread_name);
    return r < 0 ? CMT_ORIGIN_PROGRAM : rules[r].origin;
}

/* The first native frame outside PyTorch's allocator: where PyTorch's code
 * asked the cache for the tensor. */
static bool allocator_caller(struct cmt_frames *f, uint64_t stack, uint64_t *ip)
{
    const struct cmt_stack_frames *sf = stack ? cmt_frames_get_unfolded(f, stack) : NULL;
    for (size_t i = 0; sf && i < sf->n; i++) {
        const struct cmt_frame *fr = &sf->frames[i];
        const char *mod = fr->module && *fr->module ? cmt_basename(fr->module) : NULL;
        if (!mod)
            return false; /* a Python frame, or outside every module: no native caller */
        if (fnmatch("libc10_cuda*", mod, 0) == 0 || fnmatch("libcumemtrace*", mod, 0) == 0)
            continue;
        *ip = fr->ip;
        return true;
    }
    return false;
}

bool cmt_tensor_workspace_anchor(struct cmt_frames *f, uint64_t stack, const char *thread_name, uint64_t requested,
                                 uint64_t made, bool live_at_end, struct cmt_workspace_calls *w)
{
    uint64_t ip;
    if (!thread_name || fnmatch("pt_autograd_*", thread_name, 0) != 0 || made != 1 || !live_at_end ||
        (requested != CMT_CUBLAS_WORKSPACE_HOPPER && requested != CMT_CUBLAS_WORKSPACE_OLDER) ||
        !allocator_caller(f, stack, &ip))
        return false;
    for (size_t i = 0; i < w->n; i++)
        if (w->ip[i] == ip)
            return true;
    if (w->n < CMT_WORKSPACE_CALLS_MAX)
        w->ip[w->n++] = ip;
    return true;
}

bool cmt_tensor_workspace_call(struct cmt_frames *f, uint64_t stack, const struct cmt_workspace_calls *w)
{
    uint64_t ip;
    if (!w->n || !allocator_caller(f, stack, &ip))
        return false;
    for (size_t i = 0; i < w->n; i++)
        if (w->ip[i] == ip)
            return true;
    return false;
}
