/* SPDX-License-Identifier: MIT
 *
 * Frame folding rules: see frame_fold.h for what is folded by default.
 */
#include "frame_fold.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

enum fold_field {
    FOLD_FUNCTION = 1u << 0,
    FOLD_FILE = 1u << 1,        /* the full path and its basename */
    FOLD_MODULE = 1u << 2,      /* the module's basename */
    FOLD_MODULE_PATH = 1u << 3, /* the module's full path */
    FOLD_ANY = FOLD_FUNCTION | FOLD_FILE | FOLD_MODULE
};

struct fold_rule {
    char *pattern;
    unsigned fields; /* enum fold_field */
};

struct cmt_fold_rules {
    struct fold_rule *v; /* --fold rules, in the order given */
    size_t n, cap;
    struct fold_rule *keep; /* --keep rules */
    size_t n_keep, cap_keep;
};

#define FOLD CMT_FRAME_FOLD
#define OPERATION CMT_FRAME_OPERATION
#define FRAMEWORK CMT_FRAME_FRAMEWORK

/* The default table, first match wins. docs/report.md lists it with the
 * reasons; the names are those of the stacks seen on the H200 (CPython
 * 3.12, PyTorch 2.11: issue 14). */
static const struct {
    const char *pattern;
    unsigned fields;
    enum cmt_frame_category category;
} default_rules[] = {
    /* -- the profiler, the CUDA runtime and driver, the C library -- */
    { "libcumemtrace.so*", FOLD_MODULE, FOLD },
    { "libcumemtrace_torch.so", FOLD_MODULE, FOLD }, /* the PyTorch bridge's callback (block records) */
    { "libcudart.so*", FOLD_MODULE, FOLD },
    { "libcuda.so*", FOLD_MODULE, FOLD },
    /* No CUDA allocation is made by the C library itself: its frames in a
     * stack are the process/thread entry (often without symbols when libc
     * has no debug info) or a callback trampoline such as pthread_once. */
    { "libc.so*", FOLD_MODULE, FOLD },
    { "cuda[A-Z]*", FOLD_FUNCTION, FOLD },
    { "__cuda*", FOLD_FUNCTION, FOLD },
    { "__cudart*", FOLD_FUNCTION, FOLD },
    { "cudart::*", FOLD_FUNCTION, FOLD },
    { "_ZN6cudart*", FOLD_FUNCTION, FOLD },
    /* CUDA 13's libcudart_static.a names its internal functions
     * libcudart_static_<40 hex digits> (seen on the H200 validation run:
     * samples/gpu/compare_leaks.py). */
    { "libcudart_static_*", FOLD_FUNCTION, FOLD },
    /* The C library's process and thread entry frames end every stack and
     * say nothing about who allocated. */
    { "__libc_start_call_main", FOLD_FUNCTION, FOLD },
    { "__libc_start_main*", FOLD_FUNCTION, FOLD },
    { "_start", FOLD_FUNCTION, FOLD },
    { "start_thread", FOLD_FUNCTION, FOLD },
    { "clone", FOLD_FUNCTION, FOLD },
    { "clone3", FOLD_FUNCTION, FOLD },
    /* std::thread's entry (execute_native_thread_routine) and the other
     * trampolines of the C++ library: the entry of autograd's threads. */
    { "libstdc++.so*", FOLD_MODULE, FOLD },

    /* -- the Python interpreter: its evaluation loop and object protocol,
     * whose frames the Python frames stand for, and ctypes' call path -- */
    { "python", FOLD_MODULE, FOLD },
    { "python3*", FOLD_MODULE, FOLD },
    { "libpython3*", FOLD_MODULE, FOLD },
    { "libffi.so*", FOLD_MODULE, FOLD },
    { "_ctypes.cpython-*", FOLD_MODULE, FOLD },
    { "_Py*", FOLD_FUNCTION, FOLD },
    { "Py[A-Z]*_*", FOLD_FUNCTION, FOLD }, /* PyObject_Call, PyEval_EvalCode, Py_RunMain */
    { "pymain_*", FOLD_FUNCTION, FOLD },
    { "method_vectorcall*", FOLD_FUNCTION, FOLD },
    { "cfunction_*", FOLD_FUNCTION, FOLD },
    { "slot_tp_*", FOLD_FUNCTION, FOLD },
    { "ffi_call*", FOLD_FUNCTION, FOLD },
    { "<frozen *>", FOLD_FILE, FOLD }, /* importlib's frozen modules */

    /* -- PyTorch: operations kept, plumbing folded -- */
    { "at::_ops::*", FOLD_FUNCTION, OPERATION }, /* at::_ops::addmm::call / ::redispatch */
    { "torch::autograd::generated::*::apply*", FOLD_FUNCTION, OPERATION }, /* AddmmBackward0 */
    { "at::detail::empty_*", FOLD_FUNCTION, FOLD },                         /* factory plumbing */
    { "at::native::empty_*", FOLD_FUNCTION, FOLD },
    { "*::wrapper_*", FOLD_FUNCTION, FOLD }, /* the dispatcher's generated kernel wrappers */
    { "at::native::*", FOLD_FUNCTION, OPERATION },
    { "at::cuda::*", FOLD_FUNCTION, OPERATION }, /* at::cuda::addmm; not an op: getCurrentCUDABlasHandle */
    { "at::redispatch::*", FOLD_FUNCTION, FOLD },
    { "at::*", FOLD_FUNCTION, FRAMEWORK },
    { "c10::*", FOLD_FUNCTION, FOLD }, /* the caching allocator, the dispatcher, c10::impl */
    { "torch::autograd::*", FOLD_FUNCTION, FOLD }, /* VariableType, Engine, Node, THPVariable_* */
    { "THPVariable_*", FOLD_FUNCTION, FOLD },
    { "THPFunction_*", FOLD_FUNCTION, FOLD },
    { "pybind11::*", FOLD_FUNCTION, FOLD },
    { "torch::*", FOLD_FUNCTION, FRAMEWORK },
    { "libtorch*.so*", FOLD_MODULE, FRAMEWORK },
    /* The caching allocator and CUDA plumbing: the frames c10::* folds by
     * name, folded by module when the analysing machine lacks PyTorch's
     * symbols, so that the same frame names the site either way (a tensor
     * of autograd's thread: the libtorch_cuda frame that asked the cache). */
    { "libc10_cuda.so*", FOLD_MODULE, FOLD },
    { "libc10*.so*", FOLD_MODULE, FRAMEWORK },
    { "libshm.so*", FOLD_MODULE, FRAMEWORK },

    /* -- the rest of the frameworks and the interpreter's own library --
     * Python files (and native modules) installed as packages, the
     * standard library, and the known frameworks run from a source tree. */
    { "*/site-packages/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/dist-packages/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/lib/python3*/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/torch/*.py", FOLD_FILE, FRAMEWORK },
    { "*/transformers/*.py", FOLD_FILE, FRAMEWORK },
    { "*/accelerate/*.py", FOLD_FILE, FRAMEWORK },
    { "*/cupy/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/cupy_backends/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/jax/*.py", FOLD_FILE, FRAMEWORK },
    { "*/jaxlib/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/numpy/*.py", FOLD_FILE, FRAMEWORK },
    { "*/tensorflow/*", FOLD_FILE | FOLD_MODULE_PATH, FRAMEWORK },
    { "*/triton/*.py", FOLD_FILE, FRAMEWORK },
    { "xla_extension*", FOLD_MODULE, FRAMEWORK },
    { "libtensorflow*", FOLD_MODULE, FRAMEWORK },
};

