/* SPDX-License-Identifier: MIT */
/* cumemtrace diff OLD NEW for people (docs/report.md, "Comparing two runs"). */
#include <inttypes.h>
#include <string.h>

#include "render_parts.h"
#include "size_parse.h"
#include "units.h"
#include "text_escape.h"

/* "+20.0 MiB", "-3.0 MiB". */
static const char *signed_size(int64_t v, char *buf, size_t len)
{
    buf[0] = v < 0 ? '-' : '+';
    cmt_format_size(v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v, buf + 1, len - 1);
    return buf;
}

static void print_run(const char *name, const struct cmt_diff_run *run, FILE *out)
{
    char dur[32];
    cmt_format_duration(run->duration_ns, dur, sizeof dur);
    fprintf(out, "  %s %s\n", name, cmt_esc(run->trace));
    fprintf(out, "       program:  %s\n", cmt_esc(run->program));
    fprintf(out, "       recorded: %s, %s, pid %" PRIu64 "\n", run->when, dur, run->summary.pid);
}

/* "613.0 MiB -> 640.0 MiB (+27.0 MiB)", or "613.0 MiB (unchanged)". */
static void print_bytes_change(uint64_t o, uint64_t n, FILE *out)
{
    char a[32], b[32], c[32];
    cmt_format_size(o, a, sizeof a);
    if (o == n) {
        fprintf(out, "%s (unchanged)", a);
        return;
    }
    cmt_format_size(n, b, sizeof b);
    fprintf(out, "%s -> %s (%s)", a, b, signed_size(cmt_diff_delta(o, n), c, sizeof c));
}

static void print_count_change(uint64_t o, uint64_t n, FILE *out)
{
    if (o == n)
        fprintf(out, "%" PRIu64 " (unchanged)", o);
    else
        fprintf(out, "%" PRIu64 " -> %" PRIu64 " (%+" PRId64 ")", o, n, cmt_diff_delta(o, n));
}

static void print_totals(const struct cmt_diff *d, FILE *out)
{
    const struct cmt_process_summary *o = &d->run[0].summary, *n = &d->run[1].summary;
    /* Devices of either run, in ordinal order. */
    for (int32_t dev = 0; dev < CMT_MAX_DEVICES; dev++) {
        uint64_t po = 0, pn = 0;
        bool seen = false;
        for (size_t i = 0; i < o->n_devices; i++)
            if (o->devices[i].ordinal == dev) {
                po = o->devices[i].peak;
                seen = true;
            }
        for (size_t i = 0; i < n->n_devices; i++)
            if (n->devices[i].ordinal == dev) {
                pn = n->devices[i].peak;
                seen = true;
            }
        if (!seen)
            continue;
        fprintf(out, "  device %d peak:     ", dev);
        print_bytes_change(po, pn, out);
        fputc('\n', out);
    }
    fprintf(out, "  leaked (at exit):  ");
    print_bytes_change(o->leak_bytes, n->leak_bytes, out);
    if (d->run[0].suppressed_bytes || d->run[1].suppressed_bytes) {
        fprintf(out, "\n  suppressed leaks:  ");
        print_bytes_change(d->run[0].suppressed_bytes, d->run[1].suppressed_bytes, out);
        fprintf(out, "; not counted as leaked");
    }
    fprintf(out, "\n  allocation calls:  ");
    print_count_change(d->run[0].calls, d->run[1].calls, out);
    fputc('\n', out);
}

/* PyTorch's tensors of either run (its block layer): what the report
 * leads with, before the device's figures. */
static void print_tensors(const struct cmt_diff *d, FILE *out)
{
    const struct cmt_diff_tensors *o = &d->run[0].tensors, *n = &d->run[1].tensors;
    if (!o->on && !n->on)
        return;
    fprintf(out, "  PyTorch's tensors:\n    peak:              ");
    print_bytes_change(o->peak, n->peak, out);
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        if (!o->cats[c] && !n->cats[c])
            continue;
        fprintf(out, "\n      %-21s ", d->category_name[c]);
        print_bytes_change(o->cats[c], n->cats[c], out);
    }
    fprintf(out, "\n    kept step after step (leaks): ");
    print_bytes_change(o->kept_bytes, n->kept_bytes, out);
    fprintf(out, "\n    alive at exit:     ");
    print_bytes_change(o->alive_bytes, n->alive_bytes, out);
    fprintf(out, "\n    growth per step:   ");
    print_bytes_change(o->rate_per_step, n->rate_per_step, out);
    fprintf(out, " (steps ");
    print_count_change(o->steps, n->steps, out);
    fprintf(out, ")\n");
}

static void print_frames(const struct cmt_diff_site *s, FILE *out);

