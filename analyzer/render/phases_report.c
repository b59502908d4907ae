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

static const struct cmt_phases *phases_of(const struct cmt_report *r)
{
    const struct cmt_phases *p = r->analysis->phases;
    return cmt_phases_any(p) ? p : NULL;
}

static void append(char *buf, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + 1 >= len)
        return;
    if (n > len - 1 - *pos)
        n = len - 1 - *pos;
    memcpy(buf + *pos, s, n);
    *pos += n;
    buf[*pos] = '\0';
}

/* A step's name: its range's, or "step N" for cumemtrace_step. */
static void step_name(const struct cmt_report *r, uint32_t step, char *buf, size_t len)
{
    size_t n;
    const struct cmt_phase_step *steps = cmt_phases_steps(r->analysis->phases, &n);
    if (!step || step > n) {
        snprintf(buf, len, "?");
        return;
    }
    const struct cmt_phase_step *s = &steps[step - 1];
    if (s->from_call || !s->name)
        snprintf(buf, len, "step %" PRIu64, s->number);
    else
        snprintf(buf, len, "%s", cmt_model_string(&r->analysis->model, s->name));
}

static void node_name(const struct cmt_report *r, const struct cmt_phase_node *n, uint32_t step, char *buf,
                      size_t len)
{
    const struct cmt_trace_model *m = &r->analysis->model;
    if (n->name == CMT_PHASE_STEP_NAME) {
        if (step)
            step_name(r, step, buf, len);
        else
            snprintf(buf, len, "<step>");
    } else if (n->name == 0) {
        snprintf(buf, len, "(unnamed)");
    } else {
        snprintf(buf, len, "%s", cmt_model_string(m, n->name));
    }
    if (n->domain) {
        size_t pos = strlen(buf);
        append(buf, len, &pos, " [");
        append(buf, len, &pos, cmt_model_string(m, n->domain));
        append(buf, len, &pos, "]");
    }
}

/* The path of node, root first; step names the step marker (0: "<step>"). */
static void node_path(const struct cmt_report *r, uint32_t node, uint32_t step, char *buf, size_t len)
{
    size_t n_nodes;
    const struct cmt_phase_node *nodes = cmt_phases_nodes(r->analysis->phases, &n_nodes);
    uint32_t chain[64];
    size_t depth = 0;
    bool cut = false;
    for (uint32_t k = node; k != CMT_PHASE_NONE && k < n_nodes; k = nodes[k].parent) {
        if (depth == 64) {
            cut = true;
            break;
        }
        chain[depth++] = k;
    }
    size_t pos = 0;
    buf[0] = '\0';
    if (cut)
        append(buf, len, &pos, "... > ");
    for (size_t i = depth; i-- > 0;) {
        char name[256];
        node_name(r, &nodes[chain[i]], step, name, sizeof name);
        append(buf, len, &pos, name);
        if (i)
            append(buf, len, &pos, " > ");
    }
}

void cmt_phases_where_text(const struct cmt_report *r, const struct cmt_phase_where *w, char *buf, size_t len)
{
    size_t n_nodes;
    const struct cmt_phase_node *nodes = cmt_phases_nodes(r->analysis->phases, &n_nodes);
    buf[0] = '\0';
    size_t pos = 0;
    bool step_in_path = false;
    for (uint32_t k = w->node; k != CMT_PHASE_NONE && k < n_nodes; k = nodes[k].parent)
        step_in_path = step_in_path || nodes[k].name == CMT_PHASE_STEP_NAME;
    if (w->step && !step_in_path) {
        char s[256];
        step_name(r, w->step, s, sizeof s);
        append(buf, len, &pos, s);
    }
    if (w->node != CMT_PHASE_NONE) {
        char path[1024];
        node_path(r, w->node, w->step, path, sizeof path);
        if (pos)
            append(buf, len, &pos, " > ");
        append(buf, len, &pos, path);
    }
    if (w->global != CMT_PHASE_NONE) {
        char g[256];
        node_name(r, &nodes[w->global], 0, g, sizeof g);
        append(buf, len, &pos, pos ? " (in range " : "(in range ");
        append(buf, len, &pos, g);
        append(buf, len, &pos, ")");
    }
}

/* ---- peaks and failures -------------------------------------------------------------- */

