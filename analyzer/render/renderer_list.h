/* SPDX-License-Identifier: MIT */
/* The renderers, one line each: RENDERER(view, format, function, model type).
 * Included twice by renderers.c (no include guard). The first format of a
 * view is its default. */
RENDERER(CMT_VIEW_REPORT, "text", cmt_report_render_text, struct cmt_report)
RENDERER(CMT_VIEW_REPORT, "json", cmt_report_render_json, struct cmt_report)
RENDERER(CMT_VIEW_REPORT, "html", cmt_report_render_html, struct cmt_report)
RENDERER(CMT_VIEW_REPORTS, "text", cmt_report_set_render_text, struct cmt_report_set)
RENDERER(CMT_VIEW_REPORTS, "json", cmt_report_set_render_json, struct cmt_report_set)
RENDERER(CMT_VIEW_REPORTS, "html", cmt_report_set_render_html, struct cmt_report_set)
RENDERER(CMT_VIEW_FRAG, "text", cmt_frag_render_text, struct cmt_report)
RENDERER(CMT_VIEW_FRAG, "json", cmt_frag_render_json, struct cmt_report)
RENDERER(CMT_VIEW_TIMELINE, "text", cmt_timeline_render_text, struct cmt_timeline_report)
RENDERER(CMT_VIEW_TIMELINE, "csv", cmt_timeline_render_csv, struct cmt_timeline_report)
RENDERER(CMT_VIEW_TIMELINE, "json", cmt_timeline_render_json, struct cmt_timeline_report)
RENDERER(CMT_VIEW_CHECK, "text", cmt_check_render_text, struct cmt_check)
RENDERER(CMT_VIEW_CHECK, "json", cmt_check_render_json, struct cmt_check)
RENDERER(CMT_VIEW_CHECK, "junit", cmt_check_render_junit, struct cmt_check)
RENDERER(CMT_VIEW_CHECK, "sarif", cmt_check_render_sarif, struct cmt_check)
RENDERER(CMT_VIEW_DIFF, "text", cmt_diff_render_text, struct cmt_diff)
RENDERER(CMT_VIEW_DIFF, "json", cmt_diff_render_json, struct cmt_diff)
RENDERER(CMT_VIEW_PERFETTO, "perfetto", cmt_perfetto_render, struct cmt_perfetto_model)
RENDERER(CMT_VIEW_FOLDED, "folded", cmt_folded_render, struct cmt_folded_model)
