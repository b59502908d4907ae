/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_RENDERERS_H
#define CUMEMTRACE_ANALYZER_RENDERERS_H

#include <stddef.h>
#include <stdio.h>

/* The renderer seam (docs/design.md, "Adding a renderer"): every output of
 * every command is one entry of one table, (view, format) -> a function of
 * the view's model and a stream. A command builds its model, looks up the
 * renderer its --format names and calls it; it prints nothing of the model
 * itself. A new format is a new file in render/ and one line in
 * renderers.c; a new view is a model (model/), a line in enum cmt_view and
 * its formats' lines. */
enum cmt_view {
    CMT_VIEW_REPORT,   /* struct cmt_report: `cumemtrace report TRACE` */
    CMT_VIEW_REPORTS,  /* struct cmt_report_set: `cumemtrace report TRACE TRACE...` */
    CMT_VIEW_FRAG,     /* struct cmt_report (frag forensics): `cumemtrace frag` */
    CMT_VIEW_TIMELINE, /* struct cmt_timeline_report: `cumemtrace timeline` */
    CMT_VIEW_CHECK,    /* struct cmt_check: `cumemtrace check`, `run --check` */
    CMT_VIEW_DIFF,     /* struct cmt_diff: `cumemtrace diff OLD NEW` */
    CMT_VIEW_PERFETTO, /* struct cmt_perfetto_model: `cumemtrace export --format perfetto` */
    CMT_VIEW_FOLDED,   /* struct cmt_folded_model: `cumemtrace export --format folded` */
    CMT_VIEW_WHATIF,   /* struct cmt_whatif_report: `cumemtrace whatif` */
    CMT_VIEW_JOB,      /* struct cmt_summary_set: `cumemtrace report SUMMARY...` */
    CMT_VIEW_TOP,      /* struct cmt_top_snapshot: `cumemtrace top --once` */
    CMT_VIEW_COUNT
};

struct cmt_renderer {
    enum cmt_view view;
    const char *format; /* what --format names: "text", "json", ... */
    void (*render)(const void *model, FILE *out);
};

/* The renderer of view in format, or NULL when the view has none. */
const struct cmt_renderer *cmt_renderer_find(enum cmt_view view, const char *format);
/* The formats of a view in table order, joined: "text, json" ("text, json or
 * csv" with last_word "or"), for messages and help. */
void cmt_renderer_formats(enum cmt_view view, const char *last_word, char *buf, size_t len);

/* Not a view: the one line per trace and total of `cumemtrace check` for
 * the terminal when the report itself goes to a file or is not text
 * (check_text.c). */
struct cmt_check;
void cmt_check_render_summary(const struct cmt_check *c, FILE *out);
/* The suppressions table (`--print-suppressions`, check_text.c). */
void cmt_check_print_suppressions(const struct cmt_check *c, FILE *out);

#endif
