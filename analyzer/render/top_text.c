/* SPDX-License-Identifier: MIT */
/* `cumemtrace top --once` (docs/top.md, "One snapshot"). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "render_parts.h"
#include "units.h"

#define SZ(b) cmt_size_str((b), (char[32]){""}, 32)

static void text_sites(const struct cmt_top_snapshot *m, size_t i, size_t d, FILE *out)
{
    struct cmt_top_site *rows = m->max_sites ? calloc(m->max_sites, sizeof *rows) : NULL;
    size_t n = rows ? cmt_top_sites(m->top, i, d, m->sort, rows, m->max_sites) : 0;
    if (n)
        fprintf(out, "    call sites by %s:\n      %10s %8s %10s %12s  site\n", cmt_top_sort_name(m->sort), "live",
                "count", "at peak", "growth/step");
    for (size_t k = 0; k < n; k++) {
        char g[40];
        if (rows[k].growth < 0)
            snprintf(g, sizeof g, "-%s", SZ((uint64_t)-rows[k].growth));
        else
            snprintf(g, sizeof g, "+%s", SZ((uint64_t)rows[k].growth));
        fprintf(out, "      %10s %8" PRIu64 " %10s %12s  %s\n", SZ(rows[k].live), rows[k].count, SZ(rows[k].at_peak),
                g, rows[k].label);
    }
    free(rows);
}

static void text_device(const struct cmt_top_snapshot *m, size_t i, size_t d, const struct cmt_top_device *v,
                        FILE *out)
{
    fprintf(out, "  device %d: live %s in %" PRIu64 " %s, peak %s at %s\n", v->device,
            cmt_size_exact_str(v->live, (char[48]){""}, 48), v->live_count,
            cmt_plural(v->live_count, "allocation", "allocations"), cmt_size_exact_str(v->peak, (char[48]){""}, 48),
            CMT_DURATION(v->peak_ns));
    fprintf(out, "    holders: PyTorch reserve %s", SZ(v->reserve));
    if (v->has_tensors)
        fprintf(out, " (tensors %s)", SZ(v->tensors));
    fprintf(out, ", cuBLAS %s, NCCL %s, other %s\n", SZ(v->cublas), SZ(v->nccl), SZ(v->other));
    if (v->has_growth) {
        char g[40];
        if (v->growth_per_step < 0)
            snprintf(g, sizeof g, "-%s", SZ((uint64_t)-v->growth_per_step));
        else
            snprintf(g, sizeof g, "+%s", SZ((uint64_t)v->growth_per_step));
        fprintf(out, "    growth: %s per step\n", g);
    }
    if (v->failed)
        fprintf(out, "    failed allocations: %" PRIu64 ", the last of %s at %s\n", v->failed,
                SZ(v->last_failed_size), v->last_failed_site);
    text_sites(m, i, d, out);
}

void cmt_top_render_text(const struct cmt_top_snapshot *m, FILE *out)
{
    const struct cmt_top_process *const *p;
    size_t n = cmt_top_processes(m->top, &p);
    size_t running = 0;
    for (size_t i = 0; i < n; i++)
        running += p[i]->state == CMT_TOP_RUNNING;
    fprintf(out, "cumemtrace top: %zu %s, %zu running\n", n, cmt_plural(n, "process", "processes"), running);
    for (size_t i = 0; i < n; i++) {
        cmt_top_detail(m->top, i);
        fputc('\n', out);
        if (p[i]->rank >= 0)
            fprintf(out, "rank %" PRId64 ", ", p[i]->rank);
        fprintf(out, "pid %" PRIu64 " (%s): %s", p[i]->pid, p[i]->command[0] ? p[i]->command : "?",
                cmt_top_state_name(p[i]->state));
        if (p[i]->how[0])
            fprintf(out, ": %s", p[i]->how);
        fprintf(out, "\n  trace %s, %" PRIu64 " events over %s", p[i]->path, p[i]->events,
                CMT_DURATION(p[i]->elapsed_ns));
        if (p[i]->has_step)
            fprintf(out, ", step %" PRIu64, p[i]->step);
        if (p[i]->phase[0])
            fprintf(out, ", phase %s", p[i]->phase);
        fputc('\n', out);
        for (size_t d = 0; d < p[i]->n_devices; d++)
            text_device(m, i, d, &p[i]->devices[d], out);
    }
}
