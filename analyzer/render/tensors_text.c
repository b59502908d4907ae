/* SPDX-License-Identifier: MIT */
/* The report's "PyTorch's tensors" section (docs/report.md, "Tensors"): what
 * a trace with the block layer leads with. PyTorch's share of the device is
 * its reserved memory: the tensors and the cache's reserve beside them, so
 * the driver's sections after it list its segments once, as one holder,
 * and nothing is counted twice. */
#include <inttypes.h>

#include "blocks_report.h"
#include "frames.h"
#include "render_parts.h"
#include "units.h"

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void print_categories(const struct cmt_report *r, FILE *out, const struct cmt_tensor_instant *at, uint64_t total)
{
    char b[64];
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        uint64_t v = at->cats.bytes[c];
        if (!v)
            continue;
        fprintf(out, "      %-21s %22s  %5.1f%%\n", r->tensors->category_name[c],
                cmt_size_exact_str(v, b, sizeof b), percent(v, total));
    }
}

/* "parameters 1.5 GiB, activations 4.3 GiB": the tensors' categories only. */
static void category_list(const struct cmt_report *r, FILE *out, const struct cmt_tensor_figures *f, bool with_outside)
{
    char b[32];
    bool first = true;
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        if (!f->bytes[c] || (!with_outside && c == CMT_CAT_RESERVE))
            continue;
        fprintf(out, "%s%s %s", first ? "" : ", ", r->tensors->category_name[c],
                cmt_size_str(f->bytes[c], b, sizeof b));
        first = false;
    }
    if (first)
        fprintf(out, "none");
}

static void print_phase_peaks(const struct cmt_report *r, FILE *out, const struct cmt_tensor_device *d)
{
    char b[32];
    bool any = false;
    for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++)
        any = any || (d->phase_peak[k].seen && k != CMT_TPHASE_SETUP);
    if (!any)
        return;
    fprintf(out, "    at each phase's own peak of tensors:\n");
    for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++) {
        const struct cmt_tensor_instant *p = &d->phase_peak[k];
        if (!p->seen)
            continue;
        fprintf(out, "      %-9s %s at %s: ", r->tensors->phase_name[k],
                cmt_size_str(p->allocated, b, sizeof b), CMT_DURATION(cmt_report_rel_ns(r, p->ts)));
        category_list(r, out, &p->cats, true);
        fprintf(out, "\n");
    }
}

static void print_peak_sites(const struct cmt_report *r, FILE *out, int32_t ordinal)
{
    const struct cmt_blocks_report *b = r->blocks;
    char s[64];
    for (size_t i = 0; b && i < b->n_devices; i++) {
        const struct cmt_blocks_device *d = &b->devices[i];
        if (d->ordinal != ordinal || !d->peak.n_sites)
            continue;
        size_t n = d->peak.n_sites, shown = r->opt->top && r->opt->top < n ? r->opt->top : n;
        fprintf(out, "    tensors live at the peak, by call site");
        if (shown < n)
            fprintf(out, " (top %zu of %zu)", shown, n);
        fprintf(out, ":\n");
        for (size_t k = 0; k < shown; k++) {
            const struct cmt_blocks_site *site = &d->peak.sites[k];
            fprintf(out, "      %s in %" PRIu64 " %s\n", cmt_size_exact_str(site->bytes, s, sizeof s), site->blocks,
                    cmt_plural(site->blocks, "tensor", "tensors"));
            cmt_render_text_frames(r, out, site->stack, "          ");
        }
        bool header = false;
        for (unsigned c = 0; c < CMT_BL_CLASS_COUNT; c++) {
            const struct cmt_bl_class_state *cs = &d->peak.classes[c];
            char b1[32], b2[32], b3[32];
            if (!cs->segments)
                continue;
            if (!header)
                fprintf(out, "    the cache's segments at the peak:\n");
            header = true;
            fprintf(out, "      %-48s %" PRIu64 " %s, reserved %s, unallocated %s, largest free %s\n",
                    d->peak.class_name[c], cs->segments, cmt_plural(cs->segments, "segment", "segments"),
                    cmt_size_str(cs->reserved, b1, sizeof b1), cmt_size_str(cs->reserved - cs->allocated, b2, sizeof b2),
                    cmt_size_str(cs->largest_free, b3, sizeof b3));
        }
    }
}

