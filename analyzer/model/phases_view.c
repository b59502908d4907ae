/* SPDX-License-Identifier: MIT */
/* The phases view of the report model (phases_view.h). */
#include "phases_view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int step_growth_cmp(const void *pa, const void *pb)
{
    const struct cmt_step_growth_row *a = pa, *b = pb;
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

/* The call sites whose live bytes at step ends keep rising, merged by call
 * site. */
static struct cmt_step_growth_row *build_step_growth(const struct cmt_analysis *a, struct cmt_frames *frames,
                                                     size_t *n_rows)
{
    const struct cmt_phases *p = a->phases;
    const struct cmt_replay *rp = &a->replay;
    const uint32_t *steps;
    const uint64_t *total;
    size_t n = cmt_phases_step_samples(p, &steps, &total);
    *n_rows = 0;
    struct canon_ref *refs = calloc(rp->n_active ? rp->n_active : 1, sizeof *refs);
    struct cmt_step_growth_row *rows = calloc(rp->n_active ? rp->n_active : 1, sizeof *rows);
    if (!refs || !rows) {
        free(refs);
        free(rows);
        return NULL;
    }
    size_t n_refs = 0;
    for (size_t i = 0; i < rp->n_active; i++) {
        uint32_t s = rp->active_sites[i];
        if (cmt_phases_site_step_samples(p, s))
            refs[n_refs++] = (struct canon_ref){cmt_frames_canonical(frames, s), s};
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
            rows[(*n_rows)++] = (struct cmt_step_growth_row){refs[i].canon, verdict, live, allocs, frees};
    }
    free(refs);
    qsort(rows, *n_rows, sizeof *rows, step_growth_cmp);
    return rows;
}

static void total_step_growth(const struct cmt_phases *p, struct cmt_growth_verdict *verdict)
{
    const uint32_t *steps;
    const uint64_t *total;
    size_t n = cmt_phases_step_samples(p, &steps, &total);
    uint64_t t[CMT_STEP_SAMPLES];
    for (size_t i = 0; i < n; i++)
        t[i] = (uint64_t)steps[i] * 1000000000ull;
    /* the total is one "site" that allocates every step */
    cmt_growth_evaluate(total, t, n, UINT64_MAX, verdict);
}

int cmt_phases_view_build(struct cmt_phases_view **out, const struct cmt_analysis *a, struct cmt_frames *frames)
{
    *out = NULL;
    const struct cmt_phases *p = a->phases;
    if (!cmt_phases_any(p))
        return 0;
    struct cmt_phases_view *v = calloc(1, sizeof *v);
    if (!v)
        return -1;
    const struct cmt_trace_model *m = &a->model;
    v->nodes = cmt_phases_nodes(p, &v->n_nodes);
    v->steps = cmt_phases_steps(p, &v->n_steps);
    v->node_name = calloc(v->n_nodes + 1, sizeof *v->node_name);
    v->node_domain = calloc(v->n_nodes + 1, sizeof *v->node_domain);
    v->step_name = calloc(v->n_steps + 1, sizeof *v->step_name);
    v->at_failure = calloc(CMT_MAX_FAILURES_KEPT, sizeof *v->at_failure);
    v->failure = calloc(CMT_MAX_FAILURES_KEPT, sizeof *v->failure);
    if (!v->node_name || !v->node_domain || !v->step_name || !v->at_failure || !v->failure) {
        cmt_phases_view_free(v);
        return -1;
    }
    for (size_t i = 0; i < v->n_nodes; i++) {
        const struct cmt_phase_node *n = &v->nodes[i];
        v->node_name[i] = n->name == CMT_PHASE_STEP_NAME ? NULL : n->name ? cmt_model_string(m, n->name) : "";
        v->node_domain[i] = n->domain ? cmt_model_string(m, n->domain) : NULL;
    }
    for (size_t i = 0; i < v->n_steps; i++)
        if (!v->steps[i].from_call && v->steps[i].name)
            v->step_name[i] = cmt_model_string(m, v->steps[i].name);
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        v->at_peak[d] = cmt_phases_at_peak(p, d, &v->peak[d]);
    for (size_t i = 0; i < CMT_MAX_FAILURES_KEPT; i++)
        v->at_failure[i] = cmt_phases_at_failure(p, i, &v->failure[i]);
    total_step_growth(p, &v->total_growth);
    v->growth = build_step_growth(a, frames, &v->n_growth);
    v->growth_built = v->growth != NULL;
    v->marks = cmt_phases_marks(p);
    v->unmatched = cmt_phases_unmatched(p);
    *out = v;
    return 0;
}

void cmt_phases_view_free(struct cmt_phases_view *v)
{
    if (!v)
        return;
    free(v->node_name);
    free(v->node_domain);
    free(v->step_name);
    free(v->at_failure);
    free(v->failure);
    free(v->growth);
    free(v);
}

/* ---- names, as every output words them -------------------------------------- */

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
void cmt_phases_view_step_name(const struct cmt_phases_view *pv, uint32_t step, char *buf, size_t len)
{
    if (!step || step > pv->n_steps) {
        snprintf(buf, len, "?");
        return;
    }
    const char *name = pv->step_name[step - 1];
    if (!name)
        snprintf(buf, len, "step %" PRIu64, pv->steps[step - 1].number);
    else
        snprintf(buf, len, "%s", name);
}

static void node_name(const struct cmt_phases_view *pv, uint32_t node, uint32_t step, char *buf, size_t len)
{
    const struct cmt_phase_node *n = &pv->nodes[node];
    if (n->name == CMT_PHASE_STEP_NAME) {
        if (step)
            cmt_phases_view_step_name(pv, step, buf, len);
        else
            snprintf(buf, len, "<step>");
    } else if (n->name == 0) {
        snprintf(buf, len, "(unnamed)");
    } else {
        snprintf(buf, len, "%s", pv->node_name[node]);
    }
    if (pv->node_domain[node]) {
        size_t pos = strlen(buf);
        append(buf, len, &pos, " [");
        append(buf, len, &pos, pv->node_domain[node]);
        append(buf, len, &pos, "]");
    }
}

/* The path of node, root first; step names the step marker (0: "<step>"). */
void cmt_phases_view_node_path(const struct cmt_phases_view *pv, uint32_t node, uint32_t step, char *buf, size_t len)
{
    size_t n_nodes = pv->n_nodes;
    const struct cmt_phase_node *nodes = pv->nodes;
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
        node_name(pv, chain[i], step, name, sizeof name);
        append(buf, len, &pos, name);
        if (i)
            append(buf, len, &pos, " > ");
    }
}

