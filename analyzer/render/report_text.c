/* SPDX-License-Identifier: MIT */
/* `cumemtrace report` for people. docs/report.md shows and explains it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_errors.h"
#include "forensics_report.h"
#include "job.h"
#include "phases_report.h"
#include "report.h"
#include "blocks_report.h"
#include "size_parse.h"
#include "timeline_chart.h"
#include "render_parts.h"
#include "site_twins.h"
#include "units.h"
#include "text_escape.h"

static void print_frames(const struct cmt_report *r, FILE *out, uint64_t stack, const char *indent)
{
    cmt_render_text_frames(r, out, stack, indent);
}

/* Who the process was in a job of several (the JOB record). */
static void print_job(const struct cmt_report_trace *t, FILE *out)
{
    if (!t->has_job || t->job_source == CMT_JOB_NONE)
        return;
    fprintf(out, "  job:      rank %" PRId64, t->job_rank);
    if (t->job_world_size >= 0)
        fprintf(out, " of %" PRId64, t->job_world_size);
    if (t->job_local_rank >= 0)
        fprintf(out, " (local rank %" PRId64 ")", t->job_local_rank);
    fprintf(out, ", started by %s", cmt_job_source_name((unsigned)t->job_source));
    if (t->has_job_id)
        fprintf(out, ", job %s", cmt_esc(t->job_id));
    for (size_t i = 0; i < t->job_nvars; i++)
        if (!strcmp(t->job_vars[i].name, "CUDA_VISIBLE_DEVICES"))
            fprintf(out, ", CUDA_VISIBLE_DEVICES=%s", cmt_esc(t->job_vars[i].value));
    fputc('\n', out);
}

/* "at exit", "at the cut", "when read" (report.h, cmt_report_live_words). */
static const char *live_at_end(const struct cmt_report *r)
{
    return cmt_report_live_words(r);
}

static void print_header(const struct cmt_report *r, FILE *out)
{
    const struct cmt_report_trace *t = &r->trace;
    fprintf(out, "cumemtrace report of %s\n", cmt_esc(t->path));
    const char *state = t->state;
    /* Said once, here, with what it means for the leaks; the sections
     * below refer to it ("see trace: above") rather than repeat it. */
    if (!strcmp(state, "damaged"))
        fprintf(out, "  trace:    DAMAGED: %s; the figures below cover the events before the damage, and what is "
                     "live there is not a list of leaks (it may have been released after it)\n",
                cmt_esc(t->message));
    else if (!strcmp(state, "truncated")) {
        uint64_t end = t->claimed_end > t->file_size ? t->claimed_end : t->file_size;
        fprintf(out,
                "  trace:    TRUNCATED: the file ends at offset %" PRIu64 " but its chunks reach offset %" PRIu64
                " (%" PRIu64 " bytes missing); the figures below cover the events before the cut, and what is "
                "live at the cut is not a list of leaks (it may have been released after it)\n",
                t->file_size, end, end - t->file_size);
    }
    if (t->has_process) {
        fprintf(out, "  program:  ");
        if (t->argc == 0)
            fprintf(out, "%s", cmt_esc(t->exe));
        for (size_t i = 0; i < t->argc; i++)
            fprintf(out, "%s%s", i ? " " : "", cmt_esc(t->argv[i]));
        fprintf(out, "\n  process:  pid %" PRIu64 " (parent %" PRIu64 ") on %s", t->pid, t->ppid,
                cmt_esc(t->hostname));
        if (t->rank >= 0)
            fprintf(out, ", rank %" PRId64, t->rank);
        fprintf(out, "\n");
        print_job(t, out);
    } else {
        fprintf(out, "  process:  pid %" PRIu64 "\n", t->pid);
    }
    time_t start = (time_t)(t->start_realtime_ns / 1000000000ull);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&start, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    const char *dur = CMT_DURATION(cmt_report_rel_ns(r, t->end_ts));
    bool clean = t->clean_exit;
    const char *how = !strcmp(state, "damaged")     ? "trace damaged (see above)"
                      : !strcmp(state, "truncated") ? "trace truncated (see above)"
                      : t->in_progress              ? "still being written (the process is running)"
                      : clean                       ? "process exited normally"
                                                    : "process did not exit normally";
    char status[48] = "";
    if (clean && r->exit_status >= 0 && !strcmp(how, "process exited normally"))
        snprintf(status, sizeof status, " with status %d", (int)r->exit_status);
    fprintf(out, "  recorded: %s, %s, %s%s\n", when, dur, how, status);
    fprintf(out, "  events:   %" PRIu64, t->events);
    bool first = true;
    for (unsigned api = 1; api < 256; api++) {
        if (!t->events_by_api[api])
            continue;
        fprintf(out, "%s%s %" PRIu64, first ? " (" : ", ", cmt_api_name(api), t->events_by_api[api]);
        first = false;
    }
    fprintf(out, "%s\n", first ? "" : ")");
    /* "device 0", "devices 0 and 1", "devices 0, 1 and 3": a bare "0"
     * read as "no devices". */
    fprintf(out, "  devices:  ");
    int n_dev = __builtin_popcountll(t->device_mask), shown = 0;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (t->device_mask & (1ull << d)) {
            fprintf(out, "%s%d", shown == 0 ? (n_dev == 1 ? "device " : "devices ")
                                 : shown == n_dev - 1 ? " and " : ", ", d);
            shown++;
        }
    if (t->host_seen)
        fprintf(out, "%spinned host memory", n_dev ? "; " : "");
    fprintf(out, "%s\n", n_dev || t->host_seen ? "" : "none (no allocation named a device)");
    for (size_t i = 0; i < t->n_notes; i++)
        fprintf(out, "  note:     %s: %s\n", t->notes[i].source, cmt_esc(t->notes[i].text));
    if (t->notes_dropped)
        fprintf(out, "  note:     %" PRIu64 " more %s not shown\n", t->notes_dropped,
                cmt_plural(t->notes_dropped, "note", "notes"));
    if (r->at) {
        char when_at[32];
        cmt_format_duration(r->opt->at_ns, when_at, sizeof when_at);
        fprintf(out, "  at:       replay stopped at %s (--at): \"live\" below means live then\n", when_at);
    } else if (r->at_past_end) {
        fprintf(out, "  at:       --at %s is after the end of the trace (%s): the report covers the whole run\n",
                CMT_DURATION(r->opt->at_ns), dur);
    }
}