static bool peak_where(const struct cmt_report *r, const struct cmt_account *acc, struct cmt_phase_where *w)
{
    const struct cmt_phases *p = phases_of(r);
    return p && acc->cls == CMT_CLASS_DEVICE && cmt_phases_at_peak(p, acc->device, w);
}

void cmt_phases_text_peak(const struct cmt_report *r, const struct cmt_account *acc, FILE *out)
{
    struct cmt_phase_where w;
    if (!peak_where(r, acc, &w))
        return;
    char buf[1536];
    cmt_phases_where_text(r, &w, buf, sizeof buf);
    fprintf(out, "  phase at the peak: %s\n", buf[0] ? buf : "(none open)");
}

void cmt_phases_text_failure(const struct cmt_report *r, size_t failure_index, const char *indent, FILE *out)
{
    const struct cmt_phases *p = phases_of(r);
    if (!p)
        return;
    struct cmt_phase_where w;
    char buf[1536] = "";
    if (cmt_phases_at_failure(p, failure_index, &w))
        cmt_phases_where_text(r, &w, buf, sizeof buf);
    fprintf(out, "%sin phase: %s\n", indent, buf[0] ? buf : "(none open)");
}

static void json_where(const struct cmt_report *r, const struct cmt_phase_where *w, struct cmt_json *j)
{
    char buf[1536];
    cmt_phases_where_text(r, w, buf, sizeof buf);
    cmt_json_begin_object(j);
    cmt_json_key(j, "path");
    cmt_json_string(j, buf);
    cmt_json_key(j, "phase");
    if (w->node != CMT_PHASE_NONE) {
        char path[1024];
        node_path(r, w->node, 0, path, sizeof path);
        cmt_json_string(j, path);
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

void cmt_phases_json_peak(const struct cmt_report *r, const struct cmt_account *acc, struct cmt_json *j)
{
    struct cmt_phase_where w;
    cmt_json_key(j, "peak_phase");
    if (peak_where(r, acc, &w))
        json_where(r, &w, j);
    else
        cmt_json_null(j);
}

void cmt_phases_json_failure(const struct cmt_report *r, size_t failure_index, struct cmt_json *j)
{
    const struct cmt_phases *p = phases_of(r);
    struct cmt_phase_where w;
    cmt_json_key(j, "phase");
    if (p && cmt_phases_at_failure(p, failure_index, &w))
        json_where(r, &w, j);
    else
        cmt_json_null(j);
}

/* ---- per-step growth of call sites ------------------------------------------------------ */

struct step_growth_row {
    uint64_t stack; /* canonical */
    struct cmt_growth_verdict verdict;
    uint64_t live_bytes, allocs, frees;
};

static int step_growth_cmp(const void *pa, const void *pb)
{
    const struct step_growth_row *a = pa, *b = pb;
    if (a->verdict.rate != b->verdict.rate)
        return a->verdict.rate < b->verdict.rate ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

struct canon_ref {
    uint64_t canon;
    uint32_t stack;
};

static int canon_ref_cmp(const void *pa, const void *pb)
{
    const struct canon_ref *a = pa, *b = pb;
    if (a->canon != b->canon)
        return a->canon < b->canon ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The call sites whose live bytes at step ends keep rising (growth.h, with
 * the step as the unit of time: the rate is bytes per step). */
static struct step_growth_row *build_step_growth(const struct cmt_report *r, size_t *n_rows)
{
    const struct cmt_phases *p = r->analysis->phases;
    const struct cmt_replay *rp = &r->analysis->replay;
    const uint32_t *steps;
    const uint64_t *total;
    size_t n = cmt_phases_step_samples(p, &steps, &total);
    *n_rows = 0;
    struct canon_ref *refs = calloc(rp->n_active ? rp->n_active : 1, sizeof *refs);
    struct step_growth_row *rows = calloc(rp->n_active ? rp->n_active : 1, sizeof *rows);
    if (!refs || !rows) {
        free(refs);
        free(rows);
        return NULL;
    }
    size_t n_refs = 0;
    for (size_t i = 0; i < rp->n_active; i++) {
        uint32_t s = rp->active_sites[i];
        if (cmt_phases_site_step_samples(p, s))
            refs[n_refs++] = (struct canon_ref){cmt_frames_canonical(r->frames, s), s};
    }
    qsort(refs, n_refs, sizeof *refs, canon_ref_cmp);
    uint64_t v[CMT_STEP_SAMPLES], t[CMT_STEP_SAMPLES];
    for (size_t i = 0; i < n; i++)
        t[i] = (uint64_t)steps[i] * 1000000000ull; /* growth.c's rate per second is then per step */
    for (size_t i = 0, end; i < n_refs; i = end) {
        memset(v, 0, sizeof v);
        uint64_t live = 0, allocs = 0, frees = 0;
        for (end = i; end < n_refs && refs[end].canon == refs[i].canon; end++) {
            const uint64_t *s = cmt_phases_site_step_samples(p, refs[end].stack);
            for (size_t k = 0; k < n; k++)
                v[k] += s[k];
            live += rp->sites[refs[end].stack].live_bytes;
            allocs += rp->sites[refs[end].stack].allocs;
            frees += rp->sites[refs[end].stack].frees;
        }
        struct cmt_growth_verdict verdict;
        cmt_growth_evaluate(v, t, n, allocs, &verdict);
        if (verdict.candidate)
            rows[(*n_rows)++] = (struct step_growth_row){refs[i].canon, verdict, live, allocs, frees};
    }
    free(refs);
    qsort(rows, *n_rows, sizeof *rows, step_growth_cmp);
    return rows;
}

static void total_step_growth(const struct cmt_report *r, struct cmt_growth_verdict *verdict)
{
    const uint32_t *steps;
    const uint64_t *total;
    size_t n = cmt_phases_step_samples(r->analysis->phases, &steps, &total);
    uint64_t t[CMT_STEP_SAMPLES];
    for (size_t i = 0; i < n; i++)
        t[i] = (uint64_t)steps[i] * 1000000000ull;
    /* the total is one "site" that allocates every step */
    cmt_growth_evaluate(total, t, n, UINT64_MAX, verdict);
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
        fprintf(out, "%s%s\n", indent, buf);
    }
}

static void print_phases(const struct cmt_report *r, FILE *out)
{
    size_t n_nodes;
    const struct cmt_phase_node *nodes = cmt_phases_nodes(r->analysis->phases, &n_nodes);
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
        fprintf(out, "  %s%s: peak %s", path, nd->global ? " (process-wide range)" : "",
                cmt_size_str(nd->peak, b1, sizeof b1));
        if (nd->peak_step) {
            char s[256];
            step_name(r, nd->peak_step, s, sizeof s);
            fprintf(out, " in %s", s);
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
        fprintf(out, "  open at the end (the program crashed or was killed inside them, or --at stopped the replay there):\n");
        for (uint32_t i = 0; i < n_nodes; i++) {
            if (!nodes[i].open_at_end)
                continue;
            node_path(r, i, 0, path, sizeof path);
            fprintf(out, "    %s: %" PRIu64 " open; what %s allocated and is still live: %s in %" PRIu64 "\n",
                    path, nodes[i].open_at_end, nodes[i].open_at_end == 1 ? "it" : "they",
                    cmt_size_str(nodes[i].open_retained_bytes, b1, sizeof b1), nodes[i].open_retained_count);
        }
    }
    uint64_t marks = cmt_phases_marks(r->analysis->phases), unmatched = cmt_phases_unmatched(r->analysis->phases);
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
            name, CMT_DURATION(cmt_report_rel_ns(r, s->end_ts)), cmt_size_str(s->live_at_end, b1, sizeof b1),
            cmt_size_str(s->peak, b2, sizeof b2), cmt_size_str(s->alloc_bytes, b3, sizeof b3), s->alloc_count,
            cmt_size_str(s->retained_bytes, b4, sizeof b4), s->retained_count,
            s->closed ? "" : s->from_call ? " (ends with the trace)" : " (open at the end)");
}

static void print_steps(const struct cmt_report *r, FILE *out)
{
    size_t n;
    const struct cmt_phase_step *steps = cmt_phases_steps(r->analysis->phases, &n);
    if (!n)
        return;
    size_t top = 0;
    for (size_t i = 1; i < n; i++)
        if (steps[i].peak > steps[top].peak)
            top = i;
    char name[256], b1[32];
    step_name(r, (uint32_t)top + 1, name, sizeof name);
    fprintf(out, "\nSteps: %zu; the highest peak in %s (%s)\n", n, name, cmt_size_str(steps[top].peak, b1, sizeof b1));
    for (size_t i = 0; i < n; i++) {
        if (n > 2 * STEPS_SHOWN_EACH_END && i == STEPS_SHOWN_EACH_END) {
            fprintf(out, "    ... %zu more (the JSON report lists every step)\n", n - 2 * STEPS_SHOWN_EACH_END);
            i = n - STEPS_SHOWN_EACH_END;
        }
        print_step_row(r, out, i, &steps[i]);
    }
    struct cmt_growth_verdict total;
    total_step_growth(r, &total);
    char rate[32];
    if (total.candidate) {
        cmt_format_size(total.rate > 0 ? (uint64_t)(total.rate + 0.5) : 0, rate, sizeof rate);
        fprintf(out, "  live bytes at step ends grow: +%s per step (trend %.2f over %zu step ends)\n", rate,
                total.trend, total.n);
    } else if (total.n < CMT_GROWTH_MIN_SAMPLES) {
        fprintf(out, "  growth per step: %zu step %s, too few to judge (%d needed)\n", total.n,
                total.n == 1 ? "end" : "ends", CMT_GROWTH_MIN_SAMPLES);
    } else {
        fprintf(out, "  live bytes at step ends do not keep rising (%zu step ends)\n", total.n);
    }
    size_t n_rows;
    struct step_growth_row *rows = build_step_growth(r, &n_rows);
    if (!rows)
        return;
    if (n_rows) {
        size_t shown = n_rows < r->opt->top ? n_rows : r->opt->top;
        fprintf(out, "  call sites growing step by step: %zu\n", n_rows);
        for (size_t i = 0; i < shown; i++) {
            const struct step_growth_row *g = &rows[i];
            cmt_format_size(g->verdict.rate > 0 ? (uint64_t)(g->verdict.rate + 0.5) : 0, rate, sizeof rate);
            fprintf(out, "    +%s per step: %s live at the end; the site allocated %" PRIu64 " times, freed %" PRIu64
                         " (trend %.2f over %zu step ends)\n",
                    rate, cmt_size_str(g->live_bytes, b1, sizeof b1), g->allocs, g->frees, g->verdict.trend, g->verdict.n);
            print_frames_short(r, out, g->stack, "        ");
        }
    }
    free(rows);
}

void cmt_phases_render_text(const struct cmt_report *r, FILE *out)
{
    if (!phases_of(r))
        return;
    print_phases(r, out);
    print_steps(r, out);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void json_nodes(const struct cmt_report *r, struct cmt_json *j)
{
    size_t n_nodes;
    const struct cmt_phase_node *nodes = cmt_phases_nodes(r->analysis->phases, &n_nodes);
    char path[1024], name[256];
    cmt_json_key(j, "list");
    cmt_json_begin_array(j);
    for (uint32_t i = 0; i < n_nodes; i++) {
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
            snprintf(name, sizeof name, "%s", nd->name ? cmt_model_string(&r->analysis->model, nd->name) : "");
            cmt_json_string(j, name);
        }
        cmt_json_key(j, "step");
        cmt_json_bool(j, nd->name == CMT_PHASE_STEP_NAME);
        cmt_json_key(j, "domain");
        cmt_json_string(j, nd->domain ? cmt_model_string(&r->analysis->model, nd->domain) : NULL);
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
}

static void json_steps(const struct cmt_report *r, struct cmt_json *j)
{
    size_t n;
    const struct cmt_phase_step *steps = cmt_phases_steps(r->analysis->phases, &n);
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
    struct cmt_growth_verdict total;
    total_step_growth(r, &total);
    cmt_json_key(j, "step_growth");
    cmt_json_begin_object(j);
    json_growth_verdict(j, &total);
    size_t n_rows = 0;
    struct step_growth_row *rows = build_step_growth(r, &n_rows);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; rows && i < n_rows; i++) {
        const struct step_growth_row *g = &rows[i];
        cmt_json_begin_object(j);
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
    free(rows);
    cmt_json_end_object(j);
}

void cmt_phases_render_json(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_phases *p = phases_of(r);
    cmt_json_key(j, "phases");
    cmt_json_begin_object(j);
    cmt_json_key(j, "recorded");
    cmt_json_bool(j, p != NULL);
    if (p) {
        json_nodes(r, j);
        json_steps(r, j);
        json_step_growth(r, j);
        cmt_json_key(j, "marks");
        cmt_json_uint(j, cmt_phases_marks(p));
        cmt_json_key(j, "unmatched_ends");
        cmt_json_uint(j, cmt_phases_unmatched(p));
    }
    cmt_json_end_object(j);
}
