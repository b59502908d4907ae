/* SPDX-License-Identifier: MIT */
#include "compare.h"

#include <inttypes.h>
#include <string.h>

#include "json_writer.h"
#include "size_parse.h"

void cmt_summary_failed(const char *trace, const char *error, struct cmt_process_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->trace, sizeof s->trace, "%s", trace);
    snprintf(s->error, sizeof s->error, "%s", error);
    s->rank = -1;
}

void cmt_summary_from_report(const struct cmt_report *r, const char *trace, struct cmt_process_summary *s)
{
    const struct cmt_analysis *a = r->analysis;
    const struct cmt_trace_model *m = &a->model;
    memset(s, 0, sizeof *s);
    snprintf(s->trace, sizeof s->trace, "%s", trace);
    s->analysed = true;
    s->complete = cmt_analysis_complete(a);
    s->rank = m->has_process ? m->rank : -1;
    s->pid = m->has_process ? m->pid : a->info.pid;
    snprintf(s->hostname, sizeof s->hostname, "%s", cmt_model_string(m, m->hostname_id));
    for (size_t i = 0; i < r->n_accounts && s->n_devices < CMT_COMPARE_MAX_DEVICES; i++) {
        const struct cmt_account *acc = r->accounts[i].account;
        if (acc->cls != CMT_CLASS_DEVICE || acc->device < 0)
            continue;
        s->devices[s->n_devices].ordinal = acc->device;
        s->devices[s->n_devices].peak = acc->peak;
        s->devices[s->n_devices].peak_ns = cmt_report_rel_ns(r, acc->peak_ts);
        s->devices[s->n_devices].live = acc->live;
        s->n_devices++;
        if (acc->peak > s->peak)
            s->peak = acc->peak;
    }
    s->leak_bytes = r->leak_bytes;
    s->leak_count = r->leak_count;
    s->growth_candidates = r->n_growth;
    s->failed = a->replay.failed_allocs;
    s->events = a->replay.events;
}

void cmt_summary_label(const struct cmt_process_summary *s, char *buf, size_t len)
{
    if (s->rank >= 0)
        snprintf(buf, len, "rank %" PRId64, s->rank);
    else if (s->analysed)
        snprintf(buf, len, "pid %" PRIu64, s->pid);
    else
        snprintf(buf, len, "-");
}

void cmt_compare_imbalance(const struct cmt_process_summary *s, size_t n, struct cmt_imbalance *out)
{
    memset(out, 0, sizeof *out);
    unsigned __int128 sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!s[i].analysed)
            continue;
        if (s[i].leak_bytes > out->leak_max) {
            out->leak_max = s[i].leak_bytes;
            out->leak_max_index = i;
        }
        if (!s[i].n_devices)
            continue;
        if (out->n == 0 || s[i].peak > out->max) {
            out->max = s[i].peak;
            out->max_index = i;
        }
        if (out->n == 0 || s[i].peak < out->min) {
            out->min = s[i].peak;
            out->min_index = i;
        }
        sum += s[i].peak;
        out->n++;
    }
    if (out->n) {
        out->mean = (uint64_t)(sum / out->n);
        out->max_over_mean = out->mean ? (double)out->max / (double)out->mean : 1.0;
    }
}

