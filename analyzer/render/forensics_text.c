/* SPDX-License-Identifier: MIT */
/* The forensics in text: the report's "Out-of-memory forensics" and
 * "Fragmentation" sections, and `cumemtrace frag` (full). docs/fragmentation.md
 * shows and explains them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "blocks_report.h"
#include "cuda_errors.h"
#include "forensics_report.h"
#include "report.h"
#include "size_parse.h"
#include "timeline_chart.h"
#include "render_parts.h"
#include "units.h"
#include "text_escape.h"

/* Sizes in a sentence: "1.5 GiB". */
#define SZ(buf, v) (cmt_format_size((v), (buf), sizeof(buf)), (buf))

/* A time since the start of the trace, in the unit its magnitude calls for. */
#define AT(r, ts) CMT_DURATION(cmt_report_rel_ns((r), (ts)))

/* Where the replay ended: "exit", or the instant --at asked for. */
static const char *end_label(const struct cmt_report *r, char *buf, size_t len)
{
    if (!r->at)
        return "exit";
    cmt_format_duration(r->opt->at_ns, buf, len);
    return buf;
}

/* "fill_device at frag.c:20": the first frame shown for a call site, its
 * control characters escaped for the terminal (text_escape.h). */
static const char *site_label(const struct cmt_report *r, uint64_t stack, char *buf, size_t len)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    char raw[1024];
    if (sf->n == 0)
        snprintf(buf, len, "(no stack recorded)");
    else
        cmt_escape_into((cmt_frame_describe(&sf->frames[0], raw, sizeof raw), raw), buf, len);
    return buf;
}

static void print_frames(const struct cmt_report *r, FILE *out, uint64_t stack, const char *indent, size_t max)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    if (sf->n == 0) {
        fprintf(out, "%s(no stack recorded)\n", indent);
        return;
    }
    size_t limit = max && max < sf->n ? max : sf->n;
    char buf[1024];
    for (size_t i = 0; i < limit; i++) {
        cmt_frame_describe(&sf->frames[i], buf, sizeof buf);
        fprintf(out, "%s%s\n", indent, cmt_esc(buf));
    }
    if (limit < sf->n)
        fprintf(out, "%s... %zu more %s\n", indent, sf->n - limit, cmt_plural(sf->n - limit, "frame", "frames"));
}

/* --- verdicts in words --------------------------------------------------------- */

static const char *verdict_words(enum cmt_verdict v)
{
    switch (v) {
    case CMT_VERDICT_NOT_OOM:
        return "not out of memory";
    case CMT_VERDICT_CAPACITY:
        return "capacity";
    case CMT_VERDICT_FRAGMENTATION:
        return "fragmentation";
    case CMT_VERDICT_CACHING:
        return "caching";
    case CMT_VERDICT_OTHER_CONSUMERS:
        return "other consumers";
    default:
        return "unknown";
    }
}

/* "; replayed (...): the recorded settings fail here as the run did; ..."
 * after PyTorch's own verdict (oom_replay.h). */
static void append_found(const struct cmt_oom_view *v, char *buf, size_t len)
{
    size_t at = strlen(buf);
    if (!v->replay.on || at + 3 >= len)
        return;
    snprintf(buf + at, len - at, "; ");
    cmt_oom_replay_found(&v->replay, buf + at + 2, len - at - 2);
}

