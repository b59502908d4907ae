/* SPDX-License-Identifier: MIT */
/* Phases and steps in `cumemtrace report`, text and JSON (phases_report.h). */
#include "phases_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "size_parse.h"
#include "render_parts.h"
#include "units.h"
#include "text_escape.h"
#include "xla_names.h"


/* The names are the model's (phases_view.c), so that models built on the
 * phases (what-if's failures) word them the same way. */
static void step_name(const struct cmt_report *r, uint32_t step, char *buf, size_t len)
{
    cmt_phases_view_step_name(r->phases, step, buf, len);
}

static void node_path(const struct cmt_report *r, uint32_t node, uint32_t step, char *buf, size_t len)
{
    cmt_phases_view_node_path(r->phases, node, step, buf, len);
}

/* The compile range w fell in (XLA's compiler, phases.h: where names its
 * outermost range); CMT_PHASE_NONE when none. */
static uint32_t compile_node(const struct cmt_phases_view *pv, const struct cmt_phase_where *w)
{
    if (w->node == CMT_PHASE_NONE || w->node >= pv->n_nodes || pv->nodes[w->node].name == CMT_PHASE_STEP_NAME)
        return CMT_PHASE_NONE;
    const char *name = pv->node_name[w->node];
    return name && cmt_xla_compile_range_name(name, strlen(name)) ? w->node : CMT_PHASE_NONE;
}

/* The module XLA was compiling, as its range names it ("module=jit_f,");
 * false when it names none. */
static bool compile_module(const struct cmt_phases_view *pv, uint32_t node, char *buf, size_t len)
{
    const char *m = strstr(pv->node_name[node], "module=");
    size_t n = m ? strcspn(m += strlen("module="), ",#") : 0;
    if (n)
        snprintf(buf, len, "%.*s", (int)n, m);
    return n != 0;
}

void cmt_phases_where_text(const struct cmt_report *r, const struct cmt_phase_where *w, char *buf, size_t len)
{
    const struct cmt_phases_view *pv = r->phases;
    uint32_t c = compile_node(pv, w);
    if (c == CMT_PHASE_NONE) {
        cmt_phases_view_where_text(pv, w, buf, len);
        return;
    }
    /* the program's phase around the compilation, then what was compiled */
    struct cmt_phase_where outer = *w;
    outer.node = pv->nodes[c].parent;
    cmt_phases_view_where_text(pv, &outer, buf, len);
    char module[256];
    bool named = compile_module(pv, c, module, sizeof module);
    size_t pos = strlen(buf);
    snprintf(buf + pos, len - pos, "%sduring XLA's compilation %s%s%s", pos ? ", " : "(no phase of the program open), ",
             named ? "of " : "(", named ? module : pv->node_name[c], named ? "" : ")");
}

/* ---- peaks and failures -------------------------------------------------------------- */

void cmt_phases_text_peak(const struct cmt_report *r, const struct cmt_account_view *v, FILE *out)
{
    if (!v->peak_phase)
        return;
    char buf[1536];
    cmt_phases_where_text(r, v->peak_phase, buf, sizeof buf);
    fprintf(out, "  phase at the peak: %s\n", buf[0] ? cmt_esc(buf) : "(none open)");
}

void cmt_phases_text_failure(const struct cmt_report *r, size_t failure_index, const char *indent, FILE *out)
{
    const struct cmt_phases_view *pv = r->phases;
    if (!pv)
        return;
    char buf[1536] = "";
    if (failure_index < CMT_MAX_FAILURES_KEPT && pv->at_failure[failure_index])
        cmt_phases_where_text(r, &pv->failure[failure_index], buf, sizeof buf);
    fprintf(out, "%sin phase: %s\n", indent, buf[0] ? cmt_esc(buf) : "(none open)");
}

