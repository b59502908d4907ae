/* SPDX-License-Identifier: MIT
 * Frame folding: default rules, custom --fold patterns, invalid patterns,
 * and a real frame of this program (a user frame) resolved by the
 * symbolizer. */
#include "frame_fold.h"
#include "symbolizer.h"
#include "symtest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAXMOD 512
static struct symt_module mods[MAXMOD];

static struct cmt_frame frame(const char *function, const char *file, const char *module)
{
    struct cmt_frame f = { 0 };
    f.ip = 0x1234;
    f.function = function;
    f.file = file;
    f.line = file ? 10 : 0;
    f.module = module;
    return f;
}

#define EXPECT_FOLD(rules, want, function, file, module)                                    \
    do {                                                                                \
        struct cmt_frame f_ = frame(function, file, module);                            \
        bool got_ = cmt_fold_rules_match(rules, &f_);                                   \
        if (got_ != (want))                                                             \
            symt_fail(__FILE__, __LINE__, "fold(%s, %s, %s) == %d, want %d",            \
                      function ? function : "NULL", file ? file : "NULL",               \
                      module ? module : "NULL", got_, (want));                          \
    } while (0)

static __attribute__((noinline)) void *user_site(int *line)
{
    void *r = symt_ra(); *line = __LINE__;
    return r;
}