void cmt_oom_explain(const struct cmt_oom_view *v, char *buf, size_t len)
{
    const struct cmt_oom_figures *f = &v->fig;
    const struct cmt_verdict_result *x = &v->verdict;
    char a[32], b[32], c[32], d[32], e[32], g[32], h[32], i[32];
    switch (x->rule) {
    case CMT_VRULE_NOT_OOM:
        snprintf(buf, len, "the call failed with %s, which is not a shortage of memory",
                 cmt_cuda_error_name(v->c->result, cmt_api_is_driver(v->c->api)));
        break;
    case CMT_VRULE_RETRIED_AFTER_RELEASE:
        snprintf(buf, len,
                 "a caching allocator held freed memory: right after the failure this thread released %s in %" PRIu64
                 " %s and asked for the same %s again, which %s",
                 SZ(a, f->released_after), v->c->releases_after, cmt_plural(v->c->releases_after, "allocation", "allocations"),
                 SZ(b, f->request), v->c->retry_result == 0 ? "succeeded" : "failed again");
        break;
    case CMT_VRULE_NO_SAMPLE_SPAN:
        snprintf(buf, len,
                 "no device sample was recorded for this failure; in this process's address span %s were free, "
                 "more than the %s asked for, but the largest free range was %s",
                 SZ(a, f->span_free), SZ(b, f->request), SZ(c, f->largest_hole));
        break;
    case CMT_VRULE_NO_SAMPLE:
        snprintf(buf, len,
                 "no device sample was recorded for this failure, so capacity, caching and other consumers "
                 "cannot be told apart");
        break;
    case CMT_VRULE_LARGER_THAN_DEVICE:
        /* what the device can hold: its memory less the context's share */
        snprintf(buf, len,
                 "the request alone (%s) exceeds what the device can hold by %s: its %s less the context's share "
                 "(%s) leaves %s",
                 SZ(a, f->request), SZ(b, x->excess), SZ(c, f->total), SZ(d, x->allowance),
                 SZ(e, f->request - x->excess));
        break;
    case CMT_VRULE_LIVE_PLUS_REQUEST:
        snprintf(buf, len,
                 "this process's live data (%s) plus the request (%s) and the context's share (%s) exceed the "
                 "device's %s: the data does not fit",
                 SZ(a, f->live), SZ(b, f->request), SZ(c, x->allowance), SZ(d, f->total));
        break;
    case CMT_VRULE_POOLS_COVER:
        snprintf(buf, len,
                 "the device had %s free, %s short of the request; stream-ordered pools held %s reserved but "
                 "unused, enough to cover it, and a failing allocation does not make pools give memory back",
                 SZ(a, f->free), SZ(b, x->shortfall), SZ(c, f->pool_slack_other));
        break;
    case CMT_VRULE_OTHERS_COVER:
        snprintf(buf, len,
                 /* the context's true share is not known: the allowance is
                  * an estimate, so the figure is a bound, and the other
                  * bound (no allowance at all) is said beside it */
                 "the device had %s free, %s short of the request; at least %s of the %s in use are not this "
                 "process's, %s if its context holds nothing (in use minus its live %s, its pools' unused %s and "
                 "the context allowance %s)",
                 SZ(a, f->free), SZ(b, x->shortfall), SZ(c, x->others), SZ(d, x->used), SZ(i, x->unexplained),
                 SZ(e, f->live), SZ(g, f->pool_slack), SZ(h, x->allowance));
        break;
    case CMT_VRULE_OWN_POOL:
        snprintf(buf, len,
                 "the device had %s free, %s short of the request; the pool it was asked from held %s reserved but "
                 "unused, enough in total, yet no range that large: its free space is fragmented",
                 SZ(a, f->free), SZ(b, x->shortfall), SZ(c, f->pool_slack - f->pool_slack_other));
        break;
    case CMT_VRULE_POOLS_AND_OTHERS:
        snprintf(buf, len,
                 "the device had %s free, %s short of the request; neither the pools' unused %s nor the %s used by "
                 "other consumers covers it alone; the larger share names the verdict",
                 SZ(a, f->free), SZ(b, x->shortfall), SZ(c, f->pool_slack_other), SZ(d, x->others));
        break;
    case CMT_VRULE_ENOUGH_FREE:
        snprintf(buf, len,
                 "the device had %s free, at least the %s asked for, but no free range that large; in this "
                 "process's address span %" PRIu64 " %s held %s, the largest %s",
                 SZ(a, f->free), SZ(b, f->request), v->c->span.count, cmt_plural(v->c->span.count, "hole", "holes"),
                 SZ(c, f->span_free), SZ(d, f->largest_hole));
        break;
    case CMT_VRULE_CACHE_FRAGMENTED: {
        const struct cmt_blocks_oom *o = v->block_oom;
        snprintf(buf, len,
                 "fragmentation inside PyTorch's cache (its own record of the failure, the block layer): it held "
                 "%s reserved but unallocated and the device %s free, enough for the %s asked, but no free range "
                 "that large; its reserve counts as live memory in the device's figures (%s live)",
                 SZ(a, o->cache_free), SZ(b, o->device_free), SZ(c, o->rounded), SZ(d, f->live));
        append_found(v, buf, len);
        break;
    }
    case CMT_VRULE_CACHE_FULL: {
        const struct cmt_blocks_oom *o = v->block_oom;
        snprintf(buf, len,
                 "capacity, by PyTorch's cache's own record of the failure (the block layer): its tensors held %s, "
                 "it had %s reserved but unallocated and the device %s free, %s short of the %s asked: the data "
                 "does not fit",
                 SZ(a, o->at.allocated), SZ(b, o->cache_free), SZ(c, o->device_free), SZ(d, x->excess),
                 SZ(e, o->rounded));
        append_found(v, buf, len);
        break;
    }
    default:
        snprintf(buf, len, "no rule applied");
    }
    /* PyTorch ran with its cache off: what the cache would have done */
    if (v->replay.uncached)
        append_found(v, buf, len);
}