static void print_sites(const struct cmt_report *r, FILE *out, const struct cmt_snapshot *snap, const char *when)
{
    char b1[64];
    if (snap->n_top == 0)
        return;
    /* PyTorch's segments, when its tensors are shown: one line */
    uint64_t cache_bytes = 0, cache_count = 0;
    size_t others = 0;
    for (size_t i = 0; i < snap->n_rows; i++) {
        if (snap->rows[i].holder == CMT_HOLDER_PYTORCH) {
            cache_bytes += snap->rows[i].bytes;
            cache_count += snap->rows[i].count;
        } else {
            others++;
        }
    }
    if (cache_count)
        fprintf(out, "  PyTorch's cache %s: %s in %" PRIu64 " %s (its tensors: \"PyTorch's tensors\" above)\n", when,
                cmt_size_exact_str(cache_bytes, b1, sizeof b1), cache_count,
                cmt_plural(cache_count, "segment", "segments"));
    size_t top = snap->n_top < others ? snap->n_top : others;
    if (!top)
        return;
    fprintf(out, "  call sites live %s%s", when, cache_count ? ", outside PyTorch's cache" : "");
    if (others > top)
        fprintf(out, " (top %zu of %zu)", top, others);
    fprintf(out, ":\n");
    /* the rows shown, PyTorch's segments left out */
    struct cmt_site_row *rows = malloc(top * sizeof *rows);
    if (!rows)
        return;
    for (size_t i = 0, k = 0; i < snap->n_rows && k < top; i++)
        if (snap->rows[i].holder != CMT_HOLDER_PYTORCH)
            rows[k++] = snap->rows[i];
    size_t *twins = CMT_TWINS_FIND(r, rows, top);
    for (size_t i = 0; i < top; i++) {
        const struct cmt_site_row *s = &rows[i];
        fprintf(out, "    %s in %" PRIu64 " %s (%s%s)\n", cmt_size_exact_str(s->bytes, b1, sizeof b1), s->count,
                cmt_plural(s->count, "allocation", "allocations"), cmt_api_name(s->api),
                cmt_ipc_exported(&r->ipc, s->stack) ? "; exported to another process" : "");
        print_frames(r, out, s->stack, "        ");
        CMT_PRINT_TWIN_NOTE(r, out, twins, rows, i, "        ");
    }
    free(twins);
    free(rows);
}

/* ---- the call tree ------------------------------------------------------------ */

struct tree_printer {
    const struct cmt_report *r;
    FILE *out;
    const struct cmt_call_tree *tree;
    uint64_t total;
    uint64_t threshold; /* nodes below are summarized */
    char prefix[512];
};

static void tree_figures(struct tree_printer *p, const struct cmt_tree_node *n, bool with_inclusive)
{
    char inc[32] = "", self[32] = "", pct[16] = "";
    if (with_inclusive) {
        cmt_format_size(n->inclusive, inc, sizeof inc);
        snprintf(pct, sizeof pct, "%5.1f%%", p->total ? 100.0 * (double)n->inclusive / (double)p->total : 0.0);
    }
    if (with_inclusive || n->self)
        cmt_format_size(n->self, self, sizeof self);
    fprintf(p->out, "    %10s %6s %10s  ", inc, pct, self);
}

static void tree_frame(struct tree_printer *p, const struct cmt_tree_node *n)
{
    char buf[1024];
    cmt_tree_node_describe(n, buf, sizeof buf);
    fprintf(p->out, "%s\n", cmt_esc(buf));
}

/* A node that holds nothing itself and has one child shown, and nothing
 * hidden, continues a path: its child is printed under it without a branch. */
static uint32_t only_child(const struct tree_printer *p, const struct cmt_tree_node *n)
{
    uint32_t c = n->first_child;
    if (n->self || c == CMT_TREE_NONE || p->tree->nodes[c].next_sibling != CMT_TREE_NONE ||
        p->tree->nodes[c].inclusive < p->threshold)
        return CMT_TREE_NONE;
    return c;
}

static void tree_children(struct tree_printer *p, const struct cmt_tree_node *n);

