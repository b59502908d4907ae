/* SPDX-License-Identifier: MIT */
/* `cumemtrace check` for people and compiler-error parsers:
 *
 *   leak_peak.c:24: error: leaked 64.0 MiB in 1 allocation (cudaMalloc) [leak]
 *       #0 keep_forever at /src/leak_peak.c:24
 *       #1 main at /src/leak_peak.c:53
 *   cumemtrace check: FAIL trace.bin (leak_peak, pid 4242): 1 violation; ...
 *
 * docs/check.md describes every line. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "blocks_report.h"
#include "check.h"
#include "size_parse.h"
#include "render_parts.h"
#include "renderers.h"
#include "units.h"
#include "text_escape.h"

static void print_stack(const struct cmt_check *c, const struct cmt_check_trace *t, uint64_t stack, FILE *out)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(t->report.frames, stack);
    if (sf->n == 0) {
        fprintf(out, "    (no stack recorded)\n");
        return;
    }
    size_t max = c->opt->max_frames;
    size_t limit = max && max < sf->n ? max : sf->n;
    char buf[1024];
    for (size_t i = 0; i < limit; i++) {
        cmt_check_describe_frame(c, &sf->frames[i], buf, sizeof buf);
        fprintf(out, "    #%zu %s\n", i, cmt_esc(buf));
    }
    if (limit < sf->n)
        fprintf(out, "    ... %zu more %s (--max-frames 0 shows all)\n", sf->n - limit,
                cmt_plural(sf->n - limit, "frame", "frames"));
}

void cmt_check_print_finding(const struct cmt_check *c, const struct cmt_check_trace *t,
                             const struct cmt_finding *f, FILE *out)
{
    char where[PATH_MAX + 32];
    if (f->site)
        cmt_check_location(c, t, f->stack, where, sizeof where);
    else
        snprintf(where, sizeof where, "%s", t->path);
    fprintf(out, "%s: %s: %s [%s]\n", cmt_esc(where), f->level == CMT_LEVEL_ERROR ? "error" : "warning",
            cmt_esc(f->message), cmt_rule_id(f->rule));
    if (!f->site)
        return;
    print_stack(c, t, f->stack, out);
    const struct cmt_account_view *v = f->peak_view;
    for (size_t i = 1; v && i < v->n_top && i < 4; i++) {
        char size[32];
        cmt_format_size(v->top[i].bytes, size, sizeof size);
        cmt_check_location(c, t, v->top[i].stack, where, sizeof where);
        fprintf(out, "    also live at the peak: %s in %" PRIu64 " %s (%s) at %s\n", size, v->top[i].count,
                cmt_plural(v->top[i].count, "allocation", "allocations"), cmt_api_name(v->top[i].api), cmt_esc(where));
    }
}

static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...)
{
    if (used >= len)
        return used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    return n < 0 ? used : used + (size_t)n;
}

void cmt_check_trace_result_line(const struct cmt_check *c, const struct cmt_check_trace *t, char *buf, size_t len)
{
    (void)c;
    static const char *const words[] = {"PASS", "FAIL", "ERROR"};
    size_t u = append(buf, len, 0, "%s %s", words[t->status], t->path);
    if (!t->opened) {
        append(buf, len, u, ": %s", t->error);
        return;
    }
    u = append(buf, len, u, " (%s, pid %" PRIu64 "): ", t->name, t->report.trace.pid);
    if (t->status == CMT_TRACE_ERROR)
        u = append(buf, len, u, "%s; ", t->error);
    else if (t->status == CMT_TRACE_FAIL)
        u = append(buf, len, u, "%zu %s; ", t->n_errors, cmt_plural(t->n_errors, "violation", "violations"));
    const struct cmt_report *r = &t->report;
    char size[32];
    if (t->leaks_checked) {
        cmt_format_size(r->leak_bytes, size, sizeof size);
        if (r->leak_count)
            u = append(buf, len, u, "leaked %s in %" PRIu64 " %s", size, r->leak_count,
                       cmt_plural(r->leak_count, "allocation", "allocations"));
        if (t->tensor_leak_count) {
            cmt_format_size(t->tensor_leak_bytes, size, sizeof size);
            u = append(buf, len, u, "%s%s in %" PRIu64 " %s %s", r->leak_count ? ", " : "leaked ", size,
                       t->tensor_leak_count, cmt_plural(t->tensor_leak_count, "tensor", "tensors"),
                       c->opt->tensors_alive_at_exit || !(r->tensors && r->tensors->on) ? "never released"
                                                                                        : "kept step after step");
        } else if (!r->leak_count) {
            u = append(buf, len, u, "no leaks");
        }
        if (r->suppressed_count || t->tensor_suppressed_count) {
            u = append(buf, len, u, " (");
            if (r->suppressed_count) {
                cmt_format_size(r->suppressed_bytes, size, sizeof size);
                u = append(buf, len, u, "%s in %" PRIu64 " %s", size, r->suppressed_count,
                           cmt_plural(r->suppressed_count, "allocation", "allocations"));
            }
            if (t->tensor_suppressed_count) {
                cmt_format_size(t->tensor_suppressed_bytes, size, sizeof size);
                u = append(buf, len, u, "%s%s in %" PRIu64 " %s", r->suppressed_count ? " and " : "", size,
                           t->tensor_suppressed_count, cmt_plural(t->tensor_suppressed_count, "tensor", "tensors"));
            }
            u = append(buf, len, u, " suppressed)");
        }
        uint64_t open_bytes = r->ipc.open_bytes - t->mapping_suppressed_bytes;
        uint64_t open_count = r->ipc.open_count - t->mapping_suppressed_count;
        if (open_count) {
            cmt_format_size(open_bytes, size, sizeof size);
            u = append(buf, len, u, ", %s in %" PRIu64 " %s of another process never closed", size, open_count,
                       cmt_plural(open_count, "mapping", "mappings"));
        }
        u = append(buf, len, u, "; ");
    }
    bool any = false;
    for (size_t i = 0; i < r->n_accounts; i++) {
        const struct cmt_account_figures *acc = &r->accounts[i].fig;
        if (acc->cls != CMT_CLASS_DEVICE)
            continue;
        cmt_format_size(acc->peak, size, sizeof size);
        u = append(buf, len, u, "%s%s on device %d", any ? ", " : "peak ", size, acc->device);
        any = true;
    }
    if (!any)
        append(buf, len, u, "no device memory used");
}

void cmt_check_print_suppressions(const struct cmt_check *c, FILE *out)
{
    const struct cmt_suppressions *s = &c->suppressions;
    size_t used = 0;
    for (size_t i = 0; i < s->n; i++)
        used += s->items[i].allocations != 0;
    char size[32], where[PATH_MAX + 32];
    fprintf(out, "cumemtrace check: suppressions used: %zu of %zu\n", used, s->n);
    if (used) {
        fprintf(out, "  %11s  %10s  suppression\n", "allocations", "bytes");
        for (size_t i = 0; i < s->n; i++) {
            const struct cmt_suppression *x = &s->items[i];
            if (!x->allocations)
                continue;
            cmt_format_size(x->bytes, size, sizeof size);
            snprintf(where, sizeof where, x->is_default ? "%s list, line %u" : "%s:%u", x->source, x->line);
            fprintf(out, "  %11" PRIu64 "  %10s  leak:%s (%s)\n", x->allocations, size, x->pattern, where);
        }
    }
    if (used < s->n) {
        fprintf(out, "cumemtrace check: suppressions not used:\n");
        for (size_t i = 0; i < s->n; i++) {
            const struct cmt_suppression *x = &s->items[i];
            if (x->allocations)
                continue;
            snprintf(where, sizeof where, x->is_default ? "%s list, line %u" : "%s:%u", x->source, x->line);
            fprintf(out, "  leak:%s (%s)\n", x->pattern, where);
        }
    }
}

static void print_total(const struct cmt_check *c, FILE *out)
{
    if (c->n_traces == 1)
        return;
    if (c->n_traces == 0) {
        fprintf(out, "cumemtrace check: no traces\n");
        return;
    }
    fprintf(out, "cumemtrace check: %zu traces: %zu passed, %zu failed, %zu in error\n", c->n_traces, c->n_pass,
            c->n_fail, c->n_error);
}

void cmt_check_render_text(const struct cmt_check *c, FILE *out)
{
    char line[2048];
    for (size_t i = 0; i < c->n_traces; i++) {
        const struct cmt_check_trace *t = c->traces[i];
        for (size_t k = 0; k < t->n_findings; k++)
            cmt_check_print_finding(c, t, &t->findings[k], out);
        if (t->opened) {
            for (size_t k = 0; k < t->report.n_warnings; k++)
                fprintf(out, "%s: note: %s\n", cmt_esc(t->path), cmt_esc(t->report.warnings[k]));
            for (size_t k = 0; k < t->n_notes; k++)
                fprintf(out, "%s: note: %s\n", cmt_esc(t->path), cmt_esc(t->notes[k]));
            if (t->status == CMT_TRACE_FAIL && t->error[0])
                fprintf(out, "%s: note: %s\n", cmt_esc(t->path), cmt_esc(t->error));
        }
        cmt_check_trace_result_line(c, t, line, sizeof line);
        fprintf(out, "cumemtrace check: %s\n", cmt_esc(line));
    }
    if (c->opt->print_suppressions)
        cmt_check_print_suppressions(c, out);
    print_total(c, out);
}

void cmt_check_render_summary(const struct cmt_check *c, FILE *out)
{
    char line[2048];
    for (size_t i = 0; i < c->n_traces; i++) {
        cmt_check_trace_result_line(c, c->traces[i], line, sizeof line);
        fprintf(out, "cumemtrace check: %s\n", cmt_esc(line));
    }
    print_total(c, out);
}