void cmt_oom_remedy(const struct cmt_oom_view *v, char *buf, size_t len)
{
    const char *family = v->allocator_remedy;
    char extra[600] = "";
    if (*family)
        snprintf(extra, sizeof extra, "; this allocation came from %s's caching allocator: %s",
                 v->allocator_name, family);
    switch (v->verdict.verdict) {
    case CMT_VERDICT_NOT_OOM:
        snprintf(buf, len, "check the call's arguments against what %s accepts", cmt_api_name(v->c->api));
        return;
    case CMT_VERDICT_CAPACITY:
        /* Larger than the device: no allocator setting makes it fit, so
         * none is suggested. */
        if (v->verdict.no_setting_fits) {
            char a[32], b[32];
            snprintf(buf, len,
                     "ask for less at once: this one request is %s more than the device can hold (%s), which no "
                     "allocator setting changes; split the data into smaller batches or tiles, shard it across "
                     "GPUs, or use a GPU with more memory",
                     SZ(a, v->verdict.excess), SZ(b, v->fig.request - v->verdict.excess));
            return;
        }
        /* PyTorch's block layer saw its cache nearly full of tensors:
         * neither expandable segments nor emptying the cache frees enough. */
        if (v->cache_cannot_serve && cmt_oom_replay_remedy(&v->replay, true, buf, len))
            return;
        if (v->cache_cannot_serve) {
            char a[32];
            snprintf(buf, len,
                     "PyTorch's cache then held only %s reserved but unallocated (its block layer), so no allocator "
                     "setting frees enough: release or reuse what the call sites below hold before this point, use "
                     "smaller batches or tiles, or a GPU with more memory",
                     SZ(a, v->block_oom->cache_free));
            return;
        }
        snprintf(buf, len,
                 "need less memory at once: release or reuse what the call sites below hold before this point, use "
                 "smaller batches or tiles, or a GPU with more memory%s",
                 extra);
        return;
    case CMT_VERDICT_FRAGMENTATION:
        if (v->verdict.rule == CMT_VRULE_CACHE_FRAGMENTED && cmt_oom_replay_remedy(&v->replay, false, buf, len))
            return;
        if (v->verdict.rule == CMT_VRULE_CACHE_FRAGMENTED) {
            snprintf(buf, len,
                     "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments then grow in place and the "
                     "cache's free bytes serve a request of any size (PyTorch's own record says it would have "
                     "served this one); or max_split_size_mb to keep large blocks from being split, or "
                     "torch.cuda.empty_cache() before the large request");
            return;
        }
        snprintf(buf, len,
                 "allocate long-lived buffers first and together, reuse fixed-size buffers or round sizes to a few "
                 "classes, or allocate from a stream-ordered pool (cudaMallocAsync) whose memory the driver maps "
                 "in pages%s",
                 extra);
        return;
    case CMT_VERDICT_CACHING:
        if (v->verdict.rule == CMT_VRULE_RETRIED_AFTER_RELEASE)
            snprintf(buf, len, "%s",
                     *family ? family
                             : "the allocator's cache stranded the memory it had to release: cap the cache or "
                               "release it between phases");
        else
            snprintf(buf, len,
                     "make the pools give unused memory back before large allocations outside them: "
                     "cudaMemPoolTrimTo(pool, 0), or a lower release threshold (cudaMemPoolSetAttribute with "
                     "cudaMemPoolAttrReleaseThreshold); or allocate this from the pool too (cudaMallocAsync)%s",
                     extra);
        return;
    case CMT_VERDICT_OTHER_CONSUMERS:
        snprintf(buf, len,
                 "another process, or memory allocated outside the calls cumemtrace records, holds the device: "
                 "nvidia-smi lists the processes on it; run alone, give each process its own GPU "
                 "(CUDA_VISIBLE_DEVICES), or cap the others (MPS's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, "
                 "torch.cuda.set_per_process_memory_fraction)");
        return;
    default:
        snprintf(buf, len, "trace again with sampling on (CUMEMTRACE_SAMPLE_MS) so the failure has a device sample");
        return;
    }
}

/* --- out-of-memory forensics ---------------------------------------------------- */

/* The failure before v that PyTorch raised for on v's thread, of the same
 * size (its OOM record came before v): v is the program asking again after
 * catching torch.OutOfMemoryError (report_build.c: not the allocator's
 * retry). NULL when none. */
static const struct cmt_oom_view *raised_before(const struct cmt_forensics_report *fr, const struct cmt_oom_view *v)
{
    for (size_t k = (size_t)(v - fr->oom); k-- > 0;) {
        const struct cmt_oom_view *p = &fr->oom[k];
        if (p->probe || p->retry_of != SIZE_MAX || p->c->tid != v->c->tid || p->c->device != v->c->device)
            continue;
        return p->c->size == v->c->size && p->block_oom && p->block_oom->at.ts < v->c->ts ? p : NULL;
    }
    return NULL;
}

