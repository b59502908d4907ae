/* SPDX-License-Identifier: MIT
 *
 * Frame folding: which frames are "not the user's", so that an allocation's
 * call site is named by its first user frame (the first frame, innermost
 * first, that no rule matches).
 *
 * A rule is an fnmatch(3) glob (flags 0: '*' also matches '/'). A frame
 * matches a user rule (--fold PATTERN) when the pattern matches any of
 *   - the function name (as shown: demangled when demangling is on),
 *   - the source file, as the full path and as its basename,
 *   - the basename of the module path.
 *
 * Default rules (each applies to one field only):
 *   module basename
 *     libcumemtrace.so*   the recording shim itself
 *     libcudart.so*       the dynamic CUDA runtime (also the simulated
 *                         runtime libcudart.so.13 of the tests)
 *     libcuda.so*         the driver (also the simulated libcuda.so.1)
 *   function name (the static CUDA runtime, libcudart_static.a, is linked
 *   into the user's executable or library, so its frames can only be told
 *   apart by name)
 *     cuda[A-Z]*          runtime API entry points (cudaMalloc,
 *                         cudaMallocAsync, ...) and the C++ wrappers of
 *                         cuda_runtime.h inlined into user code
 *                         (cudaMalloc<float>(float**, unsigned long), ...).
 *                         A user function named cudaSomething is folded too.
 *     __cuda*             runtime registration/launch helpers
 *                         (__cudaRegisterFatBinary, __cudaPushCallConfiguration)
 *     __cudart*           static-runtime internals (obfuscated __cudart1234;
 *                         the simulated static runtime of the tests names its
 *                         helpers __cudart_* to match, so no rule knows it)
 *     cudart::*           static-runtime C++ internals, demangled
 *     _ZN6cudart*         the same, when names are not demangled
 *     libcudart_static_*  CUDA 13's static runtime internals
 *                         (libcudart_static_<sha1>, seen on an H200)
 *   and the C library: module libc.so* (no CUDA allocation is made by libc;
 *   its frames are the process/thread entry, often without symbols, or
 *   trampolines such as pthread_once), plus by name its entry frames, which
 *   a statically linked program carries in its own executable:
 *     __libc_start_call_main, __libc_start_main*, _start, start_thread,
 *     clone, clone3
 * Source paths are not used by these: the runtime ships without debug
 * info, so its frames have no file, and folding every path containing
 * "/cuda/" would also fold user code living under a directory named cuda.
 *
 * Beyond folding, each frame gets a category (enum cmt_frame_category) from
 * one table of patterns, first match wins (frame_fold.c; docs/report.md,
 * "Call sites, frames and folding", lists it): plumbing of the Python
 * interpreter and of the frameworks (PyTorch's allocator, dispatcher,
 * autograd wrappers, pybind11) is FOLD; frames that name an operation
 * (at::_ops::addmm::call, at::native::addmm, AddmmBackward0::apply) are
 * OPERATION; the rest of a framework (its libraries and Python packages, the
 * interpreter's own Python library) is FRAMEWORK; everything else is USER.
 * --keep PATTERN makes what it matches USER, before every other rule;
 * --fold PATTERN makes it FOLD, before the default table.
 */
#ifndef CUMEMTRACE_FRAME_FOLD_H
#define CUMEMTRACE_FRAME_FOLD_H

#include <stdbool.h>

#include "symbolizer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cmt_fold_rules; /* opaque */

/* A rule set holding the default rules; NULL when out of memory. */
struct cmt_fold_rules *cmt_fold_rules_new(void);

/* --fold PATTERN. Returns 0, -EINVAL (NULL or empty pattern, an unterminated
 * bracket expression or a trailing backslash), or -ENOMEM. */
int cmt_fold_rules_add(struct cmt_fold_rules *r, const char *pattern);

/* --keep PATTERN: frames it matches (function, file, file basename, module
 * basename, as --fold) are the user's whatever else matches them. Returns
 * 0, -EINVAL or -ENOMEM as cmt_fold_rules_add. */
int cmt_fold_rules_keep(struct cmt_fold_rules *r, const char *pattern);

enum cmt_frame_category {
    CMT_FRAME_USER = 0,      /* the user's code: may name a call site */
    CMT_FRAME_FOLD = 1,      /* plumbing: never shown (but with --full-stacks) */
    CMT_FRAME_OPERATION = 2, /* names the framework operation (aten::addmm) */
    CMT_FRAME_FRAMEWORK = 3  /* a framework's or the interpreter's own code */
};

/* The category of f; USER for a NULL rule set or frame. */
enum cmt_frame_category cmt_fold_rules_classify(const struct cmt_fold_rules *r, const struct cmt_frame *f);

/* Whether f is folded (category FOLD). False for a NULL rule set or frame. */
bool cmt_fold_rules_match(const struct cmt_fold_rules *r, const struct cmt_frame *f);

/* The operation an OPERATION frame's function names, written to buf
 * ("aten::addmm" from at::_ops::addmm::call(...), at::native::addmm(...)
 * or at::cuda::addmm(...); "AddmmBackward0" from
 * torch::autograd::generated::AddmmBackward0::apply(...)). Returns how well
 * it names what the program asked for, higher better: 4 an autograd node,
 * 3 a dispatcher operator, 2 a kernel, 1 a tensor factory (empty*, which
 * every operation calls for its output); 0 (buf empty) when function names
 * no operation. */
int cmt_frame_operation(const char *function, char *buf, size_t len);

/* NULL is accepted. */
void cmt_fold_rules_free(struct cmt_fold_rules *r);

#ifdef __cplusplus
}
#endif

#endif /* CUMEMTRACE_FRAME_FOLD_H */
