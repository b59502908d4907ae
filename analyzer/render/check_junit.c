/* SPDX-License-Identifier: MIT */
/* `cumemtrace check --format junit`: one <testcase> per trace, named by its
 * program and arguments (stable from run to run, unlike pids), failing with
 * the trace's violations or erring when it could not be judged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "render_parts.h"
#include "text_escape.h"

/* XML 1.0 text: markup characters escaped, control characters other than
 * tab and newline dropped (they cannot appear even escaped). */
static void xml_text(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if (*p >= 0x20 || *p == '\n' || *p == '\t')
                fputc(*p, out);
        }
    }
}

/* The text report of one trace, for the body of its <failure> or <error>. */
static char *trace_text(const struct cmt_check *c, const struct cmt_check_trace *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    for (size_t k = 0; k < t->n_findings; k++)
        cmt_check_print_finding(c, t, &t->findings[k], m);
    if (t->opened) {
        for (size_t k = 0; k < t->report.n_warnings; k++)
            fprintf(m, "%s: note: %s\n", cmt_esc(t->path), cmt_esc(t->report.warnings[k]));
        for (size_t k = 0; k < t->n_notes; k++)
            fprintf(m, "%s: note: %s\n", cmt_esc(t->path), cmt_esc(t->notes[k]));
    }
    char line[2048];
    cmt_check_trace_result_line(c, t, line, sizeof line);
    fprintf(m, "cumemtrace check: %s\n", cmt_esc(line));
    fclose(m);
    return buf;
}

void cmt_check_render_junit(const struct cmt_check *c, FILE *out)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out, "<testsuites name=\"cumemtrace check\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n",
            c->n_traces, c->n_fail, c->n_error);
    fprintf(out,
            "  <testsuite name=\"cumemtrace check\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\">\n",
            c->n_traces, c->n_fail, c->n_error);
    for (size_t i = 0; i < c->n_traces; i++) {
        const struct cmt_check_trace *t = c->traces[i];
        fputs("    <testcase classname=\"cumemtrace.check\" name=\"", out);
        xml_text(out, t->name);
        fputs("\" file=\"", out);
        xml_text(out, t->path);
        fputs("\">\n", out);
        char *body = t->status == CMT_TRACE_PASS ? NULL : trace_text(c, t);
        if (t->status == CMT_TRACE_FAIL) {
            const struct cmt_finding *first = &t->findings[0];
            fprintf(out, "      <failure type=\"%s\" message=\"", cmt_rule_id(first->rule));
            char msg[640];
            snprintf(msg, sizeof msg, "%zu %s; first: %s", t->n_errors, t->n_errors == 1 ? "violation" : "violations",
                     first->message);
            xml_text(out, msg);
            fputs("\">", out);
            xml_text(out, body);
            fputs("</failure>\n", out);
        } else if (t->status == CMT_TRACE_ERROR) {
            fputs("      <error type=\"trace\" message=\"", out);
            xml_text(out, t->error);
            fputs("\">", out);
            xml_text(out, body);
            fputs("</error>\n", out);
        }
        free(body);
        char line[2048];
        cmt_check_trace_result_line(c, t, line, sizeof line);
        fputs("      <system-out>", out);
        xml_text(out, line);
        fputs("</system-out>\n", out);
        fputs("    </testcase>\n", out);
    }
    fputs("  </testsuite>\n</testsuites>\n", out);
}