static void print_oom_case(const struct cmt_report *r, const struct cmt_forensics_report *fr,
                           const struct cmt_oom_view *v, FILE *out, bool full)
{
    const struct cmt_oom_case *c = v->c;
    char a[32], b[32], c1[32], text[1600];
    fprintf(out, "  %s of %s (%" PRIu64 " B)", cmt_api_name(c->api), SZ(a, c->size), c->size);
    if (c->device >= 0)
        fprintf(out, " on device %d", c->device);
    fprintf(out, " failed at %s with %s (%d)\n", AT(r, c->ts),
            cmt_cuda_error_name(c->result, cmt_api_is_driver(c->api)), c->result);
    const struct cmt_oom_view *before = raised_before(fr, v);
    if (before)
        fprintf(out, "    the program asked again: PyTorch raised torch.OutOfMemoryError for the same request at %s "
                     "(the failure at %s) and the program went on: a failure of its own, not PyTorch's retry\n",
                AT(r, before->block_oom->at.ts), AT(r, before->c->ts));
    cmt_oom_explain(v, text, sizeof text);
    fprintf(out, "    verdict: %s (rule %s): %s\n", verdict_words(v->verdict.verdict),
            v->rule_id, text);
    cmt_oom_remedy(v, text, sizeof text);
    fprintf(out, "    what to try: %s\n", text);
    fprintf(out, "    this process then: %s live on %s", SZ(a, c->live), c->device >= 0 ? "the device" : "the host");
    bool first = true;
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++) {
        if (!c->live_by_kind[k])
            continue;
        fprintf(out, "%s%s %s", first ? " (" : ", ", cmt_kind_name(k), SZ(b, c->live_by_kind[k]));
        first = false;
    }
    fprintf(out, "%s\n", first ? "" : ")");
    if (c->has_sample)
        fprintf(out, "    device %d then: %s free of %s; stream-ordered pools %s reserved, %s used\n", c->device,
                SZ(a, c->free), SZ(b, c->total), SZ(c1, c->pool_reserved), SZ(text, c->pool_used));
    else
        fprintf(out, "    device then: no sample recorded\n");
    if (c->device >= 0) {
        if (c->span.allocations == 0)
            fprintf(out, "    address span: no live allocations\n");
        else
            fprintf(out, "    address span: %s from 0x%" PRIx64 "%s%s in %" PRIu64 " %s, %" PRIu64 " %s of %s, largest %s\n",
                    SZ(a, cmt_holes_span_bytes(&c->span)), c->span.lo,
                    c->span.between_regions ? " (plain and pool regions, the gap between them left out)" : "",
                    c->span.address_space ? " (address space that is not memory left out: a VMM reservation, "
                                            "another process's memory mapped, or a gap wider than the device)"
                                          : "",
                    c->span.allocations, cmt_plural(c->span.allocations, "allocation", "allocations"), c->span.count,
                    cmt_plural(c->span.count, "hole", "holes"), SZ(b, c->span.total), SZ(c1, c->span.largest));
    }
    for (size_t i = 0; i < c->n_pools; i++) {
        const struct cmt_oom_pool *p = &c->pools[i];
        if (!full && !p->reserved && !p->used)
            continue;
        const char *what = (p->flags & 1) ? "default pool" : (p->flags & 2) ? "current pool" : "pool";
        fprintf(out, "    %s 0x%" PRIx64 ": %s reserved, %s used, release threshold %s\n", what, p->handle,
                SZ(a, p->reserved), SZ(b, p->used), p->threshold == UINT64_MAX ? "unlimited" : SZ(c1, p->threshold));
    }
    if (c->releases_after || c->trims_after || c->retried) {
        fprintf(out, "    afterwards this thread");
        if (c->releases_after)
            fprintf(out, " released %s in %" PRIu64 " %s%s", SZ(a, c->released_after), c->releases_after,
                    cmt_plural(c->releases_after, "allocation", "allocations"), c->trims_after ? "," : "");
        if (c->trims_after)
            fprintf(out, " trimmed pools %" PRIu64 " %s, giving back %s", c->trims_after,
                    cmt_plural(c->trims_after, "time", "times"), SZ(b, c->trimmed_bytes));
        if (c->retried && v->retries)
            fprintf(out, "%s asked for the same size again: failed again, %" PRIu64 " %s (%s's own retry, the last at "
                         "%s: the same failure)\n",
                    c->releases_after || c->trims_after ? " and" : "", v->retries, cmt_plural(v->retries, "time", "times"),
                    *v->allocator_name ? v->allocator_name : "the allocator", AT(r, v->last_retry_ts));
        else if (c->retried)
            fprintf(out, "%s asked for the same size again: %s\n", c->releases_after || c->trims_after ? " and" : "",
                    c->retry_result == 0 ? "success" : "failed again");
        else
            fprintf(out, "%s did not ask for the same size again\n",
                    c->releases_after || c->trims_after ? " and" : "");
    }
    size_t top = full ? r->opt->top : (r->opt->top < 3 ? r->opt->top : 3);
    size_t n = v->n_top < top ? v->n_top : top;
    if (n) {
        fprintf(out, "    live call sites then");
        if (v->n_top > n)
            fprintf(out, " (top %zu of %zu)", n, v->n_top);
        fprintf(out, ":\n");
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "      %s in %" PRIu64 " %s\n", SZ(a, v->top[i].bytes), v->top[i].count,
                cmt_plural(v->top[i].count, "allocation", "allocations"));
        print_frames(r, out, v->top[i].stack, "          ", full ? r->opt->max_frames : 3);
    }
    fprintf(out, "    failing call site:\n");
    print_frames(r, out, v->stack, "          ", full ? r->opt->max_frames : 3);
}

/* A caching allocator's probes: failed by design, asked again and served. */
static void print_probes(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out)
{
    char a[32];
    if (!fr->n_probes)
        return;
    fprintf(out, "  allocator probes (not failures: each was asked again at once and served): %zu\n", fr->n_probes);
    for (size_t i = 0; i < fr->n_oom; i++) {
        const struct cmt_oom_view *v = &fr->oom[i];
        if (!v->probe)
            continue;
        fprintf(out, "    %s of %s by %s's caching allocator at %s: %s (%d), then served\n", cmt_api_name(v->c->api),
                SZ(a, v->c->size), v->allocator_name, AT(r, v->c->ts),
                cmt_cuda_error_name(v->c->result, cmt_api_is_driver(v->c->api)), v->c->result);
    }
}