/* PyTorch's own OOM records: the cache at each failure, its verdict. */
static void print_ooms(const struct cmt_report *r, FILE *out, int32_t ordinal)
{
    const struct cmt_blocks_report *b = r->blocks;
    char b1[64];
    for (size_t i = 0; b && i < b->n_devices; i++) {
        const struct cmt_blocks_device *d = &b->devices[i];
        if (d->ordinal != ordinal)
            continue;
        for (size_t k = 0; k < d->n_ooms; k++) {
            const struct cmt_blocks_oom *o = &d->ooms[k];
            fprintf(out, "    out of memory at %s asking %s: %s\n", CMT_DURATION(cmt_report_rel_ns(r, o->at.ts)),
                    cmt_size_exact_str(o->request, b1, sizeof b1), o->sentence);
            cmt_render_text_frames(r, out, o->stack, "          ");
        }
    }
}

static void print_device(const struct cmt_report *r, FILE *out, const struct cmt_tensors_device_view *v)
{
    const struct cmt_tensor_instant *p = &v->pass->peak;
    char b1[64], b2[32], b3[32];
    if (!p->seen)
        return;
    uint64_t reserve = p->cats.bytes[CMT_CAT_RESERVE];
    fprintf(out, "  device %d: tensors peak at %s at %s (%s phase); beside them the cache's reserve %s (reserved %s), "
                 "%s of device memory in all then\n",
            v->ordinal, cmt_size_exact_str(p->allocated, b1, sizeof b1), CMT_DURATION(cmt_report_rel_ns(r, p->ts)),
            r->tensors->phase_name[p->phase], cmt_size_str(reserve, b2, sizeof b2),
            cmt_size_str(p->reserved, b3, sizeof b3), cmt_size_str(v->peak_total, (char[32]){""}, 32));
    fprintf(out, "    by category at the peak (each tensor as what it turned out to be; %% of the device memory then):\n");
    print_categories(r, out, p, v->peak_total);
    print_phase_peaks(r, out, v->pass);
    print_peak_sites(r, out, v->ordinal);
    print_ooms(r, out, v->ordinal);
    bool any = false;
    for (size_t i = 0; i < r->tensors->n_advice; i++) {
        const struct cmt_tensor_advice *a = &r->tensors->advice[i];
        if (a->device != v->ordinal)
            continue;
        if (!any)
            fprintf(out, "    what to try (each with the bytes it acts on at the peak):\n");
        any = true;
        fprintf(out, "      - %s\n", a->text);
    }
}

static void print_rate(FILE *out, const struct cmt_tensor_site_row *g)
{
    char b1[64], b2[64];
    double v = g->verdict.rate;
    uint64_t rate = v > 0 ? (uint64_t)(v + 0.5) : 0;
    if (g->per_step)
        fprintf(out, "+%s per step over %zu steps", cmt_size_exact_str(rate, b1, sizeof b1), g->verdict.n);
    else
        fprintf(out, "+%s/s (%s to %s over the run)", cmt_size_str(rate, b1, sizeof b1),
                cmt_size_str(g->verdict.first, b2, sizeof b2), cmt_size_str(g->verdict.last, (char[32]){""}, 32));
}

