/* SPDX-License-Identifier: MIT */
/* The comparison of several traces for people (`cumemtrace report A B ...`). */
#include <inttypes.h>
#include <string.h>

#include "compare.h"
#include "render_parts.h"
#include "units.h"
#include "size_parse.h"
#include "text_escape.h"

void cmt_compare_render_text(const struct cmt_process_summary *s, size_t n, FILE *out)
{
    char label[64], b1[32], b2[32], b3[32];
    /* The process and host columns as wide as their longest entry: a long
     * program name pushed every column after it out of line. */
    int wp = 16, wh = 10;
    for (size_t i = 0; i < n; i++) {
        cmt_summary_label(&s[i], label, sizeof label);
        int lp = (int)strlen(cmt_esc(label)), lh = (int)strlen(cmt_esc(s[i].hostname));
        wp = lp > wp ? lp : wp;
        if (s[i].analysed)
            wh = lh > wh ? (lh < 32 ? lh : 32) : wh;
    }
    fprintf(out, "\nComparison of %zu processes\n", n);
    fprintf(out, "  %-*s %-*s %6s %10s %9s %12s %20s %7s %6s %10s\n", wp, "process", wh, "host", "device", "peak",
            "peak at", "live at end", "leaks", "growing", "failed", "events");
    for (size_t i = 0; i < n; i++) {
        const struct cmt_process_summary *p = &s[i];
        cmt_summary_label(p, label, sizeof label);
        if (!p->analysed) {
            fprintf(out, "  %-*s not analysed: %s (%s)\n", wp, cmt_esc(label), cmt_esc(p->error), cmt_esc(p->trace));
            continue;
        }
        cmt_format_size(p->leak_bytes, b3, sizeof b3);
        char leaks[48];
        snprintf(leaks, sizeof leaks, "%s in %" PRIu64, b3, p->leak_count);
        if (p->n_devices == 0)
            fprintf(out, "  %-*s %-*.*s %6s %10s %9s %12s %20s %7zu %6" PRIu64 " %10" PRIu64 "%s\n", wp, cmt_esc(label),
                    wh, wh, cmt_esc(p->hostname), "-", "-", "-", "-", leaks, p->growth_candidates, p->failed, p->events,
                    p->complete ? "" : "  (incomplete)");
        for (size_t d = 0; d < p->n_devices; d++) {
            cmt_format_size(p->devices[d].peak, b1, sizeof b1);
            cmt_format_size(p->devices[d].live, b2, sizeof b2);
            char at[32];
            cmt_format_duration(p->devices[d].peak_ns, at, sizeof at);
            if (d == 0)
                fprintf(out, "  %-*s %-*.*s %6d %10s %9s %12s %20s %7zu %6" PRIu64 " %10" PRIu64 "%s\n",
                        wp, cmt_esc(label), wh, wh, cmt_esc(p->hostname), p->devices[d].ordinal, b1, at, b2, leaks, p->growth_candidates, p->failed,
                        p->events, p->complete ? "" : "  (incomplete)");
            else
                fprintf(out, "  %-*s %-*s %6d %10s %9s %12s\n", wp, "", wh, "", p->devices[d].ordinal, b1, at, b2);
        }
    }
    struct cmt_imbalance im;
    cmt_compare_imbalance(s, n, &im);
    if (im.n >= 2) {
        cmt_format_size(im.max, b1, sizeof b1);
        cmt_format_size(im.min, b2, sizeof b2);
        cmt_format_size(im.mean, b3, sizeof b3);
        char lmax[64], lmin[64];
        cmt_summary_label(&s[im.max_index], lmax, sizeof lmax);
        cmt_summary_label(&s[im.min_index], lmin, sizeof lmin);
        fprintf(out, "  peak imbalance: highest %s by %s, lowest %s by %s, mean %s; highest/mean %.2f\n", b1,
                cmt_esc(lmax), b2, cmt_esc(lmin), b3, im.max_over_mean);
    }
    if (im.leak_max) {
        cmt_format_size(im.leak_max, b1, sizeof b1);
        cmt_summary_label(&s[im.leak_max_index], label, sizeof label);
        fprintf(out, "  most leaked: %s by %s\n", b1, cmt_esc(label));
    }
}