static void print_oom(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out, bool full)
{
    if (fr->n_oom == 0)
        return;
    char a[32];
    uint64_t calls = fr->failures_seen;
    if (fr->n_failures)
        fprintf(out, "\nOut-of-memory forensics: %zu %s examined of %" PRIu64 " failed allocation %s (context allowance "
                     "%s)\n",
                fr->n_failures, cmt_plural(fr->n_failures, "failure", "failures"), calls,
                cmt_plural(calls, "call", "calls"), SZ(a, fr->allowance));
    else
        fprintf(out, "\nOut-of-memory forensics: no failure; %" PRIu64 " failed allocation %s\n", calls,
                cmt_plural(calls, "call", "calls"));
    size_t limit = full ? SIZE_MAX : 10, n = 0;
    for (size_t i = 0; i < fr->n_oom; i++) {
        const struct cmt_oom_view *v = &fr->oom[i];
        if (v->probe || v->retry_of != SIZE_MAX)
            continue;
        if (n++ < limit)
            print_oom_case(r, fr, v, out, full);
    }
    if (n > limit)
        fprintf(out, "  ... %zu more (cumemtrace frag or --json shows every one)\n", n - limit);
    print_probes(r, fr, out);
    if (!fr->n_failures)
        return;
    unsigned counts[CMT_VERDICT_COUNT] = {0};
    for (size_t i = 0; i < fr->n_oom; i++)
        if (!fr->oom[i].probe && fr->oom[i].retry_of == SIZE_MAX)
            counts[fr->oom[i].verdict.verdict]++;
    fprintf(out, "  verdicts:");
    bool first = true;
    for (int v = 0; v < CMT_VERDICT_COUNT; v++)
        if (counts[v]) {
            fprintf(out, "%s %s %u", first ? "" : ",", verdict_words((enum cmt_verdict)v), counts[v]);
            first = false;
        }
    fprintf(out, "\n");
}

/* --- fragmentation --------------------------------------------------------------- */

static void print_point(const struct cmt_report *r, const struct cmt_frag_point *p, FILE *out)
{
    char a[32], b[32], c[32], d[32];
    fprintf(out, "%10s  %12s live  %12s span  %6" PRIu64 " holes  %12s free  %12s largest  ratio %.2f\n",
            AT(r, p->ts), SZ(a, p->live), SZ(b, cmt_holes_span_bytes(&p->holes)), p->holes.count,
            SZ(c, p->holes.total), SZ(d, p->holes.largest), cmt_holes_ratio(&p->holes));
}

static void print_hole(const struct cmt_report *r, const struct cmt_hole_view *h, FILE *out, bool full)
{
    char a[32], b[32], c[32], l1[512], l2[512], l3[512], end[32], live[48];
    snprintf(live, sizeof live, ", live at %s", end_label(r, end, sizeof end));
    fprintf(out, "      %s at 0x%" PRIx64 ", between %s from %s (allocated at %s%s) and %s from %s (%s%s)\n",
            SZ(a, h->size), h->addr, SZ(b, h->left.end - h->left.addr), site_label(r, cmt_frames_canonical(r->frames, h->left.stack), l1, sizeof l1),
            AT(r, h->left.ts), h->left_live_at_exit ? live : "", SZ(c, h->right.end - h->right.addr),
            site_label(r, cmt_frames_canonical(r->frames, h->right.stack), l2, sizeof l2), AT(r, h->right.ts),
            h->right_live_at_exit ? live : "");
    if (full && h->left.opener)
        fprintf(out, "        opened at %s by releasing an allocation from %s\n", AT(r, h->left.opened_ts),
                site_label(r, cmt_frames_canonical(r->frames, h->left.opener), l3, sizeof l3));
}

