/* SPDX-License-Identifier: MIT */
/* The rule table of tensor origins (tensor_origin.h): every rule on a
 * stack made for it, the order where two could match, and the answers
 * without symbols (module names, Python frames, the thread's name). Stacks
 * are built in a trace model directly: synthetic frames name Python
 * functions (language 1) or native ones (language 0, as a symbolizer
 * would), a module record holds an address that has no file here. */
#include <string.h>

#include "frames.h"
#include "tensor_origin.h"
#include "test_util.h"
#include "trace_model.h"

static struct cmt_trace_model model;
static uint32_t next_string = 1, next_frame = 1, next_stack = 1;

static uint32_t string(const char *s)
{
    cmt_model_on_string(&model, next_string, s, strlen(s));
    return next_string++;
}

static uint64_t frame(const char *function, const char *file, uint32_t line, uint32_t language)
{
    struct cmt_frame_in f = {next_frame, string(function), file ? string(file) : 0, line, language};
    cmt_model_on_frame(&model, &f);
    return CMT_FRAME_SYNTHETIC_BIT | next_frame++;
}

static uint64_t py(const char *function, const char *file)
{
    return frame(function, file, 10, 1);
}

static uint64_t native(const char *function)
{
    return frame(function, NULL, 0, 0);
}

#define NCCL_LO 0x7f0000000000ull

static uint64_t stack(const uint64_t *frames, uint32_t n)
{
    cmt_model_on_stack(&model, next_stack, 1, frames, n);
    return next_stack++;
}

#define STACK(...) stack((const uint64_t[]){__VA_ARGS__}, sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

#define SITE "/venv/lib/python3.12/site-packages/"
#define USER "/home/u/train.py"

static int rule_of(const struct cmt_tensor_origin_rule *rules, size_t n, enum cmt_tensor_origin o, const char *file,
                   const char *function, const char *module, const char *thread)
{
    for (size_t i = 0; i < n; i++)
        if (rules[i].origin == o && !strcmp(rules[i].file, file) && !strcmp(rules[i].function, function) &&
            !strcmp(rules[i].module, module) && !strcmp(rules[i].thread, thread))
            return (int)i;
    fprintf(stderr, "no rule %s %s %s %s\n", file, function, module, thread);
    exit(1);
}

