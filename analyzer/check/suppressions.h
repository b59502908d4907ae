/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SUPPRESSIONS_H
#define CUMEMTRACE_ANALYZER_SUPPRESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "symbolizer.h"

/* Leak suppressions for `cumemtrace check`, written like LeakSanitizer's:
 *
 *   # a comment
 *   leak:PATTERN
 *
 * PATTERN matches a frame when it matches the frame's function name, its
 * source file (full path or base name) or its module (full path or base
 * name). As in LeakSanitizer, a pattern matches anywhere in the text unless
 * anchored: '^' at its start anchors it to the start, '$' at its end to the
 * end, and '*' matches any run of characters. A leaked allocation is
 * suppressed when a pattern matches any frame of its whole (unfolded) stack;
 * the profiler's own frames (libcumemtrace.so) are never matched. */

struct cmt_suppression {
    char *pattern; /* the text after "leak:" */
    char *source;  /* the file it came from, or "default" for the built-in list */
    unsigned line;
    char *reason;  /* what the comment above it says it is for ("cuBLAS handle state"), "" none */
    bool is_default;
    /* What it suppressed, over every trace checked. */
    uint64_t allocations;
    uint64_t bytes;
};

/* A frame's verdict, kept while one report's frames live (match_stack). */
struct cmt_suppression_memo_slot {
    const char *function, *file, *module; /* NULL function with used false: empty */
    int32_t first;                        /* the first suppression matching the frame, -1 none */
    bool used;
};

struct cmt_suppressions {
    struct cmt_suppression *items; /* in the order they are tried */
    size_t n, cap;
    struct cmt_report_suppression *labels; /* the report's words for items (cmt_suppressions_attach) */
    /* The report model's filter matches each distinct frame once: a verdict
     * depends on the frame's function, file and module only, and the
     * symbolizer and the model hand out one string per name, so the
     * strings' addresses are the key. Kept for one cmt_frames
     * (memo_serial, cmt_frames_serial): its strings live as long. */
    struct cmt_suppression_memo_slot *memo;
    size_t memo_cap, memo_count;
    uint64_t memo_serial;
};

void cmt_suppressions_init(struct cmt_suppressions *s);
void cmt_suppressions_free(struct cmt_suppressions *s);

/* Adds the suppressions in text (len bytes, the content of source). Returns 0,
 * or -1 with "source:line: what is wrong" in err. */
int cmt_suppressions_parse(struct cmt_suppressions *s, const char *text, size_t len, const char *source,
                           bool is_default, char *err, size_t errlen);

/* Reads and parses a file. Returns 0, or -1 with the reason in err. */
int cmt_suppressions_load_file(struct cmt_suppressions *s, const char *path, char *err, size_t errlen);

/* What `check` and `report` apply, in the order tried: the files given
 * (--suppressions), those CUMEMTRACE_SUPPRESSIONS lists (':' apart), then
 * the built-in list unless no_default. Returns 0, or -1 with the reason in
 * err. */
int cmt_suppressions_load_all(struct cmt_suppressions *s, const char *const *files, size_t n_files,
                              bool no_default, char *err, size_t errlen);

/* Makes s the report model's leak filter (o->suppress_stack and the labels
 * the renderers print); s must outlive the reports built with o. Returns 0,
 * or -1 when out of memory. */
int cmt_suppressions_attach(struct cmt_suppressions *s, struct cmt_report_options *o);

/* The index of the first suppression matching one of the n frames, or -1. */
long cmt_suppressions_match(const struct cmt_suppressions *s, const struct cmt_frame *frames, size_t n);

/* LeakSanitizer's pattern semantics ('^', '$', '*', otherwise a substring).
 * An empty or NULL text never matches. */
bool cmt_suppression_pattern_match(const char *pattern, const char *text);

/* The built-in list (analyzer/default.supp, embedded at build time). */
extern const char cmt_default_suppressions[];

#endif