static void print_device_frag(const struct cmt_report *r, const struct cmt_forensics_report *fr, int d, FILE *out,
                              bool full)
{
    const struct cmt_device_forensics *dev = fr->devices[d];
    char a[32], b[32], c[32], e[32], s1[32], s2[32];
    /* report sorts the live set at each checkpoint, frag keeps an index:
     * report takes fewer (docs/fragmentation.md), and says so. */
    fprintf(out, "  Device %d: %zu %s%s", d, dev->point_series.n, cmt_plural(dev->point_series.n, "checkpoint", "checkpoints"),
            full ? "" : " (the report checks less often than `cumemtrace frag`)");
    if (!dev->worst.valid) {
        fprintf(out, "; no fragmentation: the free space between live allocations never split\n");
    } else {
        const struct cmt_frag_point *w = &dev->worst.point;
        fprintf(out, "; worst at %s: %" PRIu64 " %s, %s free between live allocations, largest %s, "
                     "fragmentation ratio %.2f",
                AT(r, w->ts), w->holes.count, cmt_plural(w->holes.count, "hole", "holes"), SZ(a, w->holes.total),
                SZ(b, w->holes.largest), cmt_holes_ratio(&w->holes));
        /* The bytes outside the largest hole serve requests up to the
         * second largest hole, that size included. */
        uint64_t second = dev->worst.n_top > 1 ? dev->worst.top[1].size : 0;
        if (cmt_holes_stranded(&w->holes) && second)
            fprintf(out, " (%s outside the largest hole, usable only by requests of %s or less)",
                    SZ(c, cmt_holes_stranded(&w->holes)), SZ(e, second));
        fprintf(out, "; span %s, %s live\n", SZ(s1, cmt_holes_span_bytes(&w->holes)), SZ(s2, w->live));
        size_t nh = full ? dev->worst.n_top : (dev->worst.n_top < 3 ? dev->worst.n_top : 3);
        if (nh)
            fprintf(out, "    largest holes then:\n");
        for (size_t i = 0; i < nh; i++)
            print_hole(r, &dev->worst.top[i], out, full);
        size_t np = fr->n_pins[d] < (full ? r->opt->top : 3) ? fr->n_pins[d] : (full ? r->opt->top : 3);
        if (np)
            fprintf(out, "    call sites whose live allocations bound the holes then:\n");
        for (size_t i = 0; i < np; i++) {
            const struct cmt_pin_view *p = &fr->pins[d][i];
            fprintf(out, "      %s in %" PRIu64 " %s beside %" PRIu64 " of its allocations, the oldest from %s:\n",
                    SZ(a, p->pinned_bytes), p->holes, cmt_plural(p->holes, "hole", "holes"), p->allocations,
                    AT(r, p->oldest_ts));
            print_frames(r, out, p->stack, "          ", full ? r->opt->max_frames : 3);
        }
    }
    const struct cmt_frag_point *x = &dev->last_point;
    fprintf(out, "    at %s: %" PRIu64 " %s of %s, largest %s\n", end_label(r, c, sizeof c), x->holes.count,
            cmt_plural(x->holes.count, "hole", "holes"), SZ(a, x->holes.total), SZ(b, x->holes.largest));
    /* Address space is not memory: said apart, never among the holes. */
    if (x->vmm_reserved)
        fprintf(out, "    address space reserved (VMM) at %s: %s, mapped %s: not memory, no hole is counted in it\n",
                end_label(r, c, sizeof c), SZ(a, x->vmm_reserved), SZ(b, x->vmm_mapped));
    if (x->holes.address_space) {
        fprintf(out, "    address space between allocations at %s, left out of the span: %s (gaps with a VMM "
                     "reservation or another process's memory mapped in them",
                end_label(r, c, sizeof c), SZ(a, x->holes.address_space));
        if (dev->device_bytes)
            fprintf(out, " or wider than the device's %s", SZ(b, dev->device_bytes));
        fprintf(out, ": not free memory)\n");
    }
    if (dev->pitch_waste_peak || dev->round_waste_peak)
        fprintf(out, "    internal waste live at once: pitch padding up to %s (at %s), rounding to 512 B up to %s (at %s)\n",
                SZ(a, dev->pitch_waste_peak), AT(r, dev->pitch_waste_peak_ts), SZ(b, dev->round_waste_peak),
                AT(r, dev->round_waste_peak_ts));
    if (full && dev->point_series.n) {
        size_t n = dev->point_series.n, rows = n < 24 ? n : 24;
        fprintf(out, "    over time (%zu of %zu checkpoints):\n", rows, n);
        for (size_t i = 0; i < rows; i++) {
            fprintf(out, "    ");
            print_point(r, &dev->points[rows == n ? i : i * (n - 1) / (rows - 1)], out);
        }
    }
}

static void print_frag(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out, bool full)
{
    bool any = false;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        any |= fr->devices[d] && fr->devices[d]->point_series.n;
    if (!any)
        return;
    bool split = false;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        split |= fr->devices[d] && fr->devices[d]->worst.valid;
    if (!split && !full) {
        fprintf(out, "\nFragmentation: none (the free space between this process's live device allocations "
                     "never split)\n");
        return;
    }
    fprintf(out, "\nFragmentation (free ranges between this process's live device allocations)\n");
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (fr->devices[d] && fr->devices[d]->point_series.n)
            print_device_frag(r, fr, d, out, full);
    if (full && fr->track_holes) {
        size_t n = fr->n_openers < r->opt->top ? fr->n_openers : r->opt->top;
        char a[32], b[32];
        fprintf(out, "  call sites whose releases opened holes (between two live allocations)%s\n",
                n ? ", largest hole first:" : ": none");
        for (size_t i = 0; i < n; i++) {
            const struct cmt_opener_view *o = &fr->openers[i];
            fprintf(out, "    %" PRIu64 " %s, largest hole %s, %s in all\n", o->count, cmt_plural(o->count, "release", "releases"),
                    SZ(a, o->largest), SZ(b, o->bytes));
            print_frames(r, out, o->stack, "        ", r->opt->max_frames);
        }
    } else if (!full) {
        fprintf(out, "  (cumemtrace frag %s: fragmentation over time and the releases that opened the holes)\n",
                r->trace.path);
    }
}

/* --- waste, churn, pools, unexplained memory ----------------------------------------- */

