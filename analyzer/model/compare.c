/* SPDX-License-Identifier: MIT */
#include "compare.h"

#include <inttypes.h>
#include <string.h>


void cmt_summary_failed(const char *trace, const char *error, struct cmt_process_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->trace, sizeof s->trace, "%s", trace);
    snprintf(s->error, sizeof s->error, "%s", error);
    s->rank = -1;
}

void cmt_summary_from_report(const struct cmt_report *r, const struct cmt_analysis *a, const char *trace, struct cmt_process_summary *s)
{
    const struct cmt_trace_model *m = &a->model;
    memset(s, 0, sizeof *s);
    snprintf(s->trace, sizeof s->trace, "%s", trace);
    s->analysed = true;
    s->complete = cmt_analysis_complete(a);
    s->rank = m->has_process ? m->rank : -1;
    s->pid = m->has_process ? m->pid : a->info.pid;
    snprintf(s->hostname, sizeof s->hostname, "%s", cmt_model_string(m, m->hostname_id));
    if (m->has_process) {
        const char *exe = cmt_model_string(m, m->exe_id);
        const char *slash = strrchr(exe, '/');
        snprintf(s->program, sizeof s->program, "%s", slash ? slash + 1 : exe);
    }
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
    else if (s->analysed && s->program[0])
        snprintf(buf, len, "%.24s (pid %" PRIu64 ")", s->program, s->pid); /* a pid alone names no run */
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