/* Prints node (after the branch glyph already in lead), the path it
 * continues into, then its branches. p->prefix holds what lines under it
 * start with. */
static void tree_node(struct tree_printer *p, const struct cmt_tree_node *node, const char *lead)
{
    const size_t max = p->r->opt->max_frames;
    tree_figures(p, node, true);
    fprintf(p->out, "%s%s", p->prefix, lead);
    tree_frame(p, node);
    size_t len = strlen(p->prefix);
    const char *cont = !*lead ? "" : !strcmp(lead, "`- ") ? "   " : "|  ";
    if (len + 3 < sizeof p->prefix)
        strcat(p->prefix, cont);
    /* The path's length first, to elide its middle when it is long. */
    size_t chain = 0;
    for (uint32_t c = only_child(p, node); c != CMT_TREE_NONE; c = only_child(p, &p->tree->nodes[c]))
        chain++;
    size_t shown = 0;
    const struct cmt_tree_node *n = node;
    for (uint32_t c = only_child(p, node); c != CMT_TREE_NONE; c = only_child(p, n)) {
        n = &p->tree->nodes[c];
        shown++;
        /* With --max-frames M: the first M - 1 frames of a long path and its last. */
        if (max && chain > max && shown >= max && shown < chain) {
            if (shown == max) {
                fprintf(p->out, "    %10s %6s %10s  %s... %zu more %s\n", "", "", "", p->prefix, chain - max,
                        cmt_plural(chain - max, "frame", "frames"));
            }
            continue;
        }
        tree_figures(p, n, false);
        fprintf(p->out, "%s", p->prefix);
        tree_frame(p, n);
    }
    tree_children(p, n);
    p->prefix[len] = '\0';
}

static void tree_children(struct tree_printer *p, const struct cmt_tree_node *n)
{
    if (only_child(p, n) != CMT_TREE_NONE && n->frame)
        return; /* printed as the continuation of n's path */
    uint64_t hidden = 0, hidden_count = 0;
    size_t hidden_paths = 0, shown = 0;
    uint32_t last = CMT_TREE_NONE;
    for (uint32_t c = n->first_child; c != CMT_TREE_NONE; c = p->tree->nodes[c].next_sibling) {
        const struct cmt_tree_node *k = &p->tree->nodes[c];
        if (k->inclusive >= p->threshold && k->inclusive) {
            last = c;
            shown++;
        } else {
            hidden += k->inclusive;
            hidden_count += k->inclusive_count;
            hidden_paths++;
        }
    }
    bool root_path = !n->frame && shown == 1 && !hidden_paths && !n->self;
    for (uint32_t c = n->first_child; c != CMT_TREE_NONE; c = p->tree->nodes[c].next_sibling) {
        const struct cmt_tree_node *k = &p->tree->nodes[c];
        if (k->inclusive < p->threshold || !k->inclusive)
            continue;
        bool is_last = c == last && !hidden_paths && !(n->frame == NULL && n->self);
        tree_node(p, k, root_path ? "" : is_last ? "`- " : "|- ");
    }
    if (hidden_paths) {
        char b[32], pct[16];
        cmt_format_size(hidden, b, sizeof b);
        snprintf(pct, sizeof pct, "%5.1f%%", p->total ? 100.0 * (double)hidden / (double)p->total : 0.0);
        fprintf(p->out, "    %10s %6s %10s  %s%s(%zu more %s below %.4g%%, %" PRIu64 " %s)\n", b, pct, "", p->prefix,
                !n->frame && n->self ? "|- " : "`- ", hidden_paths, cmt_plural(hidden_paths, "path", "paths"),
                p->r->opt->tree_min_percent, hidden_count, cmt_plural(hidden_count, "allocation", "allocations"));
    }
    if (!n->frame && n->self) {
        char b[32], pct[16];
        cmt_format_size(n->self, b, sizeof b);
        snprintf(pct, sizeof pct, "%5.1f%%", p->total ? 100.0 * (double)n->self / (double)p->total : 0.0);
        fprintf(p->out, "    %10s %6s %10s  `- (no stack recorded)\n", b, pct, b);
    }
}

static void print_tree(const struct cmt_report *r, FILE *out, const struct cmt_snapshot *snap, const char *when)
{
    const struct cmt_call_tree *t = &snap->tree;
    if (t->n == 0 || t->nodes[0].inclusive == 0)
        return;
    bool cache_apart = false;
    for (size_t i = 0; i < snap->n_rows && !cache_apart; i++)
        cache_apart = snap->rows[i].holder == CMT_HOLDER_PYTORCH;
    struct tree_printer p = {.r = r, .out = out, .tree = t, .total = t->nodes[0].inclusive};
    double pct = r->opt->tree_min_percent;
    p.threshold = pct > 0 ? (uint64_t)((double)p.total * pct / 100.0) : 0;
    if (p.threshold == 0)
        p.threshold = 1;
    fprintf(out, "  call tree %s%s (bytes held below each frame, their share, and bytes allocated in the frame "
                 "itself):\n",
            when, cache_apart ? ", outside PyTorch's cache" : "");
    fprintf(out, "    %10s %6s %10s  %s\n", "inclusive", "share", "self", "frame");
    tree_children(&p, &t->nodes[0]);
}