static void test_defaults(void)
{
    struct cmt_fold_rules *r = cmt_fold_rules_new();
    CHECK(r != NULL);
    /* the shim, the runtime, the driver: by module basename */
    EXPECT_FOLD(r, true, "cmt_cudaMalloc_hook", NULL, "/opt/cumemtrace/lib/libcumemtrace.so");
    EXPECT_FOLD(r, true, NULL, NULL, "/usr/lib/libcumemtrace.so.0.1.0");
    EXPECT_FOLD(r, true, NULL, NULL, "/usr/local/cuda/lib64/libcudart.so.12");
    EXPECT_FOLD(r, true, "sim_malloc", "/src/sim/rt.c", "/build/tests/sim/libcudart.so.13");
    EXPECT_FOLD(r, true, NULL, NULL, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    EXPECT_FOLD(r, true, "cuMemAlloc_v2", NULL, "/build/tests/sim/libcuda.so.1");
    EXPECT_FOLD(r, true, NULL, NULL, "libcuda.so");
    /* the C library's entry frames, with and without symbols */
    EXPECT_FOLD(r, true, NULL, NULL, "/lib/x86_64-linux-gnu/libc.so.6");
    EXPECT_FOLD(r, true, "__libc_start_call_main", NULL, "/home/u/static_app");
    EXPECT_FOLD(r, true, "_start", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "start_thread", NULL, "/home/u/static_app");
    EXPECT_FOLD(r, false, "start_thread_pool", NULL, "/home/u/app");
    EXPECT_FOLD(r, false, "main", NULL, "/usr/lib/libcrypto.so.3");
    /* the static runtime inside the user's executable: by function name */
    EXPECT_FOLD(r, true, "cudaMalloc", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "cudaMallocAsync", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "cudaMalloc<float>(float**, unsigned long)",
                "/usr/local/cuda/include/cuda_runtime.h", "/home/u/app");
    EXPECT_FOLD(r, true, "__cudart1034", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "__cudaRegisterFatBinary", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "cudart::contextStateManager::getRuntimeContextState()", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "_ZN6cudart19contextStateManager22getRuntimeContextStateEv", NULL, "/home/u/app");
    /* user frames */
    EXPECT_FOLD(r, false, "main", "/home/u/src/app.c", "/home/u/app");
    EXPECT_FOLD(r, false, "train_step(Model&)", "/home/u/src/cuda/train.cu", "/home/u/app");
    EXPECT_FOLD(r, false, "my_cudaMalloc", "/home/u/src/alloc.c", "/home/u/app");
    EXPECT_FOLD(r, false, "cudaish", "/home/u/src/alloc.c", "/home/u/app"); /* cuda[A-Z]* needs a capital */
    EXPECT_FOLD(r, false, "allocate", "/home/u/src/alloc.c", "/home/u/libcuda_helpers.so");
    EXPECT_FOLD(r, false, "cublasCreate_v2", NULL, "/usr/local/cuda/lib64/libcublas.so.12");
    EXPECT_FOLD(r, false, NULL, NULL, "/home/u/app");
    EXPECT_FOLD(r, false, NULL, NULL, NULL); /* outside every module */
    EXPECT_FOLD(r, false, NULL, NULL, "");
    /* module rules are about module names only, function rules about
     * function names only */
    EXPECT_FOLD(r, false, "libcuda.so.1", NULL, "/home/u/app");
    EXPECT_FOLD(r, false, NULL, NULL, "/home/u/cudaMalloc");
    EXPECT_FOLD(r, false, NULL, "/home/u/cudaMalloc", "/home/u/app");
    cmt_fold_rules_free(r);
}

static void test_custom(void)
{
    struct cmt_fold_rules *r = cmt_fold_rules_new();
    CHECK_INT(cmt_fold_rules_add(r, "my_alloc_wrapper"), 0);
    CHECK_INT(cmt_fold_rules_add(r, "Pool::*"), 0);
    CHECK_INT(cmt_fold_rules_add(r, "*/thrust/*"), 0);
    CHECK_INT(cmt_fold_rules_add(r, "arena.c"), 0);
    CHECK_INT(cmt_fold_rules_add(r, "libtorch_cuda*.so"), 0);
    CHECK_INT(cmt_fold_rules_add(r, "[]x]y"), 0); /* ']' first in a bracket is a member */
    EXPECT_FOLD(r, true, "my_alloc_wrapper", "/home/u/src/alloc.c", "/home/u/app");
    EXPECT_FOLD(r, false, "my_alloc_wrapper2", "/home/u/src/alloc.c", "/home/u/app");
    EXPECT_FOLD(r, false, "call_my_alloc_wrapper", "/home/u/src/alloc.c", "/home/u/app");
    EXPECT_FOLD(r, true, "Pool::allocate(unsigned long)", "/home/u/src/pool.cc", "/home/u/app");
    EXPECT_FOLD(r, true, "thrust::detail::vector_base<int>::allocate(unsigned long)",
                "/usr/local/cuda/include/thrust/detail/vector_base.inl", "/home/u/app");
    EXPECT_FOLD(r, true, "grow", "/home/u/src/arena.c", "/home/u/app");      /* file basename */
    EXPECT_FOLD(r, false, "grow", "/home/u/src/arena.cc", "/home/u/app");
    EXPECT_FOLD(r, true, NULL, NULL, "/opt/torch/lib/libtorch_cuda.so");      /* module basename */
    EXPECT_FOLD(r, false, NULL, NULL, "/opt/torch/lib/libtorch_cpu.so");
    EXPECT_FOLD(r, true, "xy", NULL, "/home/u/app");
    EXPECT_FOLD(r, true, "]y", NULL, "/home/u/app");
    /* defaults still there */
    EXPECT_FOLD(r, true, NULL, NULL, "/usr/lib/libcumemtrace.so");
    EXPECT_FOLD(r, false, "main", "/home/u/src/app.c", "/home/u/app");

    CHECK_INT(cmt_fold_rules_add(r, NULL), -EINVAL);
    CHECK_INT(cmt_fold_rules_add(r, ""), -EINVAL);
    CHECK_INT(cmt_fold_rules_add(r, "[abc"), -EINVAL);
    CHECK_INT(cmt_fold_rules_add(r, "abc\\"), -EINVAL);
    CHECK_INT(cmt_fold_rules_add(NULL, "x"), -EINVAL);
    CHECK(!cmt_fold_rules_match(NULL, NULL));
    CHECK(!cmt_fold_rules_match(r, NULL));
    cmt_fold_rules_free(r);
    cmt_fold_rules_free(NULL);
}

#define EXPECT_CATEGORY(rules, want, function, file, module)                                \
    do {                                                                                \
        struct cmt_frame f_ = frame(function, file, module);                            \
        enum cmt_frame_category got_ = cmt_fold_rules_classify(rules, &f_);              \
        if (got_ != (want))                                                             \
            symt_fail(__FILE__, __LINE__, "category(%s, %s, %s) == %d, want %d",        \
                      function ? function : "NULL", file ? file : "NULL",               \
                      module ? module : "NULL", (int)got_, (int)(want));                \
    } while (0)

#define TORCH "/usr/lib/python3/dist-packages/torch/lib/"

/* The categories of PyTorch's, CPython's and Python's frames as the H200's
 * stacks name them (issue 14). */
static void test_categories(void)
{
    struct cmt_fold_rules *r = cmt_fold_rules_new();
    /* the interpreter */
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "_PyEval_EvalFrameDefault", NULL, "/usr/bin/python3.12");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, NULL, NULL, "/usr/bin/python3.12");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, NULL, NULL, "/opt/conda/lib/libpython3.11.so.1.0");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "_PyObject_MakeTpCall", NULL, "/home/u/app");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "PyObject_Vectorcall", NULL, "/home/u/app");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "method_vectorcall_VARARGS_KEYWORDS", NULL, "/home/u/app");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "_call_with_frames_removed", "<frozen importlib._bootstrap>", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "ffi_call_unix64", NULL, "/usr/lib/x86_64-linux-gnu/libffi.so.8");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, NULL, NULL, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    /* PyTorch's allocator, dispatcher, autograd and binding plumbing */
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD,
                    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(AllocParams&, "
                    "bool, std::shared_ptr<c10::GatheredContext> const&, std::unique_lock<std::recursive_mutex>&)",
                    NULL, TORCH "libc10_cuda.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "c10::impl::BoxedKernelWrapper<at::Tensor (at::Tensor const&)>::call()",
                    NULL, TORCH "libtorch_cpu.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "at::detail::empty_cuda(c10::ArrayRef<long>)", NULL,
                    TORCH "libtorch_cuda.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "at::native::empty_cuda(c10::ArrayRef<long>)", NULL,
                    TORCH "libtorch_cuda.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "at::(anonymous namespace)::wrapper_CUDA_addmm(at::Tensor const&)", NULL,
                    TORCH "libtorch_cuda.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "torch::autograd::VariableType::(anonymous namespace)::addmm()", NULL,
                    TORCH "libtorch_cpu.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "torch::autograd::Engine::evaluate_function()", NULL,
                    TORCH "libtorch_cpu.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "torch::autograd::THPVariable_addmm(_object*, _object*, _object*)", NULL,
                    TORCH "libtorch_python.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "pybind11::cpp_function::dispatcher(_object*)", NULL,
                    TORCH "libtorch_python.so");
    /* the frames that name the operation */
    EXPECT_CATEGORY(r, CMT_FRAME_OPERATION, "at::_ops::addmm::call(at::Tensor const&)", NULL,
                    TORCH "libtorch_cpu.so");
    EXPECT_CATEGORY(r, CMT_FRAME_OPERATION, "at::native::addmm_out_cuda(at::Tensor const&)", NULL,
                    TORCH "libtorch_cuda.so");
    EXPECT_CATEGORY(r, CMT_FRAME_OPERATION, "torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)",
                    NULL, TORCH "libtorch_cpu.so");
    /* the rest of the frameworks, and the interpreter's library */
    EXPECT_CATEGORY(r, CMT_FRAME_FRAMEWORK, "at::TensorIteratorBase::build(at::TensorIteratorConfig&)", NULL,
                    TORCH "libtorch_cpu.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FRAMEWORK, NULL, NULL, TORCH "libtorch_cuda.so");
    EXPECT_CATEGORY(r, CMT_FRAME_FRAMEWORK, "_call_impl",
                    "/home/u/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_FRAMEWORK, "forward", "/home/u/src/pytorch/torch/nn/modules/linear.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_FRAMEWORK, "_run_code", "/usr/lib/python3.12/runpy.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_FRAMEWORK, NULL, NULL,
                    "/home/u/venv/lib/python3.12/site-packages/cupy/_core/core.cpython-312-x86_64-linux-gnu.so");
    /* the user's */
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "forward", "/home/u/proj/model.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "train_step", "/home/u/proj/train.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "main", "/home/u/src/app.c", "/home/u/app");
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "cublasCreate_v2", NULL, "/usr/local/cuda/lib64/libcublas.so.13");
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "Python_helper", "/home/u/src/py.c", "/home/u/app");
    /* --fold before the table, --unfold before everything */
    CHECK_INT(cmt_fold_rules_add(r, "train_step"), 0);
    EXPECT_CATEGORY(r, CMT_FRAME_FOLD, "train_step", "/home/u/proj/train.py", NULL);
    CHECK_INT(cmt_fold_rules_keep(r, "*/torch/nn/*"), 0);
    CHECK_INT(cmt_fold_rules_keep(r, "train_*"), 0);
    CHECK_INT(cmt_fold_rules_keep(r, "libc10_cuda.so"), 0);
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "_call_impl",
                    "/home/u/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "train_step", "/home/u/proj/train.py", NULL);
    EXPECT_CATEGORY(r, CMT_FRAME_USER, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc()",
                    NULL, TORCH "libc10_cuda.so");
    CHECK_INT(cmt_fold_rules_keep(r, "[x"), -EINVAL);
    cmt_fold_rules_free(r);
}