void cmt_phases_view_where_text(const struct cmt_phases_view *pv, const struct cmt_phase_where *w, char *buf, size_t len)
{
    size_t n_nodes = pv->n_nodes;
    const struct cmt_phase_node *nodes = pv->nodes;
    buf[0] = '\0';
    size_t pos = 0;
    bool step_in_path = false;
    for (uint32_t k = w->node; k != CMT_PHASE_NONE && k < n_nodes; k = nodes[k].parent)
        step_in_path = step_in_path || nodes[k].name == CMT_PHASE_STEP_NAME;
    if (w->step && !step_in_path) {
        char s[256];
        cmt_phases_view_step_name(pv, w->step, s, sizeof s);
        append(buf, len, &pos, s);
    }
    if (w->node != CMT_PHASE_NONE) {
        char path[1024];
        cmt_phases_view_node_path(pv, w->node, w->step, path, sizeof path);
        if (pos)
            append(buf, len, &pos, " > ");
        append(buf, len, &pos, path);
    }
    if (w->global != CMT_PHASE_NONE) {
        char g[256];
        node_name(pv, w->global, 0, g, sizeof g);
        append(buf, len, &pos, pos ? " (in range " : "(in range ");
        append(buf, len, &pos, g);
        append(buf, len, &pos, ")");
    }
}