/* ---- accounts ------------------------------------------------------------------ */

static void print_by_kind(FILE *out, const uint64_t *by_kind, const char *when)
{
    char b2[64];
    int kinds = 0;
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
        kinds += by_kind[k] != 0;
    if (kinds <= 1)
        return;
    fprintf(out, "  %s:", when);
    bool first = true;
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++) {
        if (!by_kind[k])
            continue;
        cmt_format_size(by_kind[k], b2, sizeof b2);
        fprintf(out, "%s %s %s", first ? "" : ",", cmt_kind_name(k), b2);
        first = false;
    }
    fprintf(out, "\n");
}

static void print_chart(const struct cmt_report *r, const struct cmt_account_view *v, FILE *out)
{
    if (!v->series || !r->charts)
        return;
    fprintf(out, "  live bytes over time ('#' live throughout a column, ':' at times, '^' the peak):\n");
    cmt_timeline_chart(out, &r->chart, v->chart_series, r->opt->chart_height, "    ", r->trace.start_ns);
}

/* The device peak split by holder (memory_holder.h), and each holder's own
 * peak; nothing when the program alone held memory. */
static void print_holders(const struct cmt_report *r, const struct cmt_account_view *v, FILE *out)
{
    bool any = false;
    for (unsigned h = 1; h < CMT_HOLDER_DEVICE_COUNT; h++)
        any = any || v->peak_by_holder[h] || (v->has_own_peaks && v->own_peak[h].bytes);
    if (!any)
        return;
    char b1[64], b2[64];
    fprintf(out, "  by holder (at the device peak; each holder's own peak):\n");
    for (unsigned k = 1; k <= CMT_HOLDER_DEVICE_COUNT; k++) {
        unsigned h = k % CMT_HOLDER_DEVICE_COUNT; /* "other" last */
        const struct cmt_holder_peak *own = &v->own_peak[h];
        if (!v->peak_by_holder[h] && !(v->has_own_peaks && own->bytes))
            continue;
        cmt_size_exact_str(v->peak_by_holder[h], b1, sizeof b1);
        fprintf(out, "    %-8s %s", r->holder_name[h], b1);
        if (v->has_own_peaks && own->bytes) {
            cmt_size_exact_str(own->bytes, b2, sizeof b2);
            fprintf(out, "; own peak %s in %" PRIu64 " %s at %s", b2, own->count,
                    cmt_plural(own->count, "allocation", "allocations"), CMT_DURATION(cmt_report_rel_ns(r, own->ts)));
        }
        fprintf(out, "\n");
    }
    if (v->peak_by_holder[CMT_HOLDER_PYTORCH] || (v->has_own_peaks && v->own_peak[CMT_HOLDER_PYTORCH].bytes))
        fprintf(out, "    (PyTorch's own peak is its reserved memory at its highest: with its cache on, "
                     "torch.cuda.max_memory_reserved())\n");
}

/* Colour for the headline lines, only on a terminal, never with NO_COLOR
 * set (no-color.org) or TERM=dumb (docs/cli.md, "Terminal"). */
static const char *colour(FILE *out, const char *sgr)
{
    static int wanted = -1;
    if (wanted < 0) {
        const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
        wanted = isatty(fileno(out)) && !(no && *no) && !(term && !strcmp(term, "dumb"));
    }
    return wanted ? sgr : "";
}
#define SGR_PEAK "\033[1;33m"
#define SGR_LEAK "\033[1;35m"
#define SGR_FAIL "\033[1;31m"
#define SGR_OFF "\033[0m"

static void print_account(const struct cmt_report *r, const struct cmt_account_view *v, FILE *out)
{
    const struct cmt_account_figures *acc = &v->fig;
    char b1[64], label[64], when[64], at[32];
    cmt_account_label(acc, label, sizeof label);
    fprintf(out, "\n%s%s: peak %s%s in %" PRIu64 " %s at %s\n", colour(out, SGR_PEAK), label,
            cmt_size_exact_str(acc->peak, b1, sizeof b1), colour(out, SGR_OFF), acc->peak_count,
            cmt_plural(acc->peak_count, "allocation", "allocations"), CMT_DURATION(cmt_report_rel_ns(r, acc->peak_ts)));
    if (acc->cls != CMT_CLASS_MANAGED)
        print_by_kind(out, v->peak.by_kind, "at the peak");
    if (acc->cls == CMT_CLASS_DEVICE)
        print_holders(r, v, out);
    cmt_phases_text_peak(r, v, out);
    if (v->has_at) {
        cmt_format_duration(r->opt->at_ns, at, sizeof at);
        snprintf(when, sizeof when, "at %s", at);
        fprintf(out, "  live %s: %s in %" PRIu64 " %s\n", when, cmt_size_exact_str(acc->live, b1, sizeof b1),
                acc->live_count, cmt_plural(acc->live_count, "allocation", "allocations"));
        if (acc->cls != CMT_CLASS_MANAGED)
            print_by_kind(out, v->at.by_kind, when);
    } else {
        fprintf(out, "  live %s: %s in %" PRIu64 " %s\n", live_at_end(r), cmt_size_exact_str(acc->live, b1, sizeof b1),
                acc->live_count, cmt_plural(acc->live_count, "allocation", "allocations"));
    }
    print_chart(r, v, out);
    const struct cmt_snapshot *snap = v->has_at ? &v->at : &v->peak;
    const char *snap_when = v->has_at ? when : "at the peak";
    print_sites(r, out, snap, snap_when);
    print_tree(r, out, snap, snap_when);
}