static void json_where(const struct cmt_report *r, const struct cmt_phase_where *w, struct cmt_json *j)
{
    char buf[1536];
    cmt_phases_where_text(r, w, buf, sizeof buf);
    cmt_json_begin_object(j);
    cmt_json_key(j, "path");
    cmt_json_string(j, buf);
    uint32_t c = compile_node(r->phases, w);
    uint32_t node = c == CMT_PHASE_NONE ? w->node : r->phases->nodes[c].parent;
    cmt_json_key(j, "phase");
    if (node != CMT_PHASE_NONE) {
        char path[1024];
        node_path(r, node, 0, path, sizeof path);
        cmt_json_string(j, path);
    } else {
        cmt_json_null(j);
    }
    cmt_json_key(j, "xla_compilation");
    if (c != CMT_PHASE_NONE) {
        char module[256];
        cmt_json_begin_object(j);
        cmt_json_key(j, "module");
        if (compile_module(r->phases, c, module, sizeof module))
            cmt_json_string(j, module);
        else
            cmt_json_null(j);
        cmt_json_key(j, "range");
        cmt_json_string(j, r->phases->node_name[c]);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    cmt_json_key(j, "step_index");
    if (w->step)
        cmt_json_uint(j, w->step - 1);
    else
        cmt_json_null(j);
    cmt_json_end_object(j);
}

void cmt_phases_json_peak(const struct cmt_report *r, const struct cmt_account_view *v, struct cmt_json *j)
{
    cmt_json_key(j, "peak_phase");
    if (v->peak_phase)
        json_where(r, v->peak_phase, j);
    else
        cmt_json_null(j);
}

void cmt_phases_json_failure(const struct cmt_report *r, size_t failure_index, struct cmt_json *j)
{
    const struct cmt_phases_view *pv = r->phases;
    cmt_json_key(j, "phase");
    if (pv && failure_index < CMT_MAX_FAILURES_KEPT && pv->at_failure[failure_index])
        json_where(r, &pv->failure[failure_index], j);
    else
        cmt_json_null(j);
}

/* ---- phases, sorted for the text ------------------------------------------------------------ */

static const struct cmt_phase_node *sort_nodes_base;

static int node_cmp(const void *pa, const void *pb)
{
    const struct cmt_phase_node *a = &sort_nodes_base[*(const uint32_t *)pa];
    const struct cmt_phase_node *b = &sort_nodes_base[*(const uint32_t *)pb];
    if (a->peak != b->peak)
        return a->peak < b->peak ? 1 : -1;
    if (a->alloc_bytes != b->alloc_bytes)
        return a->alloc_bytes < b->alloc_bytes ? 1 : -1;
    return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

static void print_frames_short(const struct cmt_report *r, FILE *out, uint64_t stack, const char *indent)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    if (sf->n == 0) {
        fprintf(out, "%s(no stack recorded)\n", indent);
        return;
    }
    size_t limit = r->opt->max_frames && r->opt->max_frames < sf->n ? r->opt->max_frames : sf->n;
    char buf[1024];
    for (size_t i = 0; i < limit; i++) {
        cmt_frame_describe(&sf->frames[i], buf, sizeof buf);
        fprintf(out, "%s%s\n", indent, cmt_esc(buf));
    }
}

static void print_phases(const struct cmt_report *r, FILE *out)
{
    size_t n_nodes = r->phases->n_nodes;
    const struct cmt_phase_node *nodes = r->phases->nodes;
    uint32_t *order = calloc(n_nodes ? n_nodes : 1, sizeof *order);
    if (!order)
        return;
    size_t n = 0;
    for (uint32_t i = 0; i < n_nodes; i++)
        if (nodes[i].name != CMT_PHASE_STEP_NAME) /* steps have their own section */
            order[n++] = i;
    sort_nodes_base = nodes;
    qsort(order, n, sizeof *order, node_cmp);
    size_t shown = n < r->opt->top ? n : r->opt->top;
    fprintf(out, "\nPhases (device-resident bytes, every step together): %zu", n);
    if (shown < n)
        fprintf(out, ", top %zu by peak (--top)", shown);
    fprintf(out, "\n");
    char path[1024], b1[32], b2[32], b3[32];
    for (size_t i = 0; i < shown; i++) {
        const struct cmt_phase_node *nd = &nodes[order[i]];
        node_path(r, order[i], 0, path, sizeof path);
        fprintf(out, "  %s%s: peak %s", cmt_esc(path), nd->global ? " (process-wide range)" : "",
                cmt_size_str(nd->peak, b1, sizeof b1));
        if (nd->peak_step) {
            char s[256];
            step_name(r, nd->peak_step, s, sizeof s);
            fprintf(out, " in %s", cmt_esc(s));
        }
        fprintf(out, ", entered %" PRIu64 " %s\n", nd->instances, nd->instances == 1 ? "time" : "times");
        fprintf(out, "      allocated %s in %" PRIu64 "; left live at its end: %s in %" PRIu64 "\n",
                cmt_size_str(nd->alloc_bytes, b2, sizeof b2), nd->alloc_count, cmt_size_str(nd->retained_bytes, b3, sizeof b3),
                nd->retained_count);
        if (nd->failures)
            fprintf(out, "      failed allocations: %" PRIu64 "\n", nd->failures);
    }
    /* Open at the end: every one, however small. */
    size_t open = 0;
    for (uint32_t i = 0; i < n_nodes; i++)
        open += nodes[i].open_at_end != 0;
    if (open) {
        /* Why they are open decides what the user does next. */
        const char *why = r->opt->at_set          ? "--at stopped the replay inside them"
                          : !r->trace.clean_exit ? "the program crashed or was killed inside them"
                                                 : "never closed, though the process exited normally: a range its "
                                                   "code or a library pushed and never popped";
        fprintf(out, "  open at the end (%s):\n", why);
        for (uint32_t i = 0; i < n_nodes; i++) {
            if (!nodes[i].open_at_end)
                continue;
            node_path(r, i, 0, path, sizeof path);
            fprintf(out, "    %s: %" PRIu64 " open; what %s allocated and is still live: %s in %" PRIu64 "\n",
                    cmt_esc(path), nodes[i].open_at_end, nodes[i].open_at_end == 1 ? "it" : "they",
                    cmt_size_str(nodes[i].open_retained_bytes, b1, sizeof b1), nodes[i].open_retained_count);
        }
    }
    uint64_t marks = r->phases->marks, unmatched = r->phases->unmatched;
    if (marks)
        fprintf(out, "  marks: %" PRIu64 "\n", marks);
    if (unmatched)
        fprintf(out, "  range ends with no open range to close: %" PRIu64 "\n", unmatched);
    free(order);
}

#define STEPS_SHOWN_EACH_END 10

static void print_step_row(const struct cmt_report *r, FILE *out, size_t i, const struct cmt_phase_step *s)
{
    char name[256], b1[32], b2[32], b3[32], b4[32];
    step_name(r, (uint32_t)i + 1, name, sizeof name);
    fprintf(out, "    %-16s %10s  live at end %10s  peak %10s  allocated %10s in %" PRIu64
                 ", left live %s in %" PRIu64 "%s\n",
            cmt_esc(name), CMT_DURATION(cmt_report_rel_ns(r, s->end_ts)), cmt_size_str(s->live_at_end, b1, sizeof b1),
            cmt_size_str(s->peak, b2, sizeof b2), cmt_size_str(s->alloc_bytes, b3, sizeof b3), s->alloc_count,
            cmt_size_str(s->retained_bytes, b4, sizeof b4), s->retained_count,
            s->closed ? "" : s->from_call ? " (ends with the trace)" : " (open at the end)");
}

static void print_steps(const struct cmt_report *r, FILE *out)
{
    size_t n = r->phases->n_steps;
    const struct cmt_phase_step *steps = r->phases->steps;
    if (!n)
        return;
    size_t top = 0;
    for (size_t i = 1; i < n; i++)
        if (steps[i].peak > steps[top].peak)
            top = i;
    char name[256], b1[32];
    step_name(r, (uint32_t)top + 1, name, sizeof name);
    fprintf(out, "\nSteps: %zu; the highest peak in %s (%s)\n", n, cmt_esc(name),
            cmt_size_str(steps[top].peak, b1, sizeof b1));
    for (size_t i = 0; i < n; i++) {
        if (n > 2 * STEPS_SHOWN_EACH_END && i == STEPS_SHOWN_EACH_END) {
            fprintf(out, "    ... %zu more (the JSON report lists every step)\n", n - 2 * STEPS_SHOWN_EACH_END);
            i = n - STEPS_SHOWN_EACH_END;
        }
        print_step_row(r, out, i, &steps[i]);
    }
    const struct cmt_growth_verdict total = r->phases->total_growth;
    char rate[32];
    const char *what = r->phases->growth_in_tensors ? "PyTorch's tensors' bytes" : "live bytes";
    if (total.candidate) {
        cmt_format_size(total.rate > 0 ? (uint64_t)(total.rate + 0.5) : 0, rate, sizeof rate);
        fprintf(out, "  %s at step ends grow: +%s per step (trend %.2f over %zu step ends)\n", what, rate,
                total.trend, total.n);
    } else if (total.n < CMT_GROWTH_MIN_SAMPLES) {
        fprintf(out, "  growth per step: %zu step %s, too few to judge (%d needed)\n", total.n,
                total.n == 1 ? "end" : "ends", CMT_GROWTH_MIN_SAMPLES);
    } else {
        fprintf(out, "  %s at step ends do not keep rising (%zu step ends)\n", what, total.n);
    }
    if (!r->phases->growth_built)
        return;
    size_t n_rows = r->phases->n_growth;
    const struct cmt_step_growth_row *rows = r->phases->growth;
    if (n_rows) {
        size_t shown = n_rows < r->opt->top ? n_rows : r->opt->top;
        fprintf(out, "  call sites growing step by step: %zu\n", n_rows);
        for (size_t i = 0; i < shown; i++) {
            const struct cmt_step_growth_row *g = &rows[i];
            cmt_format_size(g->verdict.rate > 0 ? (uint64_t)(g->verdict.rate + 0.5) : 0, rate, sizeof rate);
            fprintf(out, "    +%s per step%s: %s live at the end; the site allocated %" PRIu64 " times, freed %" PRIu64
                         " (trend %.2f over %zu step ends)\n",
                    rate, g->tensors ? " in tensors" : "", cmt_size_str(g->live_bytes, b1, sizeof b1), g->allocs,
                    g->frees, g->verdict.trend, g->verdict.n);
            print_frames_short(r, out, g->stack, "        ");
        }
    }
}

void cmt_phases_render_text(const struct cmt_report *r, FILE *out)
{
    if (!r->phases)
        return;
    print_phases(r, out);
    print_steps(r, out);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

/* The phases list; at most max rows (0: all), the rest summed up in
 * "list_omitted" (the HTML page's model: a trace can name hundreds of
 * thousands of ranges, XLA's do, and the page shows the list 100 rows at a
 * time). */
static void json_nodes(const struct cmt_report *r, struct cmt_json *j, size_t max)
{
    size_t n_nodes = r->phases->n_nodes;
    const struct cmt_phase_node *nodes = r->phases->nodes;
    size_t shown = max && n_nodes > max ? max : n_nodes;
    char path[1024], name[256];
    cmt_json_key(j, "list");
    cmt_json_begin_array(j);
    for (uint32_t i = 0; i < shown; i++) {
        const struct cmt_phase_node *nd = &nodes[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "index");
        cmt_json_uint(j, i);
        cmt_json_key(j, "parent");
        if (nd->parent == CMT_PHASE_NONE)
            cmt_json_null(j);
        else
            cmt_json_uint(j, nd->parent);
        node_path(r, i, 0, path, sizeof path);
        cmt_json_key(j, "path");
        cmt_json_string(j, path);
        cmt_json_key(j, "name");
        if (nd->name == CMT_PHASE_STEP_NAME) {
            cmt_json_null(j);
        } else {
            snprintf(name, sizeof name, "%s", r->phases->node_name[i]);
            cmt_json_string(j, name);
        }
        cmt_json_key(j, "step");
        cmt_json_bool(j, nd->name == CMT_PHASE_STEP_NAME);
        cmt_json_key(j, "domain");
        cmt_json_string(j, r->phases->node_domain[i]);
        cmt_json_key(j, "process_wide");
        cmt_json_bool(j, nd->global);
        cmt_json_key(j, "instances");
        cmt_json_uint(j, nd->instances);
        cmt_json_key(j, "open_at_end");
        cmt_json_uint(j, nd->open_at_end);
        cmt_json_key(j, "open_left_live_bytes");
        cmt_json_uint(j, nd->open_retained_bytes);
        cmt_json_key(j, "open_left_live_count");
        cmt_json_uint(j, nd->open_retained_count);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, nd->peak);
        cmt_json_key(j, "peak_time_ns");
        cmt_json_uint(j, nd->peak_ts ? cmt_report_rel_ns(r, nd->peak_ts) : 0);
        cmt_json_key(j, "peak_step_index");
        if (nd->peak_step)
            cmt_json_uint(j, nd->peak_step - 1);
        else
            cmt_json_null(j);
        cmt_json_key(j, "allocated_bytes");
        cmt_json_uint(j, nd->alloc_bytes);
        cmt_json_key(j, "allocated_count");
        cmt_json_uint(j, nd->alloc_count);
        cmt_json_key(j, "left_live_bytes");
        cmt_json_uint(j, nd->retained_bytes);
        cmt_json_key(j, "left_live_count");
        cmt_json_uint(j, nd->retained_count);
        cmt_json_key(j, "failures");
        cmt_json_uint(j, nd->failures);
        cmt_json_key(j, "total_time_ns");
        cmt_json_uint(j, nd->total_ns);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    if (!max)
        return;
    uint64_t instances = 0, allocated = 0, left_live = 0, failures = 0;
    for (size_t i = shown; i < n_nodes; i++) {
        instances += nodes[i].instances;
        allocated += nodes[i].alloc_bytes;
        left_live += nodes[i].retained_bytes;
        failures += nodes[i].failures;
    }
    cmt_json_key(j, "list_omitted");
    cmt_json_begin_object(j);
    cmt_json_key(j, "phases");
    cmt_json_uint(j, n_nodes - shown);
    cmt_json_key(j, "instances");
    cmt_json_uint(j, instances);
    cmt_json_key(j, "allocated_bytes");
    cmt_json_uint(j, allocated);
    cmt_json_key(j, "left_live_bytes");
    cmt_json_uint(j, left_live);
    cmt_json_key(j, "failures");
    cmt_json_uint(j, failures);
    cmt_json_end_object(j);
}

static void json_steps(const struct cmt_report *r, struct cmt_json *j)
{
    size_t n = r->phases->n_steps;
    const struct cmt_phase_step *steps = r->phases->steps;
    char name[256];
    cmt_json_key(j, "steps");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const struct cmt_phase_step *s = &steps[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "name");
        step_name(r, (uint32_t)i + 1, name, sizeof name);
        cmt_json_string(j, name);
        cmt_json_key(j, "number");
        cmt_json_uint(j, s->number);
        cmt_json_key(j, "source");
        cmt_json_string(j, s->from_call ? "cumemtrace_step" : "range");
        cmt_json_key(j, "closed");
        cmt_json_bool(j, s->closed);
        cmt_json_key(j, "start_time_ns");
        cmt_json_uint(j, cmt_report_rel_ns(r, s->start_ts));
        cmt_json_key(j, "end_time_ns");
        cmt_json_uint(j, cmt_report_rel_ns(r, s->end_ts));
        cmt_json_key(j, "live_at_end_bytes");
        cmt_json_uint(j, s->live_at_end);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, s->peak);
        cmt_json_key(j, "allocated_bytes");
        cmt_json_uint(j, s->alloc_bytes);
        cmt_json_key(j, "allocated_count");
        cmt_json_uint(j, s->alloc_count);
        cmt_json_key(j, "left_live_bytes");
        cmt_json_uint(j, s->retained_bytes);
        cmt_json_key(j, "left_live_count");
        cmt_json_uint(j, s->retained_count);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void json_growth_verdict(struct cmt_json *j, const struct cmt_growth_verdict *v)
{
    cmt_json_key(j, "growing");
    cmt_json_bool(j, v->candidate);
    /* whole bytes: a double in the JSON keeps 6 digits, and a leak per step
     * is a whole number of bytes */
    cmt_json_key(j, "rate_bytes_per_step");
    cmt_json_uint(j, v->candidate && v->rate > 0 ? (uint64_t)(v->rate + 0.5) : 0);
    cmt_json_key(j, "trend");
    cmt_json_double(j, v->trend);
    cmt_json_key(j, "samples");
    cmt_json_uint(j, v->n);
}

static void json_step_growth(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_growth_verdict total = r->phases->total_growth;
    cmt_json_key(j, "step_growth");
    cmt_json_begin_object(j);
    cmt_json_key(j, "measure");
    cmt_json_string(j, r->phases->growth_in_tensors ? "tensors" : "device");
    json_growth_verdict(j, &total);
    size_t n_rows = r->phases->n_growth;
    const struct cmt_step_growth_row *rows = r->phases->growth;
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; rows && i < n_rows; i++) {
        const struct cmt_step_growth_row *g = &rows[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "measure");
        cmt_json_string(j, g->tensors ? "tensors" : "device");
        json_growth_verdict(j, &g->verdict);
        cmt_json_key(j, "live_bytes");
        cmt_json_uint(j, g->live_bytes);
        cmt_json_key(j, "allocations");
        cmt_json_uint(j, g->allocs);
        cmt_json_key(j, "frees");
        cmt_json_uint(j, g->frees);
        cmt_json_key(j, "stack_id");
        cmt_json_uint(j, g->stack);
        const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, g->stack);
        cmt_json_key(j, "frames");
        cmt_json_begin_array(j);
        char buf[1024];
        for (size_t k = 0; k < sf->n; k++) {
            cmt_frame_describe(&sf->frames[k], buf, sizeof buf);
            cmt_json_string(j, buf);
        }
        cmt_json_end_array(j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void render_json(const struct cmt_report *r, struct cmt_json *j, size_t max_phases)
{
    const struct cmt_phases_view *p = r->phases;
    cmt_json_key(j, "phases");
    cmt_json_begin_object(j);
    cmt_json_key(j, "recorded");
    cmt_json_bool(j, p != NULL);
    if (p) {
        json_nodes(r, j, max_phases);
        json_steps(r, j);
        json_step_growth(r, j);
        cmt_json_key(j, "marks");
        cmt_json_uint(j, p->marks);
        cmt_json_key(j, "unmatched_ends");
        cmt_json_uint(j, p->unmatched);
    }
    cmt_json_end_object(j);
}

void cmt_phases_render_json(const struct cmt_report *r, struct cmt_json *j)
{
    render_json(r, j, 0);
}

void cmt_phases_render_page_json(const struct cmt_report *r, struct cmt_json *j)
{
    render_json(r, j, CMT_PAGE_PHASES);
}