/* fnmatch has no compile step and takes malformed patterns literally; refuse
 * the two mistakes that would silently never match what was meant. */
static bool pattern_valid(const char *p)
{
    if (!p || !*p)
        return false;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '\\') {
            if (!p[i + 1])
                return false;
            i++;
        } else if (p[i] == '[') {
            size_t j = i + 1;
            if (p[j] == '!' || p[j] == '^')
                j++;
            if (p[j] == ']')
                j++; /* a leading ']' is a member */
            while (p[j] && p[j] != ']')
                j++;
            if (!p[j])
                return false;
            i = j;
        }
    }
    return true;
}

static int add_rule(struct fold_rule **v, size_t *n, size_t *cap, const char *pattern)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct fold_rule *nv = realloc(*v, ncap * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = ncap;
    }
    char *copy = strdup(pattern);
    if (!copy)
        return -ENOMEM;
    (*v)[(*n)++] = (struct fold_rule){ copy, FOLD_ANY };
    return 0;
}

struct cmt_fold_rules *cmt_fold_rules_new(void)
{
    return calloc(1, sizeof(struct cmt_fold_rules));
}

int cmt_fold_rules_add(struct cmt_fold_rules *r, const char *pattern)
{
    if (!r || !pattern_valid(pattern))
        return -EINVAL;
    return add_rule(&r->v, &r->n, &r->cap, pattern);
}