static void print_growth(const struct cmt_report *r, FILE *out)
{
    const struct cmt_tensors_report *t = r->tensors;
    char b1[64], b2[64];
    if (t->n_samples >= CMT_GROWTH_MIN_SAMPLES) {
        const struct cmt_growth_verdict *g = &t->total_growth;
        if (g->candidate)
            fprintf(out, "  growth per step: the tensors' bytes at step ends rose %s per step over %zu steps "
                         "(from %s to %s)\n",
                    cmt_size_exact_str(g->rate > 0 ? (uint64_t)(g->rate + 0.5) : 0, b1, sizeof b1), g->n,
                    cmt_size_str(g->first, b2, sizeof b2), cmt_size_str(g->last, (char[32]){""}, 32));
        else
            fprintf(out, "  growth per step: none (the tensors' bytes at %zu step ends did not keep rising: "
                         "%s at the first, %s at the last)\n",
                    g->n, cmt_size_str(g->first, b1, sizeof b1), cmt_size_str(g->last, b2, sizeof b2));
    } else if (t->steps) {
        fprintf(out, "  growth per step: not judged (%zu step %s, %d needed); growth over time instead\n",
                t->n_samples, cmt_plural(t->n_samples, "end", "ends"), CMT_GROWTH_MIN_SAMPLES);
    }
    if (!t->n_growth) {
        fprintf(out, "  growing tensor call sites: none\n");
        return;
    }
    size_t shown = r->opt->top && r->opt->top < t->n_growth ? r->opt->top : t->n_growth;
    fprintf(out, "  growing tensor call sites: %zu\n", t->n_growth);
    for (size_t i = 0; i < shown; i++) {
        const struct cmt_tensor_site_row *g = &t->growth[i];
        fprintf(out, "    ");
        print_rate(out, g);
        fprintf(out, "; %s in %" PRIu64 " %s held when the work ended, %s alive %s; the site allocated %" PRIu64
                     " times, freed %" PRIu64 "\n",
                cmt_size_exact_str(g->kept_bytes, b1, sizeof b1), g->kept_count,
                cmt_plural(g->kept_count, "tensor", "tensors"), cmt_size_exact_str(g->live_bytes, b2, sizeof b2),
                r->at ? "then" : "at exit", g->allocs, g->frees);
        cmt_render_text_frames(r, out, g->stack, "        ");
    }
}

static void print_leaks(const struct cmt_report *r, FILE *out)
{
    const struct cmt_tensors_report *t = r->tensors;
    char b1[64], b2[64];
    if (!t->leak_count)
        return;
    fprintf(out, "  leaks (tensors kept step after step and held when the work ended, at the last tensor allocation, "
                 "%s): %s in %" PRIu64 " %s\n",
            CMT_DURATION(cmt_report_rel_ns(r, t->work_end_ts)), cmt_size_exact_str(t->leak_bytes, b1, sizeof b1),
            t->leak_count, cmt_plural(t->leak_count, "tensor", "tensors"));
    for (size_t i = 0; i < t->n_alive; i++) {
        const struct cmt_tensor_site_row *a = &t->alive[i];
        if (!a->leak || a->suppression)
            continue;
        fprintf(out, "    %s in %" PRIu64 " %s, ", cmt_size_exact_str(a->kept_bytes, b1, sizeof b1), a->kept_count,
                cmt_plural(a->kept_count, "tensor", "tensors"));
        print_rate(out, a);
        fprintf(out, "; %s alive %s; the site allocated %" PRIu64 " times, freed %" PRIu64 "\n",
                cmt_size_exact_str(a->live_bytes, b2, sizeof b2), r->at ? "then" : "at exit", a->allocs, a->frees);
        cmt_render_text_frames(r, out, a->stack, "        ");
    }
}

