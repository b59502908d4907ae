/* SPDX-License-Identifier: MIT */
/* `cumemtrace report` for people. docs/report.md shows and explains it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cuda_errors.h"
#include "forensics_report.h"
#include "report.h"
#include "size_parse.h"

/* "64.0 MiB (67108864 B)", or "512 B" below 1 KiB. */
static const char *bytes_str(uint64_t v, char *buf, size_t len)
{
    char h[32];
    cmt_format_size(v, h, sizeof h);
    if (v < 1024)
        snprintf(buf, len, "%s", h);
    else
        snprintf(buf, len, "%s (%" PRIu64 " B)", h, v);
    return buf;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void print_frames(const struct cmt_report *r, FILE *out, uint64_t stack, const char *indent)
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
    if (limit < sf->n)
        fprintf(out, "%s... %zu more %s (--max-frames 0 shows all)\n", indent, sf->n - limit,
                plural(sf->n - limit, "frame", "frames"));
}

static void print_header(const struct cmt_report *r, FILE *out)
{
    const struct cmt_analysis *a = r->analysis;
    const struct cmt_trace_model *m = &a->model;
    const struct cmt_replay *rp = &a->replay;
    fprintf(out, "cumemtrace report of %s\n", a->path);
    if (m->has_process) {
        fprintf(out, "  program:  ");
        if (m->argc == 0)
            fprintf(out, "%s", cmt_model_string(m, m->exe_id));
        for (uint32_t i = 0; i < m->argc; i++)
            fprintf(out, "%s%s", i ? " " : "", cmt_model_string(m, m->arg_ids[i]));
        fprintf(out, "\n  process:  pid %" PRIu64 " (parent %" PRIu64 ") on %s", m->pid, m->ppid,
                cmt_model_string(m, m->hostname_id));
        if (m->rank >= 0)
            fprintf(out, ", rank %" PRId64, m->rank);
        fprintf(out, "\n");
    } else {
        fprintf(out, "  process:  pid %u\n", a->info.pid);
    }
    time_t start = (time_t)(a->info.start_realtime_ns / 1000000000ull);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&start, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    uint64_t end_ts = m->has_end ? m->end.ts : rp->last_ts;
    double dur = (double)cmt_report_rel_ns(r, end_ts) / 1e9;
    bool clean = a->info.flags & CMT_FILE_FLAG_CLEAN_EXIT;
    fprintf(out, "  recorded: %s, %.3f s, %s\n", when, dur,
            clean ? "process exited normally" : "process did not exit normally");
    fprintf(out, "  events:   %" PRIu64, rp->events);
    bool first = true;
    for (unsigned api = 1; api < 256; api++) {
        if (!rp->events_by_api[api])
            continue;
        fprintf(out, "%s%s %" PRIu64, first ? " (" : ", ", cmt_api_name(api), rp->events_by_api[api]);
        first = false;
    }
    fprintf(out, "%s\n", first ? "" : ")");
    fprintf(out, "  devices:  ");
    bool any = false;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (rp->device_mask & (1ull << d)) {
            fprintf(out, "%s%d", any ? ", " : "", d);
            any = true;
        }
    if (rp->host_seen) {
        fprintf(out, "%spinned host memory", any ? "; " : "");
        any = true;
    }
    fprintf(out, "%s\n", any ? "" : "none");
}

static void print_account(const struct cmt_report *r, const struct cmt_account_view *v, FILE *out)
{
    const struct cmt_account *acc = v->account;
    char b1[64], b2[64];
    if (acc->cls == CMT_CLASS_HOST)
        fprintf(out, "\nPinned host memory");
    else if (acc->cls == CMT_CLASS_MANAGED)
        fprintf(out, "\nManaged memory, device %d", acc->device);
    else
        fprintf(out, "\nDevice %d", acc->device);
    fprintf(out, ": peak %s in %" PRIu64 " %s at %.3f s\n", bytes_str(acc->peak, b1, sizeof b1), acc->peak_count,
            plural(acc->peak_count, "allocation", "allocations"), (double)cmt_report_rel_ns(r, acc->peak_ts) / 1e9);
    if (acc->cls != CMT_CLASS_MANAGED) {
        int kinds = 0;
        for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
            kinds += acc->peak_by_kind[k] != 0;
        if (kinds > 1) {
            fprintf(out, "  at the peak:");
            bool first = true;
            for (unsigned k = 0; k < CMT_KIND_COUNT; k++) {
                if (!acc->peak_by_kind[k])
                    continue;
                cmt_format_size(acc->peak_by_kind[k], b2, sizeof b2);
                fprintf(out, "%s %s %s", first ? "" : ",", cmt_kind_name(k), b2);
                first = false;
            }
            fprintf(out, "\n");
        }
    }
    fprintf(out, "  live at exit: %s in %" PRIu64 " %s\n", bytes_str(acc->live, b1, sizeof b1), acc->live_count,
            plural(acc->live_count, "allocation", "allocations"));
    if (v->n_top == 0)
        return;
    fprintf(out, "  call sites live at the peak");
    if (v->n_sites_at_peak > v->n_top)
        fprintf(out, " (top %zu of %zu)", v->n_top, v->n_sites_at_peak);
    fprintf(out, ":\n");
    for (size_t i = 0; i < v->n_top; i++) {
        const struct cmt_site_row *s = &v->top[i];
        fprintf(out, "    %s in %" PRIu64 " %s (%s)\n", bytes_str(s->bytes, b1, sizeof b1), s->count,
                plural(s->count, "allocation", "allocations"), cmt_api_name(s->api));
        print_frames(r, out, s->stack, "        ");
    }
}

