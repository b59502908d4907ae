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
 * without the recorded libraries; the workspaces need PyTorch's symbols
 * (function names), and without them such a tensor counts where its
 * Python line puts it. */

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

/* The rule table, as docs/report.md prints it: each rule's fields ("" for
 * a field it does not look at), its origin and why it is there. */
struct cmt_tensor_origin_rule {
    const char *file, *function, *module, *thread;
    enum cmt_tensor_origin origin;
    const char *why;
};
const struct cmt_tensor_origin_rule *cmt_tensor_origin_rules(size_t *n);

#endif