static void print_virtual(const struct cmt_report *r, FILE *out)
{
    char b1[64], b2[64];
    for (int d = 0; d <= CMT_MAX_DEVICES; d++) {
        const struct cmt_virtual_stats *v = &r->trace.virt[d];
        if (!v->physical_peak && !v->reserve_peak && !v->map_peak)
            continue;
        if (d == 0)
            fprintf(out, "\nVirtual memory management (VMM), host\n");
        else
            fprintf(out, "\nVirtual memory management (VMM), device %d\n", d - 1);
        if (v->physical_peak) {
            fprintf(out, "  physical memory (cuMemCreate): peak %s, %s %s in %" PRIu64 " %s",
                    cmt_size_exact_str(v->physical_peak, b1, sizeof b1), live_at_end(r),
                    cmt_size_exact_str(v->physical_live, b2, sizeof b2), v->physical_count,
                    cmt_plural(v->physical_count, "handle", "handles"));
            if (d == 0)
                fprintf(out, " (counted in pinned host memory)\n");
            else
                fprintf(out, " (counted in device %d)\n", d - 1);
        }
        if (v->reserve_peak)
            fprintf(out, "  reserved address ranges: peak %s, %s %s in %" PRIu64 " %s\n",
                    cmt_size_exact_str(v->reserve_peak, b1, sizeof b1), live_at_end(r),
                    cmt_size_exact_str(v->reserve_live, b2, sizeof b2),
                    v->reserve_count, cmt_plural(v->reserve_count, "range", "ranges"));
        if (v->map_peak)
            fprintf(out, "  mappings: peak %s, %s %s in %" PRIu64 " %s\n", cmt_size_exact_str(v->map_peak, b1, sizeof b1),
                    live_at_end(r), cmt_size_exact_str(v->map_live, b2, sizeof b2), v->map_count,
                    cmt_plural(v->map_count, "mapping", "mappings"));
    }
}

enum leak_group { LEAK_ONCE, LEAK_REPEATED, LEAK_ADDRESS_SPACE };

static enum leak_group leak_group_of(const struct cmt_site_row *s)
{
    if (!cmt_kind_holds_memory(s->kind))
        return LEAK_ADDRESS_SPACE;
    return s->site_allocs <= 1 ? LEAK_ONCE : LEAK_REPEATED;
}

static void print_leak_rows(const struct cmt_report *r, FILE *out, enum leak_group group)
{
    char b1[64];
    size_t *twins = CMT_TWINS_FIND(r, r->leaks, r->n_leaks);
    /* --top rows of the group, then what the others add up to: a trace of
     * millions of events had a leaks section of 21,000 lines (issue 33);
     * the JSON and check list every one. */
    size_t shown = 0, rest = 0;
    uint64_t rest_bytes = 0, rest_count = 0;
    for (size_t i = 0; i < r->n_leaks; i++) {
        const struct cmt_site_row *s = &r->leaks[i];
        if (leak_group_of(s) != group)
            continue;
        if (shown == r->opt->top) {
            rest++;
            rest_bytes += s->bytes;
            rest_count += s->count;
            continue;
        }
        shown++;
        const char *one = "allocation", *many = "allocations";
        if (s->kind == CMT_KIND_VMM_RESERVE)
            one = "reserved range", many = "reserved ranges";
        else if (s->kind == CMT_KIND_VMM_MAP)
            one = "mapping", many = "mappings";
        fprintf(out, "    %s in %" PRIu64 " %s (%s, %s%s)", cmt_size_exact_str(s->bytes, b1, sizeof b1), s->count,
                cmt_plural(s->count, one, many), cmt_kind_name(s->kind), cmt_api_name(s->api),
                group == LEAK_ADDRESS_SPACE ? "; address space, not memory" : "");
        if (group == LEAK_REPEATED) {
            fprintf(out, "; the site allocated %" PRIu64 " times, freed %" PRIu64, s->site_allocs, s->site_frees);
            /* What a cache holds of the same stack is among the allocations
             * not freed, and is not leaked: said, or the figures mislead. */
            for (size_t k = 0; k < r->n_held; k++)
                if (r->held[k].stack == s->stack && r->held[k].kind == s->kind)
                    fprintf(out, ", %" PRIu64 " of them held by %s's cache (above)", r->held[k].count,
                            r->holder_name[r->held[k].holder]);
        }
        if (s->growing)
            fprintf(out, "; growing (see below)");
        if (cmt_ipc_exported(&r->ipc, s->stack))
            fprintf(out, "; exported to another process");
        fprintf(out, "\n");
        print_frames(r, out, s->stack, "        ");
        CMT_PRINT_TWIN_NOTE(r, out, twins, r->leaks, i, "        ");
    }
    free(twins);
    if (rest)
        fprintf(out, "    ... %zu more call %s: %s in %" PRIu64 " %s (--top N lists more; the JSON and check list "
                     "every one)\n",
                rest, cmt_plural(rest, "site", "sites"), cmt_size_exact_str(rest_bytes, b1, sizeof b1), rest_count,
                cmt_plural(rest_count, "allocation", "allocations"));
}

