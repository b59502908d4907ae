/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_PHASES_REPORT_H
#define CUMEMTRACE_ANALYZER_PHASES_REPORT_H

#include <stdio.h>

#include "report.h"

/* The report's phases and steps (docs/report.md, "Phases and steps"), from
 * the phases observer (phases.h). Each does nothing when the trace names no
 * phase, mark or step, so reports of other programs are unchanged. */

struct cmt_json;

/* "step 41 > forward > layer 7" for where something happened; "" when
 * nowhere. */
void cmt_phases_where_text(const struct cmt_report *r, const struct cmt_phase_where *w, char *buf, size_t len);

/* The "  phase at the peak: ..." line of a device's account. */
void cmt_phases_text_peak(const struct cmt_report *r, const struct cmt_account_view *v, FILE *out);
/* The "in phase" line of a failed allocation (the replay's failure index). */
void cmt_phases_text_failure(const struct cmt_report *r, size_t failure_index, const char *indent, FILE *out);
/* The "Phases" and "Steps" sections. */
void cmt_phases_render_text(const struct cmt_report *r, FILE *out);

/* JSON: "peak_phase" in an account, "phase" in a failure, "phases" in the
 * report (null members and empty lists when the trace names none). */
void cmt_phases_json_peak(const struct cmt_report *r, const struct cmt_account_view *v, struct cmt_json *j);
void cmt_phases_json_failure(const struct cmt_report *r, size_t failure_index, struct cmt_json *j);
void cmt_phases_render_json(const struct cmt_report *r, struct cmt_json *j);
/* The same for the HTML page's model: the first CMT_PAGE_PHASES phases of
 * the list, the others summed up in "list_omitted" (docs/html.md). */
#define CMT_PAGE_PHASES 1000
void cmt_phases_render_page_json(const struct cmt_report *r, struct cmt_json *j);

#endif