int cmt_fold_rules_keep(struct cmt_fold_rules *r, const char *pattern)
{
    if (!r || !pattern_valid(pattern))
        return -EINVAL;
    return add_rule(&r->keep, &r->n_keep, &r->cap_keep, pattern);
}

/* A demangled template function carries its return type in front
 * ("void at::native::gpu_reduce_kernel<...>(...)", "at::Tensor
 * at::_sum_to<c10::SymInt>(...)": both seen in PyTorch 2.11 stacks on the
 * H200). The name proper starts after the last space outside brackets before
 * the parameter list; rules and operation names look at that. */
const char *cmt_function_sans_return_type(const char *function)
{
    if (!function)
        return NULL;
    const char *name = function;
    int angle = 0;
    for (const char *p = function; *p; p++) {
        if (*p == '<')
            angle++;
        else if (*p == '>' && angle > 0)
            angle--;
        else if (*p == '(' && angle == 0)
            break;
        else if (*p == ' ' && angle == 0)
            name = p + 1;
    }
    return *name ? name : function;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

struct frame_fields {
    const char *func, *func_full, *file, *file_base, *mod, *mod_base;
};

static bool rule_matches(const char *pattern, unsigned fields, const struct frame_fields *ff)
{
    if ((fields & FOLD_FUNCTION) && ff->func &&
        (fnmatch(pattern, ff->func, 0) == 0 || (ff->func_full != ff->func && fnmatch(pattern, ff->func_full, 0) == 0)))
        return true;
    if ((fields & FOLD_FILE) && ff->file &&
        (fnmatch(pattern, ff->file, 0) == 0 ||
         (ff->file_base != ff->file && *ff->file_base && fnmatch(pattern, ff->file_base, 0) == 0)))
        return true;
    if ((fields & FOLD_MODULE) && ff->mod_base && fnmatch(pattern, ff->mod_base, 0) == 0)
        return true;
    if ((fields & FOLD_MODULE_PATH) && ff->mod && fnmatch(pattern, ff->mod, 0) == 0)
        return true;
    return false;
}

enum cmt_frame_category cmt_fold_rules_classify(const struct cmt_fold_rules *r, const struct cmt_frame *f)
{
    if (!r || !f)
        return CMT_FRAME_USER;
    struct frame_fields ff = {
        .func_full = f->function && *f->function ? f->function : NULL,
        .file = f->file && *f->file ? f->file : NULL,
        .mod = f->module && *f->module ? f->module : NULL,
    };
    ff.func = cmt_function_sans_return_type(ff.func_full);
    ff.file_base = ff.file ? base_name(ff.file) : NULL;
    ff.mod_base = ff.mod ? base_name(ff.mod) : NULL;
    if (ff.mod_base && !*ff.mod_base)
        ff.mod_base = NULL;
    for (size_t i = 0; i < r->n_keep; i++)
        if (rule_matches(r->keep[i].pattern, r->keep[i].fields, &ff))
            return CMT_FRAME_USER;
    for (size_t i = 0; i < r->n; i++)
        if (rule_matches(r->v[i].pattern, r->v[i].fields, &ff))
            return CMT_FRAME_FOLD;
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++)
        if (rule_matches(default_rules[i].pattern, default_rules[i].fields, &ff))
            return default_rules[i].category;
    return CMT_FRAME_USER;
}

