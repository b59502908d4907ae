/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_RENDER_PARTS_H
#define CUMEMTRACE_ANALYZER_RENDER_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "compare.h"
#include "diff.h"
#include "export_model.h"
#include "forensics_report.h"
#include "json_writer.h"
#include "report.h"
#include "report_set.h"
#include "timeline_report.h"
#include "top.h"
#include "whatif_report.h"

/* The renderers of renderers.c's table, and the pieces they share. Nothing
 * outside render/ calls these: commands go through cmt_renderer_find. */

/* `cumemtrace report`, one trace (report_text.c, report_json.c). */
void cmt_report_render_text(const struct cmt_report *r, FILE *out);
void cmt_report_render_json(const struct cmt_report *r, FILE *out);
/* The report as one JSON value inside a document being written. */
void cmt_report_render_json_value(const struct cmt_report *r, struct cmt_json *j);
/* The same for the HTML page's model: what the page shows (html_report.c). */
void cmt_report_render_page_value(const struct cmt_report *r, struct cmt_json *j);
/* The "frames" member of a call site (stack: canonical id), innermost first,
 * and its "site_frame" (frames_json.c). */
void cmt_report_json_frames(const struct cmt_report *r, struct cmt_json *j, uint64_t stack);
/* One frame object of such a list; check's findings write the same one. */
void cmt_json_frame(struct cmt_json *j, const struct cmt_frame *f);

/* `cumemtrace top --once` (top_text.c, top_json.c). */
void cmt_top_render_text(const struct cmt_top_snapshot *m, FILE *out);
void cmt_top_render_json(const struct cmt_top_snapshot *m, FILE *out);

/* PyTorch's block layer (blocks_text.c, blocks_json.c): the report's
 * section and its "blocks" key (null without a block layer). */
void cmt_blocks_render_text(const struct cmt_report *r, FILE *out);
/* Its tensors through the run (tensors_text.c, tensors_json.c): the section
 * the report leads with, and its "tensors" key (null without the block
 * layer). */
void cmt_tensors_render_text(const struct cmt_report *r, FILE *out);
void cmt_tensors_render_json(const struct cmt_report *r, struct cmt_json *j);
void cmt_blocks_render_json(const struct cmt_report *r, struct cmt_json *j);
/* Memory shared with other processes (ipc_text.c, ipc_json.c). */
void cmt_ipc_render_text(const struct cmt_report *r, FILE *out);
void cmt_ipc_render_text_leaks(const struct cmt_report *r, FILE *out);
void cmt_ipc_render_json(const struct cmt_report *r, struct cmt_json *j);
/* A stack's display frames as text lines under indent (frames_text.c). */
void cmt_render_text_frames(const struct cmt_report *r, FILE *out, uint64_t stack, const char *indent);
/* "suppressed by default.supp:18 (cuBLAS handle state)": suppression is
 * index + 1 into r->suppressions; the pattern stands in for a reason the
 * file does not give (frames_text.c). */
void cmt_report_suppression_label(const struct cmt_report *r, uint32_t suppression, char *buf, size_t len);
/* The "suppression" member of a suppressed site (frames_json.c). */
void cmt_report_json_suppression(const struct cmt_report *r, struct cmt_json *j, uint32_t suppression);

/* Several traces (report_set_text.c, report_set_json.c). */
void cmt_report_set_render_text(const struct cmt_report_set *s, FILE *out);
void cmt_report_set_render_json(const struct cmt_report_set *s, FILE *out);
/* Their comparison table (compare_text.c, compare_json.c). */
void cmt_compare_render_text(const struct cmt_process_summary *s, size_t n, FILE *out);
void cmt_compare_render_json(const struct cmt_process_summary *s, size_t n, struct cmt_json *j);

/* The forensics sections. full: the `cumemtrace frag` view (series, who
 * opened the holes, every list in full); otherwise the report's sections
 * (forensics_text.c, forensics_json.c). */
void cmt_forensics_render_text(const struct cmt_report *r, FILE *out, bool full);
/* PyTorch made the allocation at stack with its cache off
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1: its allocator calls cudaMalloc itself,
 * one per tensor, no frame of its cache's): advice about its cache or
 * about reusing buffers does not fit, turning the cache back on does. */
bool cmt_render_pytorch_cache_off(const struct cmt_report *r, uint64_t stack);
/* The report's "Most allocation calls" lists the call site of stack. */
bool cmt_usage_calls_row_shown(const struct cmt_report *r, uint64_t stack);
#define CMT_PYTORCH_CACHE_OFF_REMEDY                                                                                 \
    "unset PYTORCH_NO_CUDA_MEMORY_CACHING (set it only to find leaks): PyTorch's cache then serves these tensors "  \
    "from the segments it keeps, without a cudaMalloc and cudaFree each"