#define EXPECT_OP(function, rank, name)                                                     \
    do {                                                                                \
        char buf_[64];                                                                  \
        CHECK_INT(cmt_frame_operation(function, buf_, sizeof buf_), rank);              \
        CHECK_STR(buf_, name);                                                          \
    } while (0)

static void test_operations(void)
{
    EXPECT_OP("torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)", 4, "AddmmBackward0");
    EXPECT_OP("at::_ops::addmm::call(at::Tensor const&, at::Tensor const&)", 3, "aten::addmm");
    EXPECT_OP("at::_ops::addmm::redispatch(c10::DispatchKeySet, at::Tensor const&)", 3, "aten::addmm");
    EXPECT_OP("at::native::addmm(at::Tensor const&)", 2, "aten::addmm");
    EXPECT_OP("at::cuda::addmm(at::Tensor const&)", 2, "aten::addmm");
    EXPECT_OP("at::native::(anonymous namespace)::addmm_out_cuda_impl(at::Tensor&)", 2, "aten::addmm_out_cuda_impl");
    EXPECT_OP("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)", 1, "aten::empty_memory_format");
    EXPECT_OP("at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)", 1, "aten::empty_strided");
    EXPECT_OP("at::native::new_empty_strided_symint(at::Tensor const&)", 1, "aten::new_empty_strided_symint");
    /* not operations */
    EXPECT_OP("at::cuda::getCurrentCUDABlasHandle()", 0, "");
    EXPECT_OP("at::native::structured_addmm_out_cuda::impl(at::Tensor const&)", 0, "");
    EXPECT_OP("torch::autograd::generated::details::fn()", 0, "");
    EXPECT_OP("at::Tensor::addmm(at::Tensor const&) const", 0, "");
    EXPECT_OP(NULL, 0, "");
}

