/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TENSOR_ORIGIN_H
#define CUMEMTRACE_ANALYZER_TENSOR_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frames.h"

/* What made a tensor of PyTorch's block layer, read from its stack and the
 * thread that allocated it: the first half of its category (tensor_pass.h
 * gives the second, from what the tensor outlived). One table of rules,
 * first match wins (tensor_origin.c; docs/report.md, "Tensor categories",
 * lists it with the reasons), like the folding rules of frame_fold.c: a
 * rule names a frame (its file, function and module, each a glob; a frame
 * must match every field the rule gives) and/or the allocating thread's
 * name. Python frames (FRAME records: file, function, line) and module
 * names are in the trace itself, so every rule but the workspaces' holds
 * without the recorded libraries; the workspaces' rules need PyTorch's
 * symbols (function names), and without them cuBLAS's workspace is still
 * found by what the trace holds (cmt_tensor_workspace_anchor below); a
 * cuDNN workspace then counts where its Python line puts it. */

enum cmt_tensor_origin {
    CMT_ORIGIN_PROGRAM = 0, /* the program's own code: the forward pass, data, the loss */
    CMT_ORIGIN_PARAMETER,   /* building, loading or moving a model (nn.Module, .cuda(), .to()) */
    CMT_ORIGIN_BACKWARD,    /* autograd's backward pass */
    CMT_ORIGIN_RECOMPUTE,   /* activation checkpointing recomputing inside the backward pass */
    CMT_ORIGIN_OPTIMIZER,   /* an optimizer's step (and gradient scaling, clipping) */
    CMT_ORIGIN_CUBLAS,      /* cuBLAS and cuBLASLt workspaces PyTorch takes from its cache */
    CMT_ORIGIN_CUDNN,       /* cuDNN workspaces taken from the cache */
    CMT_ORIGIN_NCCL,        /* NCCL's buffers taken from the cache */
    CMT_ORIGIN_COUNT
};

/* "program", "parameter", "backward", ...: JSON values. */
const char *cmt_tensor_origin_name(enum cmt_tensor_origin o);
/* The same in words: "the program's code", "a model's building",
 * "the backward pass", "the optimizer's step", ... */
const char *cmt_tensor_origin_words(enum cmt_tensor_origin o);

/* The origin of a tensor allocated with this stack by a thread of this
 * name (NULL or "": unnamed). */
enum cmt_tensor_origin cmt_tensor_origin_of(struct cmt_frames *f, uint64_t stack, const char *thread_name);

/* The rule that decided (an index into the table, for tests and
 * --explain-like output), or -1 when none matched (CMT_ORIGIN_PROGRAM). */
int cmt_tensor_origin_rule(struct cmt_frames *f, uint64_t stack, const char *thread_name);

/* cuBLAS's workspace without PyTorch's symbols (docs/report.md, "Tensor
 * categories"). PyTorch takes one workspace per thread and stream from its
 * cache at a thread's first matrix product and keeps it while the thread
 * lives. On autograd's thread (pt_autograd_*), where the program makes no
 * tensors of its own, a tensor is taken for that workspace when its stack
 * made only it, it asked for exactly one of the workspace sizes PyTorch
 * picks by default (CMT_CUBLAS_WORKSPACE_*) and it was never freed; the
 * place in PyTorch's code that asked the cache for it (the first native
 * frame outside the allocator's modules, libc10_cuda and the recorder's
 * bridge) is then the workspace's call, and every tensor asked for at the
 * same place, on any thread, is a workspace too: the same instruction made
 * it. Only the trace decides (thread names, sizes, addresses); with
 * PyTorch's symbols the table's rules name the same tensors. */
#define CMT_CUBLAS_WORKSPACE_HOPPER (4096ull * 8 * 1024)            /* ":4096:8", compute capability 9.x, 10.x, 12.x */
#define CMT_CUBLAS_WORKSPACE_OLDER (4096ull * 1024 * 2 + 16 * 1024 * 8) /* ":4096:2:16:8", before */

#define CMT_WORKSPACE_CALLS_MAX 8
struct cmt_workspace_calls {
    uint64_t ip[CMT_WORKSPACE_CALLS_MAX];
    size_t n;
};

/* Adds the call of a tensor that anchors the rule above: allocated by a
 * thread of this name with this stack, its request, the tensors its stack
 * made, and whether it was still live at the end. True when it did. */
bool cmt_tensor_workspace_anchor(struct cmt_frames *f, uint64_t stack, const char *thread_name, uint64_t requested,
                                 uint64_t made, bool live_at_end, struct cmt_workspace_calls *w);
/* Whether a tensor of this stack was asked for at one of the calls. */
bool cmt_tensor_workspace_call(struct cmt_frames *f, uint64_t stack, const struct cmt_workspace_calls *w);

/* The rule table, as docs/report.md prints it: each rule's fields ("" for
 * a field it does not look at), its origin and why it is there. */
struct cmt_tensor_origin_rule {
    const char *file, *function, *module, *thread;
    enum cmt_tensor_origin origin;
    const char *why;
};
const struct cmt_tensor_origin_rule *cmt_tensor_origin_rules(size_t *n);

#endif