static void print_site(const struct cmt_diff_site *s, FILE *out)
{
    const struct cmt_diff_side *o = &s->side[0], *n = &s->side[1];
    bool only_old = !n->peak && !n->leak && !n->calls && !n->tensor_peak && !n->tensor_kept,
         only_new = !o->peak && !o->leak && !o->calls && !o->tensor_peak && !o->tensor_kept;
    const char *sep = "    ";
    if (o->peak != n->peak) {
        fprintf(out, "%speak ", sep);
        print_bytes_change(o->peak, n->peak, out);
        sep = "; ";
    }
    if (o->leak != n->leak) {
        fprintf(out, "%sleaked ", sep);
        print_bytes_change(o->leak, n->leak, out);
        sep = "; ";
    }
    if (o->tensor_peak != n->tensor_peak) {
        fprintf(out, "%stensors at the peak ", sep);
        print_bytes_change(o->tensor_peak, n->tensor_peak, out);
        sep = "; ";
    }
    if (o->tensor_kept != n->tensor_kept) {
        fprintf(out, "%skept step after step ", sep);
        print_bytes_change(o->tensor_kept, n->tensor_kept, out);
        sep = "; ";
    }
    if (o->calls != n->calls) {
        fprintf(out, "%scalls ", sep);
        print_count_change(o->calls, n->calls, out);
    }
    fprintf(out, " (%s)%s\n", s->api, only_new ? "; new in NEW" : only_old ? "; gone from NEW" : "");
    print_frames(s, out);
}

/* "    suppressed 0 B -> 2.0 MiB (+2.0 MiB) in 0 -> 1 (+1) allocations
 * (cudaMalloc); suppressed by default.supp:20 (cuBLAS handle state)", then
 * its frames; listed in the sites' order (the larger change of peak and
 * leaked bytes first). */
static void print_suppressed_site(const struct cmt_diff *d, const struct cmt_diff_site *s, FILE *out)
{
    fprintf(out, "    suppressed ");
    print_bytes_change(s->side[0].suppressed, s->side[1].suppressed, out);
    fprintf(out, " in ");
    print_count_change(s->side[0].suppressed_count, s->side[1].suppressed_count, out);
    fprintf(out, " %s (%s)", s->side[0].suppressed_count == 1 && s->side[1].suppressed_count == 1 ? "allocation"
                                                                                                   : "allocations",
            s->api);
    if (s->suppression) {
        /* the report's own words for it */
        struct cmt_report names = {.suppressions = d->suppressions, .n_suppressions = d->n_suppressions};
        char label[700];
        cmt_report_suppression_label(&names, s->suppression, label, sizeof label);
        fprintf(out, "; %s", label);
    }
    fputc('\n', out);
    print_frames(s, out);
}

static void print_frames(const struct cmt_diff_site *s, FILE *out)
{
    const char *p = s->key;
    size_t shown = 0;
    while (*p && shown < CMT_DIFF_FRAMES_SHOWN) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(out, "        %.*s\n", (int)len, p);
        shown++;
        p = nl ? nl + 1 : p + len;
    }
    if (s->n_lines > shown)
        fprintf(out, "        ... %zu more %s\n", s->n_lines - shown, s->n_lines - shown == 1 ? "frame" : "frames");
}

static void print_changed(const struct cmt_diff *d, size_t changed, FILE *out);

void cmt_diff_render_text(const struct cmt_diff *d, FILE *out)
{
    size_t top = d->top;
    fprintf(out, "cumemtrace diff of %s (OLD) and %s (NEW)\n", cmt_esc(d->run[0].trace), cmt_esc(d->run[1].trace));
    print_run("OLD", &d->run[0], out);
    print_run("NEW", &d->run[1], out);
    if (d->different_program)
        fprintf(out,
                "  warning: different programs (OLD ran %s, NEW ran %s): call sites are matched by their frames "
                "and may not correspond\n",
                cmt_esc(d->run[0].exe), cmt_esc(d->run[1].exe));
    fputc('\n', out);
    print_tensors(d, out);
    print_totals(d, out);
    size_t changed = 0, suppressed = 0;
    for (size_t i = 0; i < d->n_sites; i++) {
        changed += cmt_diff_site_changed(&d->sites[i]);
        suppressed += cmt_diff_site_suppressed_changed(&d->sites[i]);
    }
    if (changed == 0)
        fprintf(out, "\nCall sites: %zu, none changed\n", d->n_sites);
    else
        print_changed(d, changed, out);
    if (suppressed == 0)
        return;
    size_t shown = top && top < suppressed ? top : suppressed;
    fprintf(out, "\nSuppressed leaks that changed (live at exit but matched by a leak suppression, as `cumemtrace "
                 "report` and `check` apply them; not counted as leaked): %zu of %zu",
            suppressed, d->n_sites);
    if (shown < suppressed)
        fprintf(out, ", top %zu shown (--top)", shown);
    fprintf(out, "\n");
    for (size_t i = 0, k = 0; i < d->n_sites && k < shown; i++) {
        if (!cmt_diff_site_suppressed_changed(&d->sites[i]))
            continue;
        print_suppressed_site(d, &d->sites[i], out);
        k++;
    }
}

static void print_changed(const struct cmt_diff *d, size_t changed, FILE *out)
{
    size_t top = d->top;
    size_t shown = top && top < changed ? top : changed;
    fprintf(out, "\nCall sites that changed (peak: bytes live at the device peak; leaked: live at exit; calls: "
                 "allocation calls), largest change first: %zu of %zu",
            changed, d->n_sites);
    if (shown < changed)
        fprintf(out, ", top %zu shown (--top)", shown);
    fprintf(out, "\n");
    for (size_t i = 0, k = 0; i < d->n_sites && k < shown; i++) {
        if (!cmt_diff_site_changed(&d->sites[i]))
            continue;
        print_site(&d->sites[i], out);
        k++;
    }
}