static void print_waste(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out, bool full)
{
    if (!fr->n_waste)
        return;
    if (!fr->pitch_waste_total && !fr->round_waste_total)
        return;
    char a[32], b[32];
    /* Only the kinds of waste there are: "pitch padding 0 B" says nothing. */
    fprintf(out, "\nInternal waste (granted beyond the request, summed over allocations):");
    if (fr->pitch_waste_total)
        fprintf(out, " pitch padding %s%s", SZ(a, fr->pitch_waste_total), fr->round_waste_total ? "," : "");
    if (fr->round_waste_total)
        fprintf(out, " rounding to 512 B %s", SZ(b, fr->round_waste_total));
    fprintf(out, "\n");
    size_t n = fr->n_waste < (full ? r->opt->top : 3) ? fr->n_waste : (full ? r->opt->top : 3);
    for (size_t i = 0; i < n; i++) {
        const struct cmt_waste_view *w = &fr->waste[i];
        fprintf(out, " ");
        if (w->pitch_bytes)
            fprintf(out, " pitch padding %s in %" PRIu64 " %s%s", SZ(a, w->pitch_bytes), w->pitch_count,
                    cmt_plural(w->pitch_count, "allocation", "allocations"), w->round_bytes ? "," : "");
        if (w->round_bytes)
            fprintf(out, " rounding %s", SZ(b, w->round_bytes));
        fprintf(out, "\n");
        print_frames(r, out, w->stack, "      ", full ? r->opt->max_frames : 3);
    }
    /* The note concerns VMM only: said to a program that used it. */
    if (fr->used_vmm)
        fprintf(out, "  (VMM: the size asked for before rounding to the granularity is not visible to the driver "
                     "API)\n");
}

static void print_churn(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out, bool full)
{
    if (!fr->n_churn)
        return;
    char a[32], b[32];
    size_t n = fr->n_churn < (full ? r->opt->top : 5) ? fr->n_churn : (full ? r->opt->top : 5);
    fprintf(out, "\nSize churn (call sites allocating %d or more distinct sizes), most sizes first:\n",
            CMT_CHURN_MIN_SIZES);
    for (size_t i = 0; i < n; i++) {
        const struct cmt_churn_view *v = &fr->churn[i];
        const struct cmt_churn_row *row = &v->row;
        fprintf(out, "  %s%" PRIu64 " distinct sizes (%s to %s) in %" PRIu64 " %s, %" PRIu64 " released during the run",
                row->saturated ? "at least " : "", row->distinct, SZ(a, row->min_size), SZ(b, row->max_size),
                row->allocs, cmt_plural(row->allocs, "allocation", "allocations"), row->frees);
        if (row->frees)
            fprintf(out, " after %s on average", CMT_DURATION(row->lifetime_ns / row->frees));
        fprintf(out, ": %s\n", v->pattern == CMT_CHURN_SHORT_LIVED ? "short-lived" : "mostly kept");
        if (row->paths > 1)
            fprintf(out, "    %" PRIu64 " call paths into %s's caching allocator; the busiest:\n", row->paths,
                    v->allocator_name);
        print_frames(r, out, row->key, "      ", full ? r->opt->max_frames : 4);
        if (cmt_render_pytorch_cache_off(r, row->key) && !full && cmt_usage_calls_row_shown(r, row->key))
            fprintf(out, "    PyTorch ran with its cache off: what to try is under Most allocation calls above\n");
        else if (cmt_render_pytorch_cache_off(r, row->key))
            fprintf(out, "    PyTorch ran with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1): each of these is one "
                         "tensor's own cudaMalloc and cudaFree; what to try: %s\n", CMT_PYTORCH_CACHE_OFF_REMEDY);
        else if (v->allocator != CMT_ALLOCATOR_NONE)
            fprintf(out, "    %s's caching allocator made these: it keeps a segment for each size its cached "
                         "blocks could not serve, so reserved memory grows above what is allocated; what to try: %s\n",
                    v->allocator_name, v->allocator_remedy);
        else if (v->pattern == CMT_CHURN_SHORT_LIVED)
            fprintf(out, "    sizes that come and go leave holes later sizes may not fit; what to try: reuse "
                         "buffers, round sizes to a few classes, or allocate from a stream-ordered pool "
                         "(cudaMallocAsync)\n");
    }
}