/* A frame of this program as the symbolizer gives it: a user frame, until
 * a --fold pattern names it. */
static void test_resolved(void)
{
    size_t n = symt_collect_modules(mods, MAXMOD);
    struct cmt_symbolizer *s = cmt_symbolizer_new(NULL);
    symt_add_all(s, mods, n);
    int line;
    void *ip = user_site(&line);
    struct cmt_frame f[4];
    CHECK_INT(cmt_symbolizer_resolve(s, (uint64_t)(uintptr_t)ip, 0, f, 4), 1);
    CHECK_STR(f[0].function, "user_site");
    CHECK_INT(f[0].line, line);

    struct cmt_fold_rules *r = cmt_fold_rules_new();
    CHECK(!cmt_fold_rules_match(r, &f[0]));
    CHECK_INT(cmt_fold_rules_add(r, "user_*"), 0);
    CHECK(cmt_fold_rules_match(r, &f[0]));
    cmt_fold_rules_free(r);

    r = cmt_fold_rules_new();
    CHECK_INT(cmt_fold_rules_add(r, "test_fold.c"), 0);
    CHECK(cmt_fold_rules_match(r, &f[0]));
    cmt_fold_rules_free(r);

    r = cmt_fold_rules_new();
    CHECK_INT(cmt_fold_rules_add(r, "test_fold"), 0); /* the executable's basename */
    CHECK(cmt_fold_rules_match(r, &f[0]));
    cmt_fold_rules_free(r);
    cmt_symbolizer_free(s);
}

int main(void)
{
    test_defaults();
    test_custom();
    test_categories();
    test_operations();
    test_resolved();
    if (symt_failures) {
        fprintf(stderr, "%d check(s) failed\n", symt_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