/* Adds the forensics keys to the JSON object being written. */
void cmt_forensics_render_json(const struct cmt_report *r, struct cmt_json *j, bool full);
/* Plain words for a failure's verdict and what to try, for the text and the
 * JSON alike (forensics_text.c). */
void cmt_oom_explain(const struct cmt_oom_view *v, char *buf, size_t len);
void cmt_oom_remedy(const struct cmt_oom_view *v, char *buf, size_t len);

/* A PyTorch failure's "replayed" member: null when the report replayed
 * nothing on its device, else what the replay found (oom_replay_json.c). */
struct cmt_oom_replay;
void cmt_oom_replay_render_json(struct cmt_json *j, const struct cmt_oom_replay *p, bool capacity);

/* The report's "Allocation calls", "Short-lived allocations" and "Device
 * memory by thread" sections (usage_text.c), and their JSON members
 * ("allocation_calls", "threads") inside the report's object
 * (usage_json.c); nothing without has_usage (docs/report.md). */
void cmt_usage_render_text(const struct cmt_report *r, FILE *out);
void cmt_usage_render_json(const struct cmt_report *r, struct cmt_json *j);

/* `cumemtrace frag` (frag_text.c, frag_json.c): a report built with the
 * frag forensics (holes tracked). */
void cmt_frag_render_text(const struct cmt_report *r, FILE *out);
void cmt_frag_render_json(const struct cmt_report *r, FILE *out);

/* `cumemtrace diff OLD NEW` (diff_text.c, diff_json.c): the two runs, their
 * totals, then the call sites that changed, largest change first (text: the
 * model's top; JSON: every site that changed). */
void cmt_diff_render_text(const struct cmt_diff *d, FILE *out);
void cmt_diff_render_json(const struct cmt_diff *d, FILE *out);
/* `cumemtrace whatif` (whatif_text.c, whatif_json.c) and the report's
 * "whatif" member (a value inside a document being written). */
void cmt_whatif_render_text(const struct cmt_whatif_report *w, FILE *out);
void cmt_whatif_render_json(const struct cmt_whatif_report *w, FILE *out);
void cmt_whatif_render_json_value(const struct cmt_whatif_report *w, struct cmt_json *j);
/* The report's "What if" section: each device's table and what fits best. */
void cmt_whatif_render_section(const struct cmt_whatif_report *w, FILE *out);
/* The one-file HTML report (html_report.c, docs/html.md). */
void cmt_report_render_html(const struct cmt_report *r, FILE *out);
void cmt_report_set_render_html(const struct cmt_report_set *s, FILE *out);
/* The job view from summaries (summary_set.c, html_report.c). */
void cmt_summary_set_render_text(const struct cmt_summary_set *s, FILE *out);
void cmt_summary_set_render_json(const struct cmt_summary_set *s, FILE *out);
void cmt_summary_set_render_html(const struct cmt_summary_set *s, FILE *out);

/* `cumemtrace export` (perfetto.c, folded.c; docs/export.md). */
void cmt_perfetto_render(const struct cmt_perfetto_model *m, FILE *out);
void cmt_folded_render(const struct cmt_folded_model *m, FILE *out);
/* A frame as folded stacks name it: "name file.c:12", ';' and line breaks
 * replaced (folded.c; the Perfetto stacks use it too). */
struct cmt_frame;
void cmt_folded_frame(const struct cmt_frame *f, char *buf, size_t len);

/* `cumemtrace timeline` (timeline_text.c, timeline_csv.c, timeline_json.c). */
void cmt_timeline_render_text(const struct cmt_timeline_report *t, FILE *out);
void cmt_timeline_render_csv(const struct cmt_timeline_report *t, FILE *out);
void cmt_timeline_render_json(const struct cmt_timeline_report *t, FILE *out);

/* `cumemtrace check` (check_text.c, check_json.c, check_junit.c, check_sarif.c). */
void cmt_check_render_text(const struct cmt_check *c, FILE *out);
void cmt_check_render_json(const struct cmt_check *c, FILE *out);
void cmt_check_render_junit(const struct cmt_check *c, FILE *out);
void cmt_check_render_sarif(const struct cmt_check *c, FILE *out);

/* Shared by the check renderers (check_text.c): the per-trace result line. */
void cmt_check_trace_result_line(const struct cmt_check *c, const struct cmt_check_trace *t, char *buf, size_t len);
/* A finding in compiler style with its stack, as text (JUnit bodies too). */
void cmt_check_print_finding(const struct cmt_check *c, const struct cmt_check_trace *t,
                             const struct cmt_finding *f, FILE *out);

#endif