static void print_pools(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out, bool full)
{
    size_t shown = 0;
    char a[32], b[32], c[32], d[32], t[32], l[512];
    bool async_said[CMT_MAX_DEVICES] = {false};
    for (size_t i = 0; i < fr->n_pools; i++) {
        const struct cmt_pool_info *p = &fr->pools[i];
        if (!p->created_in_trace && !p->peak_reserved && !p->trims)
            continue; /* a default pool never used */
        if (shown++ == 0)
            fprintf(out, "\nStream-ordered pools (reserved: memory the pool holds; used: handed out)\n");
        fprintf(out, "  %s 0x%" PRIx64 " on device %d", p->is_default ? "default pool" : "pool", p->handle, p->device);
        if (p->created_in_trace)
            fprintf(out, ", created at %s by %s", AT(r, p->create_ts),
                    site_label(r, cmt_frames_canonical(r->frames, p->create_stack), l, sizeof l));
        if (p->destroyed)
            fprintf(out, ", destroyed at %s", AT(r, p->destroy_ts));
        /* The reserve is known only at the pool's samples: said so, and
         * never beside a figure of the events that contradicts it. */
        if (p->states) {
            fprintf(out, "\n    sampled %" PRIu64 " %s: reserved at most %s (at %s)", p->states,
                    cmt_plural(p->states, "time", "times"), SZ(a, p->peak_reserved), AT(r, p->peak_reserved_ts));
            if (p->peak_slack)
                fprintf(out, "; most reserved but unused %s (at %s)", SZ(b, p->peak_slack), AT(r, p->peak_slack_ts));
            fprintf(out, "; last sample %s reserved, %s used; release threshold %s", SZ(c, p->reserved),
                    SZ(d, p->used), p->threshold == UINT64_MAX ? "unlimited" : SZ(t, p->threshold));
        } else {
            fprintf(out, "\n    never sampled: what it reserved is not known");
        }
        if (p->trims)
            fprintf(out, "; %" PRIu64 " %s", p->trims, cmt_plural(p->trims, "trim", "trims"));
        fprintf(out, "\n");
        const struct cmt_device_forensics *dev =
            p->device >= 0 && p->device < CMT_MAX_DEVICES ? fr->devices[p->device] : NULL;
        if (dev && dev->async_peak > p->peak_reserved && !async_said[p->device]) {
            async_said[p->device] = true;
            fprintf(out, "    stream-ordered allocations on device %d (every pool of it) peaked at %s at %s, more than "
                         "any sample saw reserved: the pools held at least that much then, between samples\n",
                    p->device, SZ(a, dev->async_peak), AT(r, dev->async_peak_ts));
        }
        if (full)
            for (size_t k = 0; k < p->pool_series.n; k++)
                fprintf(out, "    %10s  %12s reserved  %12s used\n", AT(r, p->series[k].ts),
                        SZ(a, p->series[k].reserved), SZ(b, p->series[k].used));
    }
}

static void print_sample(const struct cmt_report *r, const char *what, const struct cmt_sample_point *s, FILE *out,
                         const char *note)
{
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(out, "    %-11s %10s: %s in use of %s: this process's allocations %s", what, AT(r, s->ts),
            SZ(a, s->total - s->free), SZ(b, s->total), SZ(c, s->live));
    if (cmt_sample_pool_unused(s))
        fprintf(out, ", its pools' unused %s", SZ(e, cmt_sample_pool_unused(s)));
    if (cmt_sample_gap(s))
        fprintf(out, ", not explained %s%s\n", SZ(d, cmt_sample_gap(s)), note);
    else
        fprintf(out, ": all explained%s\n", note);
}

static bool same_sample(const struct cmt_sample_point *a, const struct cmt_sample_point *b)
{
    return a->ts == b->ts && a->api == b->api && a->free == b->free && a->live == b->live;
}

static void print_unexplained(const struct cmt_report *r, const struct cmt_forensics_report *fr, FILE *out, bool full)
{
    if (!fr->samples)
        return;
    int devices = 0, only = -1;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (fr->devices[d] && fr->devices[d]->n_samples) {
            devices++;
            only = d;
        }
    fprintf(out, "\nDevice memory in use that this process's allocations and pools do not explain (context, module "
                 "images, libraries' own memory, other processes), from %" PRIu64 " device %s",
            fr->samples, cmt_plural(fr->samples, "sample", "samples"));
    if (devices == 1)
        fprintf(out, " of device %d", only);
    fprintf(out, ":\n");
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        const struct cmt_device_forensics *dev = fr->devices[d];
        if (!dev || !dev->n_samples)
            continue;
        if (devices > 1)
            fprintf(out, "  device %d, %" PRIu64 " %s:\n", d, dev->n_samples,
                    cmt_plural(dev->n_samples, "sample", "samples"));
        /* The gap's row only when some sample had one: a sample whose
         * memory is all explained is no gap, however large. */
        const struct cmt_sample_point *gap = cmt_sample_gap(&dev->max_gap_sample) ? &dev->max_gap_sample : NULL;
        if (full && dev->sample_series.n) {
            /* Every sample once, in time order, each named by why it was
             * taken; the largest gap marked where it is. */
            for (size_t i = 0; i < dev->sample_series.n; i++)
                print_sample(r, cmt_api_name(dev->samples[i].api) + 7, &dev->samples[i], out,
                             gap && same_sample(gap, &dev->samples[i]) ? " (the largest gap)" : "");
            continue;
        }
        /* The first, the largest gap and the last, each sample once: a
         * process with one sample showed it three times. */
        const struct cmt_sample_point *last = &dev->last_sample;
        const char *last_name = last->api == CMT_API_SAMPLE_EXIT ? "at exit" : "last";
        bool gap_first = gap && same_sample(gap, &dev->first_sample), last_first = same_sample(last, &dev->first_sample);
        print_sample(r, last_first ? "only" : "first", &dev->first_sample, out, gap_first ? " (the largest gap)" : "");
        if (gap && !gap_first && !same_sample(gap, last))
            print_sample(r, "largest gap", gap, out, "");
        if (!last_first)
            print_sample(r, last_name, last, out, gap && !gap_first && same_sample(gap, last) ? " (the largest gap)" : "");
    }
}

void cmt_forensics_render_text(const struct cmt_report *r, FILE *out, bool full)
{
    const struct cmt_forensics_report *fr = r->forensics;
    if (!fr)
        return;
    print_oom(r, fr, out, full);
    print_frag(r, fr, out, full);
    print_waste(r, fr, out, full);
    print_churn(r, fr, out, full);
    print_pools(r, fr, out, full);
    print_unexplained(r, fr, out, full);
}