/* What caching allocators held at exit: their cache, not leaks (unless
 * --include-cached), with what this cannot tell apart. */
static void print_held(const struct cmt_report *r, FILE *out)
{
    char b1[64], when[48];
    snprintf(when, sizeof when, "%s", live_at_end(r));
    if (r->at) {
        char at[32];
        cmt_format_duration(r->opt->at_ns, at, sizeof at);
        snprintf(when, sizeof when, "at %s", at);
    }
    for (unsigned h = 1; h < CMT_HOLDER_COUNT; h++) {
        bool rows = false;
        for (size_t i = 0; i < r->n_held && !rows; i++)
            rows = r->held[i].holder == h;
        if (!rows)
            continue;
        const char *name = r->holder_name[h];
        fprintf(out, "\nHeld by %s %s (its cache, not counted as leaks; --include-cached counts it): %s in "
                     "%" PRIu64 " %s\n",
                name, when, cmt_size_exact_str(r->held_bytes[h], b1, sizeof b1), r->held_count[h],
                cmt_plural(r->held_count[h], "segment", "segments"));
        if (h == CMT_HOLDER_PYTORCH && r->blocks && r->blocks->on) {
            fprintf(out, "  %s.\n", cmt_holder_tensors_advice());
            if (r->tensors && r->tensors->on)
                continue; /* the tensors say what the segments held: their creators add nothing */
        } else
            fprintf(out, "  cumemtrace sees the segments %s reserved from CUDA, not what lives in them: memory your "
                         "program keeps alive by mistake inside a cached segment (a tensor held in a list) looks "
                         "the same as free cache. To tell them apart, %s.\n",
                    name, cmt_holder_cache_advice(h));
        fprintf(out, "  the call sites that first needed them:\n");
        for (size_t i = 0; i < r->n_held; i++) {
            const struct cmt_site_row *s = &r->held[i];
            if (s->holder != h)
                continue;
            fprintf(out, "    %s in %" PRIu64 " %s (%s, %s)\n", cmt_size_exact_str(s->bytes, b1, sizeof b1), s->count,
                    cmt_plural(s->count, "segment", "segments"), cmt_kind_name(s->kind), cmt_api_name(s->api));
            print_frames(r, out, s->stack, "        ");
        }
    }
}

/* What was live at exit but a suppression matched (check's, applied the
 * same way): shown apart, not counted as leaks. */
static void print_suppressed(const struct cmt_report *r, FILE *out)
{
    if (!r->n_suppressed)
        return;
    char b1[64], label[600];
    fprintf(out, "  suppressed (not counted as leaks; as `cumemtrace check` applies them): %s in %" PRIu64 " %s\n",
            cmt_size_exact_str(r->suppressed_bytes, b1, sizeof b1), r->suppressed_count,
            cmt_plural(r->suppressed_count, "allocation", "allocations"));
    for (size_t i = 0; i < r->n_suppressed; i++) {
        const struct cmt_site_row *s = &r->suppressed[i];
        cmt_report_suppression_label(r, s->suppression, label, sizeof label);
        fprintf(out, "    %s in %" PRIu64 " %s (%s, %s): %s\n", cmt_size_exact_str(s->bytes, b1, sizeof b1), s->count,
                cmt_plural(s->count, "allocation", "allocations"), cmt_kind_name(s->kind), cmt_api_name(s->api),
                label);
        print_frames(r, out, s->stack, "        ");
    }
}

/* With PyTorch's tensors recorded, the leaks below are those of device
 * memory outside its cache (its tensors' are in their section above): the
 * heading says so, and what the tensors' section found, so that "none"
 * here does not read as a denial of the leaks above (issue 33). */
static const char *leaks_heading(const struct cmt_report *r)
{
    return r->tensors && r->tensors->on ? "Leaks outside PyTorch's cache" : "Leaks";
}

static void tensor_leaks_pointer(const struct cmt_report *r, FILE *out)
{
    if (!r->tensors || !r->tensors->on)
        return;
    char b1[64];
    if (r->tensors->leak_count)
        fprintf(out, "  the tensors' leaks are under PyTorch's tensors above: %s in %" PRIu64 " %s\n",
                cmt_size_exact_str(r->tensors->leak_bytes, b1, sizeof b1), r->tensors->leak_count,
                cmt_plural(r->tensors->leak_count, "tensor", "tensors"));
    else
        fprintf(out, "  no tensor leaked either (PyTorch's tensors above)\n");
}