int main(void)
{
    cmt_model_init(&model);
    struct cmt_module_in m = {.id = 1, .path_id = string("/opt/nccl/lib/libnccl.so.2"), .bias = NCCL_LO,
                              .lo = NCCL_LO, .hi = NCCL_LO + 0x100000};
    cmt_model_on_module(&model, &m);
    uint64_t user = py("train_step", USER), module = py("<module>", USER);

    uint64_t s_program = STACK(py("Block.forward", USER), py("Module._call_impl", SITE "torch/nn/modules/module.py"),
                               user, module);
    uint64_t s_layer_forward = STACK(py("Linear.forward", SITE "torch/nn/modules/linear.py"), user, module);
    uint64_t s_apply = STACK(py("Module.cuda.<locals>.<lambda>", SITE "torch/nn/modules/module.py"),
                             py("Module._apply", SITE "torch/nn/modules/module.py"), module);
    uint64_t s_linear_init = STACK(py("Linear.__init__", SITE "torch/nn/modules/linear.py"), module);
    uint64_t s_hf = STACK(py("GPT2Model.__init__", SITE "transformers/models/gpt2/modeling_gpt2.py"), module);
    uint64_t s_hf_load = STACK(py("PreTrainedModel.from_pretrained", SITE "transformers/modeling_utils.py"), module);
    uint64_t s_hf_mask = STACK(py("ModuleUtilsMixin.get_extended_attention_mask", SITE "transformers/modeling_utils.py"),
                               user, module);
    uint64_t s_state = STACK(py("AdamW._init_group", SITE "torch/optim/adamw.py"),
                             py("AdamW.step", SITE "torch/optim/adamw.py"), user, module);
    uint64_t s_ones = STACK(py("_make_grads", SITE "torch/autograd/__init__.py"),
                            py("backward", SITE "torch/autograd/__init__.py"),
                            py("Tensor.backward", SITE "torch/_tensor.py"), user, module);
    uint64_t s_native_backward = STACK(native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"),
                                       native("torch::autograd::Engine::evaluate_function(...)"));
    uint64_t s_unnamed = STACK(0x7e0000001234ull, 0x7e0000005678ull);
    uint64_t s_recompute = STACK(py("Block.forward", USER), py("recompute_fn", SITE "torch/utils/checkpoint.py"));
    uint64_t s_checkpoint_forward = STACK(py("Block.forward", USER), py("checkpoint", SITE "torch/utils/checkpoint.py"),
                                          user, module);
    uint64_t s_cublas = STACK(native("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate"),
                              native("at::cuda::getCurrentCUDABlasHandle()"), py("Block.forward", USER), user);
    uint64_t s_cublaslt = STACK(native("at::cuda::getCUDABlasLtWorkspace()"), py("Block.forward", USER));
    uint64_t s_cudnn = STACK(native("at::native::(anonymous namespace)::run_conv_plan(cudnnContext*, ...)"),
                             py("Conv.forward", USER));
    uint64_t s_nccl_named = STACK(native("c10d::ProcessGroupNCCL::allreduce(...)"), user);
    uint64_t s_nccl_module = STACK(NCCL_LO + 0x100, user);
    uint64_t s_clip = STACK(py("clip_grad_norm_", SITE "torch/nn/utils/clip_grad.py"), user);
    uint64_t s_scaler = STACK(py("GradScaler._unscale_grads_", SITE "torch/amp/grad_scaler.py"), user);

    struct cmt_frames_options opt = {.no_symbols = true};
    struct cmt_frames *f = cmt_frames_new(&model, &opt);
    CHECK(f != NULL);
    size_t n;
    const struct cmt_tensor_origin_rule *rules = cmt_tensor_origin_rules(&n);
    CHECK(n > 20);

    /* the program's own code, and torch.nn's layers running forward */
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_program, "python3"), CMT_ORIGIN_PROGRAM);
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_program, "python3"), (uint64_t)-1);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_layer_forward, "python3"), CMT_ORIGIN_PROGRAM);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_hf_mask, "python3"), CMT_ORIGIN_PROGRAM);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, 0, NULL), CMT_ORIGIN_PROGRAM);
    /* building, loading and moving a model */
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_apply, "python3"),
                 rule_of(rules, n, CMT_ORIGIN_PARAMETER, "*/torch/nn/modules/module.py", "Module._apply*", "", ""));
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_linear_init, NULL),
                 rule_of(rules, n, CMT_ORIGIN_PARAMETER, "*/torch/nn/modules/*.py", "*.__init__", "", ""));
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_hf, NULL), CMT_ORIGIN_PARAMETER);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_hf_load, NULL), CMT_ORIGIN_PARAMETER);
    /* the optimizer, also when its step runs on another thread */
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_state, "python3"),
                 rule_of(rules, n, CMT_ORIGIN_OPTIMIZER, "*/torch/optim/*.py", "", "", ""));
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_state, "pt_autograd_0"), CMT_ORIGIN_OPTIMIZER);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_clip, "python3"), CMT_ORIGIN_OPTIMIZER);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_scaler, "python3"), CMT_ORIGIN_OPTIMIZER);
    /* backward: the calling thread's Python frames, autograd's threads by
     * name (no frames of their own to read without symbols), the engine's
     * name with symbols */
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_ones, "python3"),
                 rule_of(rules, n, CMT_ORIGIN_BACKWARD, "*/torch/autograd/__init__.py", "", "", ""));
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_unnamed, "pt_autograd_0"),
                 rule_of(rules, n, CMT_ORIGIN_BACKWARD, "", "", "", "pt_autograd_*"));
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_unnamed, "python3"), CMT_ORIGIN_PROGRAM);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_unnamed, NULL), CMT_ORIGIN_PROGRAM);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_native_backward, "python3"), CMT_ORIGIN_BACKWARD);
    /* checkpointing: recomputation on autograd's thread, its first forward not */
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_recompute, "pt_autograd_0"), CMT_ORIGIN_RECOMPUTE);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_checkpoint_forward, "python3"), CMT_ORIGIN_PROGRAM);
    /* workspaces first, whatever the phase that asked for them */
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_cublas, "python3"), CMT_ORIGIN_CUBLAS);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_cublas, "pt_autograd_0"), CMT_ORIGIN_CUBLAS);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_cublaslt, "python3"), CMT_ORIGIN_CUBLAS);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_cudnn, "python3"), CMT_ORIGIN_CUDNN);
    CHECK_EQ_U64(cmt_tensor_origin_of(f, s_nccl_named, "python3"), CMT_ORIGIN_NCCL);
    CHECK_EQ_U64(cmt_tensor_origin_rule(f, s_nccl_module, "python3"),
                 rule_of(rules, n, CMT_ORIGIN_NCCL, "", "", "libnccl*", ""));
    /* names */
    CHECK_STR(cmt_tensor_origin_name(CMT_ORIGIN_OPTIMIZER), "optimizer");
    CHECK_STR(cmt_tensor_origin_words(CMT_ORIGIN_PARAMETER), "a model's building");
    /* every rule says why it is there, and names something to match */
    for (size_t i = 0; i < n; i++) {
        CHECK(rules[i].why && *rules[i].why);
        CHECK(*rules[i].file || *rules[i].function || *rules[i].module || *rules[i].thread);
    }
    cmt_frames_free(f);
    cmt_model_free(&model);
    printf("tensor_origin: ok\n");
    return 0;
}