static void print_alive(const struct cmt_report *r, FILE *out)
{
    const struct cmt_tensors_report *t = r->tensors;
    char b1[64];
    if (!t->alive_count) {
        fprintf(out, "  tensors alive %s: none\n", r->at ? "then (--at)" : "at exit");
        return;
    }
    struct cmt_tensor_figures all = {0};
    for (size_t i = 0; i < t->n_devices; i++)
        for (unsigned c = 0; c < CMT_CAT_COUNT; c++)
            all.bytes[c] += t->devices[i].pass->at_exit.bytes[c];
    fprintf(out, "  tensors alive %s: %s in %" PRIu64 " %s (", r->at ? "then (--at)" : "at exit",
            cmt_size_exact_str(t->alive_bytes, b1, sizeof b1),
            t->alive_count, cmt_plural(t->alive_count, "tensor", "tensors"));
    category_list(r, out, &all, false);
    fprintf(out, ")\n");
    uint64_t rest = 0, rest_count = 0;
    size_t sites = 0;
    for (size_t i = 0; i < t->n_alive; i++)
        if ((!t->alive[i].leak || t->alive[i].suppression) && t->alive[i].live_count) {
            rest += t->alive[i].live_bytes;
            rest_count += t->alive[i].live_count;
            sites++;
        }
    if (!rest_count)
        return;
    fprintf(out, "    not leaks (made once or a bounded number of times and held: parameters, optimizer state, "
                 "module globals): %s in %" PRIu64 " %s at %zu call %s\n",
            cmt_size_exact_str(rest, b1, sizeof b1), rest_count, cmt_plural(rest_count, "tensor", "tensors"), sites,
            cmt_plural(sites, "site", "sites"));
    size_t limit = r->opt->top ? r->opt->top : SIZE_MAX, shown = 0;
    for (size_t i = 0; i < t->n_alive && shown < limit; i++) {
        const struct cmt_tensor_site_row *a = &t->alive[i];
        if ((a->leak && !a->suppression) || !a->live_count)
            continue;
        shown++;
        fprintf(out, "      %s in %" PRIu64 " %s made by %s", cmt_size_exact_str(a->live_bytes, b1, sizeof b1),
                a->live_count, cmt_plural(a->live_count, "tensor", "tensors"),
                r->tensors->origin_words[a->origin < CMT_ORIGIN_COUNT ? a->origin : 0]);
        if (a->suppression) {
            char label[600];
            cmt_report_suppression_label(r, a->suppression, label, sizeof label);
            fprintf(out, ", kept step after step but %s", label);
        }
        fprintf(out, "\n");
        cmt_render_text_frames(r, out, a->stack, "          ");
    }
    if (shown < sites)
        fprintf(out, "      ... %zu more %s (--top)\n", sites - shown, cmt_plural(sites - shown, "site", "sites"));
}

void cmt_tensors_render_text(const struct cmt_report *r, FILE *out)
{
    const struct cmt_tensors_report *t = r->tensors;
    const struct cmt_blocks_report *b = r->blocks;
    if (!t || !t->on || !b)
        return;
    fprintf(out, "\nPyTorch's tensors (block layer of its caching allocator%s%s, %" PRIu64 " allocator events)\n",
            b->version[0] ? " " : "", b->version, b->events);
    if (b->settings_known && !b->alloc_conf[0] && !b->cuda_alloc_conf[0])
        fprintf(out, "  allocator settings: the defaults (neither PYTORCH_ALLOC_CONF nor PYTORCH_CUDA_ALLOC_CONF set)\n");
    if (b->alloc_conf[0])
        fprintf(out, "  allocator settings: PYTORCH_ALLOC_CONF=%s\n", b->alloc_conf);
    if (b->cuda_alloc_conf[0])
        fprintf(out, "  allocator settings: PYTORCH_CUDA_ALLOC_CONF=%s\n", b->cuda_alloc_conf);
    if (t->step_source == CMT_STEPS_NONE)
        fprintf(out, "  steps: %s\n", t->step_rule);
    else
        fprintf(out, "  steps: %" PRIu64 ", %s\n", t->steps, t->step_rule);
    for (size_t i = 0; i < t->n_devices; i++)
        print_device(r, out, &t->devices[i]);
    print_growth(r, out);
    print_leaks(r, out);
    print_alive(r, out);
    if (b->inconsistencies)
        fprintf(out, "  warning: %" PRIu64 " block %s inconsistent with the segments (first: %s at 0x%" PRIx64 ")\n",
                b->inconsistencies, cmt_plural(b->inconsistencies, "event", "events"), b->first_inconsistency.what,
                b->first_inconsistency.addr);
}