static void print_leaks(const struct cmt_report *r, FILE *out)
{
    print_held(r, out);
    char b1[64], at[32];
    if (r->at) {
        cmt_format_duration(r->opt->at_ns, at, sizeof at);
        if (r->n_leaks == 0) {
            fprintf(out, "\nLive at %s: nothing\n", at);
            return;
        }
        fprintf(out, "\nLive at %s by call site: %s in %" PRIu64 " %s\n", at,
                cmt_size_exact_str(r->leak_bytes, b1, sizeof b1), r->leak_count,
                cmt_plural(r->leak_count, "allocation", "allocations"));
    } else if (r->trace.live_basis == CMT_LIVE_AT_CUT || r->trace.live_basis == CMT_LIVE_IN_PROGRESS) {
        /* No exit to judge leaks by (issue 33): what was live at the end of
         * what was read, and what that cannot tell. */
        bool cut = r->trace.live_basis == CMT_LIVE_AT_CUT;
        bool said = !strcmp(r->trace.state, "truncated") || !strcmp(r->trace.state, "damaged");
        const char *why = cut && said ? "not leaks: see trace: above"
                          : cut       ? "the trace is cut short, truncated or damaged: an allocation live at the cut "
                                        "may have been released after it, and what came after it is unknown; not a "
                                        "list of leaks"
                                      : "the process is still running: these are not leaks, not yet";
        if (r->n_leaks == 0) {
            fprintf(out, "\nLive %s: nothing%s (%s)\n", live_at_end(r),
                    r->n_suppressed || r->n_held ? " but suppressed allocations or allocator caches" : "",
                    cut && said ? "see trace: above" : why);
            print_suppressed(r, out);
            return;
        }
        fprintf(out, "\nLive %s (%s): %s in %" PRIu64 " %s\n", live_at_end(r), why,
                cmt_size_exact_str(r->leak_bytes, b1, sizeof b1), r->leak_count,
                cmt_plural(r->leak_count, "allocation", "allocations"));
    } else {
        if (r->n_leaks == 0) {
            fprintf(out, r->n_suppressed ? "\n%s: none (nothing but suppressed allocations%s was live at exit)\n"
                         : r->n_held     ? "\n%s: none (nothing but allocator caches%s was live at exit)\n"
                                         : "\n%s: none (nothing was live at exit)%s\n",
                    leaks_heading(r), r->n_suppressed && r->n_held ? " and allocator caches" : "");
            tensor_leaks_pointer(r, out);
            print_suppressed(r, out);
            return;
        }
        fprintf(out, "\n%s%s (live at exit): %s%s in %" PRIu64 " %s\n", colour(out, SGR_LEAK), leaks_heading(r),
                cmt_size_exact_str(r->leak_bytes, b1, sizeof b1), colour(out, SGR_OFF), r->leak_count,
                cmt_plural(r->leak_count, "allocation", "allocations"));
        tensor_leaks_pointer(r, out);
    }
    if (r->leak_once_count) {
        /* With --at the run went on: "never freed" is unknown there. */
        char when[48] = "";
        if (r->at)
            snprintf(when, sizeof when, " by %s", at);
        fprintf(out, "  allocated once (the call site allocated a single time%s): %s in %" PRIu64 " %s\n",
                r->at                                         ? when
                : r->trace.live_basis == CMT_LIVE_AT_CUT        ? " before the cut"
                : r->trace.live_basis == CMT_LIVE_IN_PROGRESS ? " so far"
                                                              : ": start-up buffers, never freed",
                cmt_size_exact_str(r->leak_once_bytes, b1, sizeof b1), r->leak_once_count,
                cmt_plural(r->leak_once_count, "allocation", "allocations"));
        print_leak_rows(r, out, LEAK_ONCE);
    }
    if (r->leak_repeated_count) {
        fprintf(out, "  allocated repeatedly (the call site allocated many times and kept some): %s in %" PRIu64
                     " %s\n",
                cmt_size_exact_str(r->leak_repeated_bytes, b1, sizeof b1), r->leak_repeated_count,
                cmt_plural(r->leak_repeated_count, "allocation", "allocations"));
        print_leak_rows(r, out, LEAK_REPEATED);
    }
    bool address_space = false;
    for (size_t i = 0; i < r->n_leaks; i++)
        address_space = address_space || leak_group_of(&r->leaks[i]) == LEAK_ADDRESS_SPACE;
    if (address_space) {
        fprintf(out, "  VMM address space left reserved or mapped (address space, not memory):\n");
        print_leak_rows(r, out, LEAK_ADDRESS_SPACE);
    }
    if (!r->at)
        print_suppressed(r, out);
}

static void print_growth(const struct cmt_report *r, FILE *out)
{
    char b1[64], b2[64], b3[64], rate[64];
    if (r->n_growth == 0) {
        fprintf(out, "\nGrowing call sites: none (no call site's live bytes kept rising over %u checkpoints)\n",
                r->trace.growth_checkpoints);
        return;
    }
    size_t shown = r->n_growth < r->opt->top ? r->n_growth : r->opt->top;
    fprintf(out, "\nGrowing call sites (live bytes kept rising through the run): %zu", r->n_growth);
    if (shown < r->n_growth)
        fprintf(out, ", top %zu", shown);
    fprintf(out, "\n");
    for (size_t i = 0; i < shown; i++) {
        const struct cmt_growth_row *g = &r->growth[i];
        double v = g->verdict.rate;
        cmt_format_size(v > 0 ? (uint64_t)(v + 0.5) : 0, rate, sizeof rate);
        cmt_format_size(g->verdict.first, b2, sizeof b2);
        cmt_format_size(g->verdict.last, b3, sizeof b3);
        fprintf(out, "  +%s/s: %s live in %" PRIu64 " %s (%s, %s); the site allocated %" PRIu64
                     " times, freed %" PRIu64 "\n",
                rate, cmt_size_exact_str(g->live_bytes, b1, sizeof b1), g->live_count,
                cmt_plural(g->live_count, "allocation", "allocations"), cmt_kind_name(g->kind), cmt_api_name(g->api),
                g->allocs, g->frees);
        fprintf(out, "      rose from %s to %s over %zu samples (trend %.2f)\n", b2, b3, g->verdict.n,
                g->verdict.trend);
        print_frames(r, out, g->stack, "        ");
    }
}