void cmt_compare_render_text(const struct cmt_process_summary *s, size_t n, FILE *out)
{
    char label[64], b1[32], b2[32], b3[32];
    fprintf(out, "\nComparison of %zu processes\n", n);
    fprintf(out, "  %-16s %-10s %6s %10s %9s %12s %20s %7s %6s %10s\n", "process", "host", "device", "peak",
            "peak at", "live at end", "leaks", "growing", "failed", "events");
    for (size_t i = 0; i < n; i++) {
        const struct cmt_process_summary *p = &s[i];
        cmt_summary_label(p, label, sizeof label);
        if (!p->analysed) {
            fprintf(out, "  %-16s not analysed: %s (%s)\n", label, p->error, p->trace);
            continue;
        }
        cmt_format_size(p->leak_bytes, b3, sizeof b3);
        char leaks[48];
        snprintf(leaks, sizeof leaks, "%s in %" PRIu64, b3, p->leak_count);
        if (p->n_devices == 0)
            fprintf(out, "  %-16s %-10.10s %6s %10s %9s %12s %20s %7zu %6" PRIu64 " %10" PRIu64 "%s\n", label,
                    p->hostname, "-", "-", "-", "-", leaks, p->growth_candidates, p->failed, p->events,
                    p->complete ? "" : "  (incomplete)");
        for (size_t d = 0; d < p->n_devices; d++) {
            cmt_format_size(p->devices[d].peak, b1, sizeof b1);
            cmt_format_size(p->devices[d].live, b2, sizeof b2);
            char at[32];
            snprintf(at, sizeof at, "%.3f s", (double)p->devices[d].peak_ns / 1e9);
            if (d == 0)
                fprintf(out, "  %-16s %-10.10s %6d %10s %9s %12s %20s %7zu %6" PRIu64 " %10" PRIu64 "%s\n", label,
                        p->hostname, p->devices[d].ordinal, b1, at, b2, leaks, p->growth_candidates, p->failed,
                        p->events, p->complete ? "" : "  (incomplete)");
            else
                fprintf(out, "  %-16s %-10s %6d %10s %9s %12s\n", "", "", p->devices[d].ordinal, b1, at, b2);
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
        fprintf(out, "  peak imbalance: highest %s (%s), lowest %s (%s), mean %s; highest/mean %.2f\n", b1, lmax,
                b2, lmin, b3, im.max_over_mean);
    }
    if (im.leak_max) {
        cmt_format_size(im.leak_max, b1, sizeof b1);
        cmt_summary_label(&s[im.leak_max_index], label, sizeof label);
        fprintf(out, "  most leaked: %s by %s\n", b1, label);
    }
}

static void json_process_ref(struct cmt_json *j, const char *key, const struct cmt_process_summary *s, size_t i)
{
    cmt_json_key(j, key);
    cmt_json_begin_object(j);
    cmt_json_key(j, "index");
    cmt_json_uint(j, i);
    cmt_json_key(j, "rank");
    cmt_json_int(j, s[i].rank);
    cmt_json_key(j, "pid");
    cmt_json_uint(j, s[i].pid);
    cmt_json_end_object(j);
}

void cmt_compare_render_json(const struct cmt_process_summary *s, size_t n, struct cmt_json *j)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "processes");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const struct cmt_process_summary *p = &s[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "trace");
        cmt_json_string(j, p->trace);
        cmt_json_key(j, "analysed");
        cmt_json_bool(j, p->analysed);
        if (!p->analysed) {
            cmt_json_key(j, "error");
            cmt_json_string(j, p->error);
            cmt_json_end_object(j);
            continue;
        }
        cmt_json_key(j, "complete");
        cmt_json_bool(j, p->complete);
        cmt_json_key(j, "rank");
        cmt_json_int(j, p->rank);
        cmt_json_key(j, "pid");
        cmt_json_uint(j, p->pid);
        cmt_json_key(j, "hostname");
        cmt_json_string(j, p->hostname);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, p->peak);
        cmt_json_key(j, "devices");
        cmt_json_begin_array(j);
        for (size_t d = 0; d < p->n_devices; d++) {
            cmt_json_begin_object(j);
            cmt_json_key(j, "ordinal");
            cmt_json_int(j, p->devices[d].ordinal);
            cmt_json_key(j, "peak_bytes");
            cmt_json_uint(j, p->devices[d].peak);
            cmt_json_key(j, "peak_time_ns");
            cmt_json_uint(j, p->devices[d].peak_ns);
            cmt_json_key(j, "live_at_end_bytes");
            cmt_json_uint(j, p->devices[d].live);
            cmt_json_end_object(j);
        }
        cmt_json_end_array(j);
        cmt_json_key(j, "leak_bytes");
        cmt_json_uint(j, p->leak_bytes);
        cmt_json_key(j, "leak_count");
        cmt_json_uint(j, p->leak_count);
        cmt_json_key(j, "growth_candidates");
        cmt_json_uint(j, p->growth_candidates);
        cmt_json_key(j, "failed_count");
        cmt_json_uint(j, p->failed);
        cmt_json_key(j, "events");
        cmt_json_uint(j, p->events);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    struct cmt_imbalance im;
    cmt_compare_imbalance(s, n, &im);
    cmt_json_key(j, "imbalance");
    if (im.n == 0) {
        cmt_json_null(j);
    } else {
        cmt_json_begin_object(j);
        cmt_json_key(j, "processes");
        cmt_json_uint(j, im.n);
        cmt_json_key(j, "peak_max_bytes");
        cmt_json_uint(j, im.max);
        json_process_ref(j, "peak_max_process", s, im.max_index);
        cmt_json_key(j, "peak_min_bytes");
        cmt_json_uint(j, im.min);
        json_process_ref(j, "peak_min_process", s, im.min_index);
        cmt_json_key(j, "peak_mean_bytes");
        cmt_json_uint(j, im.mean);
        cmt_json_key(j, "peak_max_over_mean");
        cmt_json_double(j, im.max_over_mean);
        cmt_json_key(j, "leak_max_bytes");
        cmt_json_uint(j, im.leak_max);
        json_process_ref(j, "leak_max_process", s, im.leak_max_index);
        cmt_json_end_object(j);
    }
    cmt_json_end_object(j);
}
