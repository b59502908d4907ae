/* SPDX-License-Identifier: MIT */
/* Allocation calls, short-lived allocations and threads, for people
 * (docs/report.md, "Allocation calls and short-lived allocations",
 * "Device memory by thread"). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "site_twins.h"
#include "size_parse.h"
#include "units.h"
#include "render_parts.h"
#include "text_escape.h"

/* Rows per list in the report: these lists rank what costs time, not
 * memory, and a few rows say it. */
#define USAGE_ROWS 5

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
        fprintf(out, "%s%s\n", indent, cmt_esc(buf));
    }
    if (limit < sf->n)
        fprintf(out, "%s... %zu more %s (--max-frames 0 shows all)\n", indent, sf->n - limit,
                plural(sf->n - limit, "frame", "frames"));
}

static size_t rows_shown(const struct cmt_report *r, size_t n)
{
    size_t top = r->opt->top < USAGE_ROWS ? r->opt->top : USAGE_ROWS;
    return n < top ? n : top;
}

bool cmt_render_pytorch_cache_off(const struct cmt_report *r, uint64_t stack)
{
    /* PyTorch's allocate() calls cudaMalloc itself when its cache is off;
     * with the cache on, every device allocation is its cache's
     * (DeviceCachingAllocator). Without its symbols neither shows: no
     * claim then. */
    if (!stack)
        return false;
    const struct cmt_stack_frames *sf = cmt_frames_get_unfolded(r->frames, stack);
    bool native = false;
    for (size_t i = 0; i < sf->n; i++) {
        const char *fn = sf->frames[i].function;
        if (!fn)
            continue;
        if (strstr(fn, "DeviceCachingAllocator::"))
            return false;
        native = native || strstr(fn, "NativeCachingAllocator::");
    }
    return native;
}

static size_t rows_shown(const struct cmt_report *r, size_t n);

bool cmt_usage_calls_row_shown(const struct cmt_report *r, uint64_t stack)
{
    const struct cmt_calls_view *v = &r->calls;
    size_t repeated = 0;
    while (repeated < v->n && v->rows[repeated].calls > 1)
        repeated++;
    uint64_t canonical = cmt_frames_canonical(r->frames, stack);
    for (size_t i = 0, n = rows_shown(r, repeated); i < n; i++)
        if (v->rows[i].stack == canonical)
            return true;
    return false;
}

/* A row of PyTorch's tensors made with its cache off: the heading's
 * advice (keep a buffer, use a pool) is not what to change; its cache is.
 * Said in full once, under the allocation calls. */
static void cache_off_note(const struct cmt_report *r, FILE *out, uint64_t stack, bool first)
{
    if (!cmt_render_pytorch_cache_off(r, stack))
        return;
    if (!first && cmt_usage_calls_row_shown(r, stack))
        fprintf(out, "    PyTorch ran with its cache off: what to try is under Most allocation calls above\n");
    else
        fprintf(out, "    PyTorch ran with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1): a cudaMalloc and cudaFree "
                     "per tensor; what to try: %s\n", CMT_PYTORCH_CACHE_OFF_REMEDY);
}

/* The call that releases what api allocates, for the heading's words;
 * NULL when it has no single one. */