static void print_failures(const struct cmt_report *r, FILE *out)
{
    const struct cmt_report_trace *t = &r->trace;
    if (t->failed_allocs == 0)
        return;
    char b1[64], b2[64], b3[160];
    uint64_t probing = r->failed_calls_probing, retrying = r->failed_calls_retrying;
    uint64_t failures = t->failed_allocs - probing - retrying;
    if (failures) {
        fprintf(out, "\n%sFailed allocations: %" PRIu64 "%s", colour(out, SGR_FAIL), failures, colour(out, SGR_OFF));
        if (retrying)
            fprintf(out, " (%" PRIu64 " calls: %" PRIu64 " of them a caching allocator asking again after a failure, "
                         "the same failure)",
                    failures + retrying, retrying);
        fprintf(out, "\n");
    }
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        if (g->probes == g->count)
            continue; /* below, apart */
        const char *err = cmt_cuda_error_name(g->result, cmt_api_is_driver(g->api));
        if (g->count == 1 || g->min_size == g->max_size)
            snprintf(b3, sizeof b3, "%s", cmt_size_exact_str(g->min_size, b1, sizeof b1));
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
        if (g->retries)
            fprintf(out, " (%" PRIu64 " of them the allocator's own retry)", g->retries);
        fprintf(out, "; this process had %s live on the device then, at %s\n",
                cmt_size_exact_str(g->live_device_bytes, b1, sizeof b1), CMT_DURATION(cmt_report_rel_ns(r, g->first_ts)));
        cmt_phases_text_failure(r, g->first_index, "      ", out);
        print_frames(r, out, g->stack, "      ");
    }
    if (t->failed_allocs > CMT_MAX_FAILURES_KEPT)
        fprintf(out, "  (details kept for the first %d failures)\n", CMT_MAX_FAILURES_KEPT);
    if (!probing)
        return;
    fprintf(out, "\nAllocator probes (failed by design and asked again at once, served: not failures): %" PRIu64 "\n",
            probing);
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        if (g->probes != g->count)
            continue;
        fprintf(out, "  %s of %s failed with %s (%d)%s, then served; at %s\n", cmt_api_name(g->api),
                cmt_size_exact_str(g->min_size, b1, sizeof b1), cmt_cuda_error_name(g->result, cmt_api_is_driver(g->api)),
                g->result, g->count > 1 ? " each time" : "", CMT_DURATION(cmt_report_rel_ns(r, g->first_ts)));
        print_frames(r, out, g->stack, "      ");
    }
}

/* The warnings, less what the header's trace: line said (the text's
 * only; the JSON keeps every one): a truncated trace's cut and what it
 * means for the leaks; a chunk's missing bytes stay, without the
 * "trace is truncated" they start with. */
static const char *warning_text(const struct cmt_report *r, const char *w)
{
    static const char truncated[] = "trace is truncated: ";
    bool said = !strcmp(r->trace.state, "truncated") || !strcmp(r->trace.state, "damaged");
    if (!said)
        return w;
    if (!strncmp(w, "the trace ends at a cut", strlen("the trace ends at a cut")) ||
        !strncmp(w, "trace is truncated: the file ends at offset", strlen("trace is truncated: the file ends at offset")))
        return NULL;
    return strncmp(w, truncated, strlen(truncated)) ? w : w + strlen(truncated);
}

static void print_warnings(const struct cmt_report *r, FILE *out)
{
    bool any = false;
    for (size_t i = 0; i < r->n_warnings; i++) {
        const char *w = warning_text(r, r->warnings[i]);
        if (!w)
            continue;
        if (!any)
            fprintf(out, "\nWarnings:\n");
        any = true;
        /* "it ends inside a record": the file, once "trace is truncated" is gone */
        bool it = w != r->warnings[i] && !strncmp(w, "it ", 3);
        fprintf(out, "  - %s%s\n", it ? "the file " : "", cmt_esc(it ? w + 3 : w));
    }
}

void cmt_report_render_text(const struct cmt_report *r, FILE *out)
{
    print_header(r, out);
    cmt_tensors_render_text(r, out);
    for (size_t i = 0; i < r->n_accounts; i++)
        print_account(r, &r->accounts[i], out);
    print_virtual(r, out);
    cmt_ipc_render_text(r, out);
    print_leaks(r, out);
    cmt_ipc_render_text_leaks(r, out);
    print_growth(r, out);
    cmt_usage_render_text(r, out);
    cmt_phases_render_text(r, out);
    print_failures(r, out);
    cmt_blocks_render_text(r, out);
    if (r->whatif)
        cmt_whatif_render_section(r->whatif, out);
    cmt_forensics_render_text(r, out, false);
    print_warnings(r, out);
}
