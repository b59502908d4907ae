/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FRAMES_H
#define CUMEMTRACE_ANALYZER_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame_fold.h"
#include "symbolizer.h"
#include "trace_model.h"

/* Turns stack ids into the frames a user reads: symbolized (function,
 * file:line, inlined calls expanded), classified by the rules of
 * frame_fold.h and, unless full stacks are asked for, reduced to the user's
 * frames and the one frame that names the framework operation (renamed to
 * it: "aten::addmm"). Each stack is resolved once.
 *
 * The call site is named by its site frame: the innermost user frame of
 * Python (a synthetic frame of language 1) when there is one, else the
 * innermost native user frame, else the operation frame, else the first
 * frame shown. A stack without user frames nor operation shows its
 * framework frames rather than nothing. */

struct cmt_frames_options {
    struct cmt_symbolizer_options symbolizer;
    bool full_stacks;
    bool no_symbols; /* addresses and modules only (fast; for benchmarks) */
    const char *const *fold_patterns;
    size_t n_fold_patterns;
    const char *const *keep_patterns; /* --keep */
    size_t n_keep_patterns;
};

/* The symbol options as a command line gives them (report, frag, check,
 * run --check; cli/symbol_options.c parses them): the lists live here and
 * cmt_frames_args_apply points a cmt_frames_options at them. */
#define CMT_FRAMES_ARGS_MAX 64
struct cmt_frames_args {
    const char *folds[CMT_FRAMES_ARGS_MAX];           /* --fold */
    const char *unfolds[CMT_FRAMES_ARGS_MAX];         /* --unfold */
    const char *debuginfo_paths[CMT_FRAMES_ARGS_MAX]; /* --debuginfo-path */
    size_t n_folds, n_unfolds, n_debuginfo_paths;
    const char *sysroot; /* --sysroot */
    bool full_stacks;    /* --full-stacks */
    bool no_symbols;     /* --no-symbols */
};
/* Sets what a holds in o (the lists by reference: a must outlive o's use);
 * leaves o's other fields (demangling) alone. */
void cmt_frames_args_apply(const struct cmt_frames_args *a, struct cmt_frames_options *o);

struct cmt_stack_frames {
    size_t n;
    struct cmt_frame *frames;
    size_t site; /* the frame naming the call site; n when none */
};

/* The site frame, or NULL. */
static inline const struct cmt_frame *cmt_stack_site(const struct cmt_stack_frames *sf)
{
    return sf->site < sf->n ? &sf->frames[sf->site] : NULL;
}

struct cmt_frames;

struct cmt_frames *cmt_frames_new(const struct cmt_trace_model *model, const struct cmt_frames_options *opt);
/* After the model grew (a trace followed while it is written): the modules
 * and stacks recorded since are known from then on; what was resolved
 * stays. Returns 0, or -1 when out of memory. */
int cmt_frames_update(struct cmt_frames *f);
/* The display frames of a stack id (n == 0 for "no stack"), kept while f
 * lives: what a renderer shows. Memory grows with the stacks asked for. */
const struct cmt_stack_frames *cmt_frames_get(struct cmt_frames *f, uint64_t stack_id);
/* Every frame of a stack id, nothing folded (suppressions match these: a
 * pattern may name a library whose frames folding hides). Not kept: valid
 * until the next call of this function (the analyses that classify every
 * stack use it and let go; keeping them all cost most of the analyzer's
 * memory on a trace of a million distinct stacks, issue 32). */
const struct cmt_stack_frames *cmt_frames_get_unfolded(struct cmt_frames *f, uint64_t stack_id);
/* The first stack id met whose display frames equal those of stack_id: two
 * stacks that differ only in folded frames are one call site. Resolves what
 * it compares without keeping it: 4 bytes per stack id, and a table entry
 * per distinct call site. */
uint64_t cmt_frames_canonical(struct cmt_frames *f, uint64_t stack_id);

/* f taken over by a second reader of the same model (the report, from
 * the holders' classification made while the trace was read,
 * stack_holders.h): brought up to the model (cmt_frames_update), and no
 * frame counted as shown yet, so that the warnings are those the second
 * reader's frames make, in its order; what was loaded and resolved (the
 * modules' debug information, the addresses) is not done again. Returns 0,
 * or -1 when out of memory. */
int cmt_frames_take_over(struct cmt_frames *f);

/* Symbolizer warnings, for the report's warnings section. */
size_t cmt_frames_warning_count(const struct cmt_frames *f);
const char *cmt_frames_warning(const struct cmt_frames *f, size_t i);
void cmt_frames_free(struct cmt_frames *f);
/* A number no other cmt_frames of this process has had: what a cache of
 * answers about f's frames (their strings live as long as f) is kept
 * for, where another cmt_frames may later sit at f's address. */
uint64_t cmt_frames_serial(const struct cmt_frames *f);

/* What identifies a call site across runs and checkouts (check
 * --baseline, diff): per frame shown, function, the file's base name, the
 * line (with_lines), the module's base name; a frame without a name by
 * module and offset. One line per frame. NULL when out of memory. */
char *cmt_frames_site_identity(const struct cmt_stack_frames *sf, bool with_lines);

/* "function (file:line)" / "0x1234 (module+0x10)" etc. into buf. */
void cmt_frame_describe(const struct cmt_frame *fr, char *buf, size_t len);

/* The base name of a path ("" for NULL). */
const char *cmt_basename(const char *path);

#endif