static void print_virtual(const struct cmt_report *r, FILE *out)
{
    const struct cmt_replay *rp = &r->analysis->replay;
    char b1[64], b2[64];
    for (int d = 0; d <= CMT_MAX_DEVICES; d++) {
        const struct cmt_virtual_stats *v = &rp->virt[d];
        if (!v->physical_peak && !v->reserve_peak && !v->map_peak)
            continue;
        if (d == 0)
            fprintf(out, "\nVirtual memory management (VMM), host\n");
        else
            fprintf(out, "\nVirtual memory management (VMM), device %d\n", d - 1);
        if (v->physical_peak) {
            fprintf(out, "  physical memory (cuMemCreate): peak %s, at exit %s in %" PRIu64 " %s", bytes_str(v->physical_peak, b1, sizeof b1),
                    bytes_str(v->physical_live, b2, sizeof b2), v->physical_count,
                    plural(v->physical_count, "handle", "handles"));
            if (d == 0)
                fprintf(out, " (counted in pinned host memory)\n");
            else
                fprintf(out, " (counted in device %d)\n", d - 1);
        }
        if (v->reserve_peak)
            fprintf(out, "  reserved address ranges: peak %s, at exit %s in %" PRIu64 " %s\n",
                    bytes_str(v->reserve_peak, b1, sizeof b1), bytes_str(v->reserve_live, b2, sizeof b2),
                    v->reserve_count, plural(v->reserve_count, "range", "ranges"));
        if (v->map_peak)
            fprintf(out, "  mappings: peak %s, at exit %s in %" PRIu64 " %s\n", bytes_str(v->map_peak, b1, sizeof b1),
                    bytes_str(v->map_live, b2, sizeof b2), v->map_count,
                    plural(v->map_count, "mapping", "mappings"));
    }
}

static void print_leaks(const struct cmt_report *r, FILE *out)
{
    char b1[64];
    if (r->n_leaks == 0) {
        fprintf(out, "\nLeaks: none (nothing was live at exit)\n");
        return;
    }
    fprintf(out, "\nLeaks (live at exit): %s in %" PRIu64 " %s\n", bytes_str(r->leak_bytes, b1, sizeof b1),
            r->leak_count, plural(r->leak_count, "allocation", "allocations"));
    for (size_t i = 0; i < r->n_leaks; i++) {
        const struct cmt_site_row *s = &r->leaks[i];
        const char *one = "allocation", *many = "allocations", *note = "";
        if (s->kind == CMT_KIND_VMM_RESERVE) {
            one = "reserved range", many = "reserved ranges", note = "; address space, not memory";
        } else if (s->kind == CMT_KIND_VMM_MAP) {
            one = "mapping", many = "mappings", note = "; address space, not memory";
        }
        fprintf(out, "  %s in %" PRIu64 " %s (%s, %s%s)\n", bytes_str(s->bytes, b1, sizeof b1), s->count,
                plural(s->count, one, many), cmt_kind_name(s->kind), cmt_api_name(s->api), note);
        print_frames(r, out, s->stack, "      ");
    }
}

static void print_failures(const struct cmt_report *r, FILE *out)
{
    const struct cmt_replay *rp = &r->analysis->replay;
    if (rp->failed_allocs == 0)
        return;
    char b1[64], b2[64], b3[160];
    fprintf(out, "\nFailed allocations: %" PRIu64 "\n", rp->failed_allocs);
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        const char *err = cmt_cuda_error_name(g->result, cmt_api_is_driver(g->api));
        if (g->count == 1 || g->min_size == g->max_size)
            snprintf(b3, sizeof b3, "%s", bytes_str(g->min_size, b1, sizeof b1));
        else {
            cmt_format_size(g->min_size, b1, sizeof b1);
            cmt_format_size(g->max_size, b2, sizeof b2);
            snprintf(b3, sizeof b3, "%s to %s", b1, b2);
        }
        fprintf(out, "  %s of %s", cmt_api_name(g->api), b3);
        if (g->device >= 0)
            fprintf(out, " on device %d", g->device);
        fprintf(out, " failed with %s (%d)", err, g->result);
        if (g->count > 1)
            fprintf(out, ", %" PRIu64 " times", g->count);
        fprintf(out, "; this process had %s live on the device then, at %.3f s\n",
                bytes_str(g->live_device_bytes, b1, sizeof b1), (double)cmt_report_rel_ns(r, g->first_ts) / 1e9);
        print_frames(r, out, g->stack, "      ");
    }
    if (rp->failed_allocs > CMT_MAX_FAILURES_KEPT)
        fprintf(out, "  (details kept for the first %d failures)\n", CMT_MAX_FAILURES_KEPT);
}

void cmt_report_render_text(const struct cmt_report *r, FILE *out)
{
    print_header(r, out);
    for (size_t i = 0; i < r->n_accounts; i++)
        print_account(r, &r->accounts[i], out);
    print_virtual(r, out);
    print_leaks(r, out);
    print_failures(r, out);
    cmt_forensics_render_text(r, out, false);
    if (r->n_warnings) {
        fprintf(out, "\nWarnings:\n");
        for (size_t i = 0; i < r->n_warnings; i++)
            fprintf(out, "  - %s\n", r->warnings[i]);
    }
}
