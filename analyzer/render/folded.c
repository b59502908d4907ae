/* SPDX-License-Identifier: MIT */
#include "render_parts.h"

#include <inttypes.h>
#include <string.h>

#include "frames.h"
#include "text_escape.h"

/* Collapsed stacks for flamegraph.pl, inferno and speedscope
 * (docs/export.md): one line per call stack, frames outermost first joined
 * by ';', a space and the stack's bytes. The first frame names the account
 * ("device 0", "pinned host"), so several devices stay apart and the lines
 * sum exactly to the report's figures. */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

void cmt_folded_frame(const struct cmt_frame *f, char *buf, size_t len)
{
    if (f->function && f->file && f->line > 0)
        snprintf(buf, len, "%s %s:%d", f->function, base_name(f->file), f->line);
    else if (f->function)
        snprintf(buf, len, "%s", f->function);
    else if (f->module && *f->module)
        snprintf(buf, len, "%s+0x%" PRIx64, base_name(f->module), f->module_offset);
    else
        snprintf(buf, len, "0x%" PRIx64, f->ip);
    /* The format's separators (';' between frames, a line per stack) out
     * of names, then every other control character escaped (text_escape.h). */
    for (char *c = buf; *c; c++)
        if (*c == ';' || *c == '\n' || *c == '\r')
            *c = ',';
    if (cmt_text_needs_escape(buf)) {
        char raw[1024];
        snprintf(raw, sizeof raw, "%s", buf);
        cmt_escape_into(raw, buf, len);
    }
}

static void line(const struct cmt_report *r, FILE *out, const char *account, uint64_t stack, uint64_t bytes)
{
    fputs(account, out);
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    char buf[1024];
    for (size_t i = sf->n; i-- > 0;) {
        cmt_folded_frame(&sf->frames[i], buf, sizeof buf);
        fputc(';', out);
        fputs(buf, out);
    }
    if (sf->n == 0)
        fputs(";(no stack)", out);
    fprintf(out, " %" PRIu64 "\n", bytes);
}

static void account_name(const struct cmt_account_figures *a, char *buf, size_t len)
{
    if (a->cls == CMT_CLASS_HOST)
        snprintf(buf, len, "pinned host");
    else if (a->cls == CMT_CLASS_MANAGED)
        snprintf(buf, len, "device %d managed", (int)a->device);
    else
        snprintf(buf, len, "device %d", (int)a->device);
}

void cmt_folded_render(const struct cmt_folded_model *m, FILE *out)
{
    const struct cmt_report *r = m->report;
    char name[64];
    if (m->metric == CMT_FOLDED_PEAK) {
        for (size_t i = 0; i < r->n_accounts; i++) {
            const struct cmt_account_view *v = &r->accounts[i];
            account_name(&v->fig, name, sizeof name);
            for (size_t k = 0; k < v->peak.n_rows; k++) {
                if (!v->peak.rows[k].bytes)
                    continue;
                line(r, out, name, v->peak.rows[k].stack, v->peak.rows[k].bytes);
            }
        }
    } else if (m->metric == CMT_FOLDED_LEAKS) {
        for (size_t k = 0; k < r->n_leaks; k++) {
            const struct cmt_site_row *s = &r->leaks[k];
            if (!cmt_kind_holds_memory(s->kind) || !s->bytes)
                continue;
            line(r, out, "live at exit", s->stack, s->bytes);
        }
    } else {
        for (size_t i = 0; i < r->n_allocated; i++)
            line(r, out, "allocated", r->allocated[i].stack, r->allocated[i].bytes);
    }
}