bool cmt_fold_rules_match(const struct cmt_fold_rules *r, const struct cmt_frame *f)
{
    return cmt_fold_rules_classify(r, f) == CMT_FRAME_FOLD;
}

/* The identifier at s: letters, digits, underscores. */
static size_t ident_len(const char *s)
{
    size_t n = 0;
    while (s[n] && (isalnum((unsigned char)s[n]) || s[n] == '_'))
        n++;
    return n;
}

/* ATen operator names are lower case: at::cuda::getCurrentCUDABlasHandle
 * is not one. */
static bool aten_name(const char *s, size_t n)
{
    if (n == 0 || isdigit((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (isupper((unsigned char)s[i]))
            return false;
    return true;
}

static bool factory_name(const char *s, size_t n)
{
    return (n >= 5 && strncmp(s, "empty", 5) == 0) || (n >= 9 && strncmp(s, "new_empty", 9) == 0) ||
           (n >= 6 && strncmp(s, "_empty", 6) == 0);
}

static int write_op(const char *prefix, const char *name, size_t n, char *buf, size_t len)
{
    snprintf(buf, len, "%s%.*s", prefix, (int)n, name);
    return 0;
}

int cmt_frame_operation(const char *function, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    if (!function)
        return 0;
    function = cmt_function_sans_return_type(function);
    static const char ops[] = "at::_ops::", node[] = "torch::autograd::generated::";
    if (strncmp(function, node, sizeof node - 1) == 0) {
        const char *name = function + sizeof node - 1;
        size_t n = ident_len(name);
        if (n == 0 || strncmp(name + n, "::apply", 7) != 0)
            return 0;
        write_op("", name, n, buf, len);
        return 4;
    }
    const char *name = NULL;
    int rank = 2;
    if (strncmp(function, ops, sizeof ops - 1) == 0) {
        name = function + sizeof ops - 1;
        rank = 3;
    } else if (strncmp(function, "at::native::", 12) == 0) {
        name = function + 12;
    } else if (strncmp(function, "at::cuda::", 10) == 0) {
        name = function + 10;
    } else {
        return 0;
    }
    static const char anon[] = "(anonymous namespace)::";
    while (strncmp(name, anon, sizeof anon - 1) == 0)
        name += sizeof anon - 1;
    size_t n = ident_len(name);
    /* a kernel is a function (followed by its arguments or template
     * arguments); at::native::foo::bar is a helper's namespace */
    if (rank == 2 && name[n] != '(' && name[n] != '<' && name[n] != '\0')
        return 0;
    /* at::_ops structs are named by the operator and its overload, and
     * overload names have capitals (sum_dim_IntList, add_Tensor); kernels'
     * names in at::native and at::cuda are lower case. */
    if (rank == 3 ? n == 0 || isdigit((unsigned char)name[0]) : !aten_name(name, n))
        return 0;
    write_op("aten::", name, n, buf, len);
    return factory_name(name, n) ? 1 : rank;
}

void cmt_fold_rules_free(struct cmt_fold_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].pattern);
    free(r->v);
    for (size_t i = 0; i < r->n_keep; i++)
        free(r->keep[i].pattern);
    free(r->keep);
    free(r);
}