static const char *release_of(const char *api)
{
    static const char *const pairs[][2] = {
        {"cudaMalloc", "cudaFree"},           {"cudaMallocPitch", "cudaFree"},
        {"cudaMallocManaged", "cudaFree"},    {"cudaMallocHost", "cudaFreeHost"},
        {"cudaHostAlloc", "cudaFreeHost"},    {"cuMemAlloc", "cuMemFree"},
        {"cuMemAllocPitch", "cuMemFree"},     {"cuMemAllocManaged", "cuMemFree"},
        {"cuMemAllocHost", "cuMemFreeHost"},  {"cuMemHostAlloc", "cuMemFreeHost"},
        {"cuMemCreate", "cuMemRelease"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (!strcmp(api, pairs[i][0]))
            return pairs[i][1];
    return NULL;
}

static void print_calls(const struct cmt_report *r, FILE *out)
{
    const struct cmt_calls_view *v = &r->calls;
    /* Sites that allocated once rank nothing: only those that called
     * again are listed (rows are sorted, most calls first). */
    size_t repeated = 0;
    while (repeated < v->n && v->rows[repeated].calls > 1)
        repeated++;
    if (!repeated)
        return;
    size_t n = rows_shown(r, repeated);
    char a[32];
    /* What the calls cost depends on their API: stream-ordered ones are
     * served by their pool without synchronizing the device; the others
     * are named as the program called them (a driver-API program's
     * cuMemAlloc is no cudaMalloc). */
    uint8_t apis[4];
    size_t n_apis = 0;
    bool more = false;
    for (size_t i = 0; i < n; i++) {
        if (v->rows[i].kind == CMT_KIND_ASYNC)
            continue;
        size_t k = 0;
        while (k < n_apis && apis[k] != v->rows[i].api)
            k++;
        if (k == n_apis && n_apis < sizeof apis)
            apis[n_apis++] = v->rows[i].api;
        else if (k == n_apis)
            more = true;
    }
    char why[256] = "stream-ordered: their pool serves them without synchronizing the device";
    if (n_apis) {
        size_t pos = (size_t)snprintf(why, sizeof why, "calls cost time even where nothing leaks: ");
        /* "cuMemAlloc and cuMemFree"; "cudaMalloc, cuMemAlloc and their releases" */
        for (size_t k = 0; k < n_apis && pos < sizeof why; k++)
            pos += (size_t)snprintf(why + pos, sizeof why - pos, "%s%s", k ? ", " : "", cmt_api_name(apis[k]));
        const char *release = n_apis == 1 && !more ? release_of(cmt_api_name(apis[0])) : NULL;
        if (pos < sizeof why)
            snprintf(why + pos, sizeof why - pos, " and %s synchronize the device",
                     release ? release : more ? "the others and their releases" : "their releases");
    }
    fprintf(out, "\nMost allocation calls (%s): %" PRIu64 " %s at %zu call %s", why, v->calls,
            plural(v->calls, "call", "calls"), v->n, plural(v->n, "site", "sites"));
    if (n < repeated)
        fprintf(out, "; the top %zu of the %zu that allocated more than once", n, repeated);
    else if (n < v->n)
        fprintf(out, "; the %zu that allocated more than once", n);
    fprintf(out, "\n");
    size_t *twins = CMT_TWINS_FIND(r, v->rows, n);
    for (size_t i = 0; i < n; i++) {
        const struct cmt_calls_row *row = &v->rows[i];
        fprintf(out, "  %" PRIu64 " %s (%s), %s in all", row->calls, plural(row->calls, "call", "calls"),
                cmt_api_name(row->api), (cmt_format_size(row->alloc_bytes, a, sizeof a), a));
        if (row->short_lived)
            fprintf(out, "; %" PRIu64 " short-lived", row->short_lived);
        fprintf(out, "\n");
        print_frames(r, out, row->stack, "      ");
        cache_off_note(r, out, row->stack, true);
        CMT_PRINT_TWIN_NOTE(r, out, twins, v->rows, i, "      ");
    }
    free(twins);
}

static void print_short_lived(const struct cmt_report *r, FILE *out)
{
    const struct cmt_calls_view *v = &r->calls;
    if (!v->short_lived)
        return;
    size_t n = rows_shown(r, v->n_short);
    char a[32], life[32];
    fprintf(out, "\nShort-lived allocations (released before their call site allocated again on the same thread: "
                 "one buffer kept across the rounds, or a stream-ordered pool, could serve them): %" PRIu64 " of %"
                 PRIu64 " %s",
            v->short_lived, v->calls, plural(v->calls, "allocation", "allocations"));
    if (n < v->n_short)
        fprintf(out, ", top %zu of %zu call sites", n, v->n_short);
    fprintf(out, "\n");
    for (size_t i = 0; i < n; i++) {
        const struct cmt_calls_row *row = &v->rows[v->by_short[i]];
        cmt_format_duration(row->short_life_ns / row->short_lived, life, sizeof life);
        fprintf(out, "  %" PRIu64 " of %" PRIu64 " %s (%s), %s in all, live %s on average\n", row->short_lived,
                row->calls, plural(row->calls, "call", "calls"), cmt_api_name(row->api),
                (cmt_format_size(row->short_bytes, a, sizeof a), a), life);
        print_frames(r, out, row->stack, "      ");
        cache_off_note(r, out, row->stack, false);
    }
}

static void print_threads(const struct cmt_report *r, FILE *out)
{
    const struct cmt_threads_view *v = &r->threads;
    /* One thread: the device sections already say everything. */
    if (v->n < 2)
        return;
    char a[32], b[32], t[32], name[96];
    const char *end = cmt_report_live_words(r);
    fprintf(out, "\nDevice memory by thread (an allocation counts for the thread that made it until it is "
                 "released; device-resident memory, every device together): %zu threads\n",
            v->n);
    for (size_t i = 0; i < v->n; i++) {
        const struct cmt_thread_use_row *u = &v->rows[i].use;
        if (*v->rows[i].name)
            snprintf(name, sizeof name, "%s (tid %" PRIu32 ")", cmt_esc(v->rows[i].name), u->tid);
        else
            snprintf(name, sizeof name, "tid %" PRIu32, u->tid);
        cmt_format_size(u->peak, a, sizeof a);
        cmt_format_size(u->live, b, sizeof b);
        cmt_format_duration(cmt_report_rel_ns(r, u->peak_ts), t, sizeof t);
        fprintf(out, "  %-24s peak %s in %" PRIu64 " %s at %s; ", name, a, u->peak_count,
                plural(u->peak_count, "allocation", "allocations"), t);
        if (u->live_count)
            fprintf(out, "%s %s in %" PRIu64, end, b, u->live_count);
        else
            fprintf(out, "nothing live %s", end);
        fprintf(out, "; made %" PRIu64 " %s", u->allocs, plural(u->allocs, "allocation", "allocations"));
        if (u->frees_by_others)
            fprintf(out, ", %" PRIu64 " released by other threads", u->frees_by_others);
        fprintf(out, "\n");
    }
}

void cmt_usage_render_text(const struct cmt_report *r, FILE *out)
{
    if (!r->has_usage)
        return;
    print_calls(r, out);
    print_short_lived(r, out);
    print_threads(r, out);
}
