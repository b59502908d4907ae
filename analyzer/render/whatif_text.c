/* SPDX-License-Identifier: MIT */
/* `cumemtrace whatif` as text (docs/report.md, "What if"): per device the
 * recorded run, a table of the settings replayed, a paragraph per setting
 * and which fits with the least reserve. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render_parts.h"
#include "units.h"
#include "text_escape.h"

#define SZ(v) cmt_size_str((v), (char[32]){""}, 32)
#define EXACT(v) cmt_size_exact_str((v), (char[64]){""}, 64)

static const char *signed_size(int64_t v, char *buf, size_t len)
{
    char s[32];
    if (v == 0) {
        snprintf(buf, len, "same");
        return buf;
    }
    cmt_size_str(v < 0 ? (uint64_t)-v : (uint64_t)v, s, sizeof s);
    snprintf(buf, len, "%c%s", v < 0 ? '-' : '+', s);
    return buf;
}

static uint64_t unallocated_total(const struct cmt_whatif_row *r)
{
    uint64_t t = 0;
    for (unsigned c = 0; c < CMT_TA_CLASS_COUNT; c++)
        t += r->unallocated_at_peak[c];
    return t;
}

static void row_label(const struct cmt_whatif_report *w, const struct cmt_whatif_row *r, char *buf, size_t len)
{
    const char *suffix = "";
    if (r->recorded)
        suffix = !strcmp(w->source, "uncached") ? " (recorded settings, cache on)" : " (recorded)";
    snprintf(buf, len, "%s%s", r->label, suffix);
}

static void print_table(FILE *out, const struct cmt_whatif_report *w, const struct cmt_whatif_device_view *d,
                        const char *indent)
{
    int width = 7;
    char label[CMT_TA_SETTINGS_TEXT + 48];
    for (size_t i = 0; i < d->n_rows; i++) {
        row_label(w, &d->rows[i], label, sizeof label);
        if ((int)strlen(label) > width)
            width = (int)strlen(label);
    }
    fprintf(out, "%s%-*s  %12s  %10s  %12s  %13s  %-9s  %s\n", indent, width, "setting", "reserved peak", "vs recorded",
            "allocated peak", "cache at peak", "segments", "out of memory");
    bool ran_out = false;
    for (size_t i = 0; i < d->n_rows; i++) {
        const struct cmt_whatif_row *r = &d->rows[i];
        char delta[40], segs[32], peak[40], allocated[40];
        row_label(w, r, label, sizeof label);
        if (r->maps || r->expandable_segments)
            snprintf(segs, sizeof segs, "%" PRIu64 " maps", r->maps);
        else
            snprintf(segs, sizeof segs, "%" PRIu64, r->segments_made);
        /* A setting that runs out: its peaks up to its first failure, where
         * the program as recorded would stop; marked, and not set against
         * the recorded peak as a saving (issue 33: roundup's 0 B read as
         * "-78.7 GiB") unless the recorded run failed there too. */
        bool cut = !r->fits && !r->first.recorded_failed;
        ran_out = ran_out || cut;
        snprintf(peak, sizeof peak, "%s%s", SZ(r->peak_reserved), cut ? "*" : "");
        snprintf(allocated, sizeof allocated, "%s%s", SZ(r->peak_allocated), cut ? "*" : "");
        fprintf(out, "%s%-*s  %12s  %10s  %12s  %13s  %-9s  %s\n", indent, width, label, peak,
                cut ? "-" : signed_size(r->vs_recorded, delta, sizeof delta), allocated, SZ(unallocated_total(r)),
                segs, r->fits ? (r->bounded ? "no" : "no (room unknown)") : r->first.verdict);
    }
    if (ran_out)
        fprintf(out, "%s* up to its first failure (where the program as recorded would stop), not comparable with the "
                     "recorded peak\n",
                indent);
}

static void print_failure(FILE *out, const struct cmt_whatif_failure_view *f, uint64_t failures)
{
    fprintf(out, "    runs out at %s: a request of %s", CMT_DURATION(f->time_ns), EXACT(f->request));
    if (f->site[0])
        fprintf(out, " at %s", cmt_esc(f->site));
    if (f->phase[0])
        fprintf(out, ", in %s", cmt_esc(f->phase));
    fprintf(out, "%s\n", f->recorded_failed ? " (the recorded run failed it too)" : "");
    if (!strcmp(f->verdict, "capacity"))
        fprintf(out, "    capacity: the tensors' peak must be %s smaller to fit (%s allocated and %s asked, the "
                     "cache's room %s)\n",
                SZ(f->short_by), SZ(f->allocated), SZ(f->rounded), SZ(f->limit));
    else if (!strcmp(f->verdict, "fraction"))
        fprintf(out, "    fraction: the memory fraction's limit (%s) refused it; %s reserved\n", SZ(f->limit),
                SZ(f->reserved));
    else
        fprintf(out, "    fragmentation: %s reserved but unallocated in the cache, no piece of it serves %s "
                     "(%s allocated, room %s)\n",
                SZ(f->cache_free), SZ(f->rounded), SZ(f->allocated), f->limit == UINT64_MAX ? "unlimited" : SZ(f->limit));
    if (failures > 1)
        fprintf(out, "    %" PRIu64 " requests failed in all (the program may have caught the error)\n", failures);
}

static void print_row(FILE *out, const struct cmt_whatif_report *w, const struct cmt_whatif_device_view *d,
                      const struct cmt_whatif_row *r)
{
    char label[CMT_TA_SETTINGS_TEXT + 48];
    row_label(w, r, label, sizeof label);
    if (r->fits)
        fprintf(out, "  %s: reserved peak %s at %s", label, EXACT(r->peak_reserved),
                CMT_DURATION(r->peak_reserved_ns));
    else
        fprintf(out, "  %s: reserved peak %s up to its first failure%s", label, EXACT(r->peak_reserved),
                r->peak_reserved ? "" : " (its first request failed)");
    if (r->recorded && d->exact)
        fprintf(out, ", the recorded max_memory_reserved() to the byte");
    fprintf(out, "\n");
    if (!r->fits && r->replay_peak_reserved != r->peak_reserved)
        fprintf(out, "    %s over the rest of the replay (its requests after the failure asked as recorded)\n",
                EXACT(r->replay_peak_reserved));
    fprintf(out, "    reserved but unallocated then: %s", SZ(unallocated_total(r)));
    bool any = false;
    for (unsigned c = 0; c < CMT_TA_CLASS_COUNT; c++)
        if (r->reserved_at_peak[c]) {
            fprintf(out, "%s%s %s", any ? ", " : " (", w->class_key[c],
                    SZ(r->unallocated_at_peak[c]));
            any = true;
        }
    fprintf(out, "%s\n", any ? ")" : "");
    if (r->maps || r->expandable_segments)
        fprintf(out, "    expandable segments: %s mapped (%" PRIu64 " %s), %s unmapped\n", SZ(r->mapped_bytes), r->maps,
                cmt_plural(r->maps, "mapping", "mappings"), SZ(r->unmapped_bytes));
    if (r->segments_made || !(r->maps || r->expandable_segments))
        fprintf(out, "    segments: %" PRIu64 " cudaMalloc, %" PRIu64 " cudaFree\n", r->segments_made,
                r->segments_released);
    if (r->retries)
        fprintf(out, "    %" PRIu64 " %s asked again after the cache gave back what it could (%s in all)\n",
                r->retries, cmt_plural(r->retries, "request", "requests"), SZ(r->released_for_retry_bytes));
    if (r->gc_released_bytes)
        fprintf(out, "    garbage collection freed %s\n", SZ(r->gc_released_bytes));
    if (r->gc_inert)
        fprintf(out, "    garbage_collection_threshold acts only under a memory fraction (per_process_memory_fraction "
                     "or torch.cuda.set_per_process_memory_fraction): it changes nothing here\n");
    if (r->served_recorded_failures)
        fprintf(out, "    serves %" PRIu64 " request%s the recorded run failed (each replayed as let go at once: "
                     "what the program did next is not in the trace)\n",
                r->served_recorded_failures, r->served_recorded_failures == 1 ? "" : "s");
    if (!r->fits)
        print_failure(out, &r->first, r->failures);
    else if (r->bounded && r->min_headroom != UINT64_MAX)
        fprintf(out, "    fits: %s to spare at the tightest moment (%s)\n", SZ(r->min_headroom),
                CMT_DURATION(r->min_headroom_ns));
}

static void print_device(FILE *out, const struct cmt_whatif_report *w, const struct cmt_whatif_device_view *d)
{
    fprintf(out, "\nDevice %d", d->ordinal);
    if (d->name[0])
        fprintf(out, " (%s%s%s)", cmt_esc(d->name), d->total ? ", " : "", d->total ? SZ(d->total) : "");
    else if (d->total)
        fprintf(out, " (%s)", SZ(d->total));
    fprintf(out, "\n");
    if (w->capacity_asked)
        fprintf(out, "  replayed on a device of %s\n", EXACT(w->capacity_asked));
    if (d->capacity)
        fprintf(out, "  room for PyTorch's cache: at least %s; outside it at most %s (the CUDA context and other "
                     "processes %s, other allocations of the process %s)\n",
                SZ(d->min_room == UINT64_MAX ? d->capacity : d->min_room), SZ(d->outside_max), SZ(d->context_max),
                SZ(d->others_max));
    else
        fprintf(out, "  the device's size is unknown (no DEVICE record): no request can run out here; give "
                     "--capacity\n");
    if (d->fraction_inferred)
        fprintf(out, "  a memory fraction refused a recorded request with the device not full: its limit is taken as "
                     "%s\n",
                EXACT(d->allowed));
    fprintf(out, "  recorded: reserved peak %s, allocated peak %s; %" PRIu64 " tensor requests",
            EXACT(d->recorded_peak_reserved), EXACT(d->recorded_peak_allocated), d->requests);
    if (d->recorded_ooms)
        fprintf(out, ", %" PRIu64 " failed (out of memory)", d->recorded_ooms);
    fprintf(out, "\n\n");
    print_table(out, w, d, "  ");
    fprintf(out, "\n");
    for (size_t i = 0; i < d->n_rows; i++)
        print_row(out, w, d, &d->rows[i]);
    fprintf(out, "\n");
    if (d->best == SIZE_MAX) {
        fprintf(out, "  None of these settings fits: see the capacity verdicts above (smaller batches, fewer "
                     "tensors kept, or a larger device)\n");
        return;
    }
    const struct cmt_whatif_row *b = &d->rows[d->best];
    char delta[40];
    fprintf(out, "  Fits with the least reserve: %s (reserved peak %s, %s against the recorded run)\n", b->label,
            SZ(b->peak_reserved), signed_size(b->vs_recorded, delta, sizeof delta));
}

void cmt_whatif_render_text(const struct cmt_whatif_report *w, FILE *out)
{
    fprintf(out, "What if: %s\n", cmt_esc(w->path));
    if (!strcmp(w->source, "none")) {
        fprintf(out, "  %s\n", w->reason);
        return;
    }
    const char *v = w->version && w->version[0] ? w->version : "";
    if (!strcmp(w->source, "blocks"))
        fprintf(out, "PyTorch%s%s's caching allocator, its tensor requests replayed from the block layer\n",
                v[0] ? " " : "", cmt_esc(v));
    else
        fprintf(out, "PyTorch%s%s ran with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1: a cudaMalloc per tensor): "
                     "with PyTorch's cache these requests would reserve as below\n",
                v[0] ? " " : "", cmt_esc(v));
    if (w->assumes)
        fprintf(out, "assumes: %s\n", w->assumes);
    if (w->settings_known && w->settings_variable)
        fprintf(out, "recorded settings: %s=%s\n", w->settings_variable, cmt_esc(w->settings_text));
    else if (w->settings_known)
        fprintf(out, "recorded settings: the defaults (PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF unset)\n");
    else if (w->settings_inferred)
        fprintf(out, "recorded settings: not in this trace (before format 2.4); %s, inferred from its first segment\n",
                w->devices[0].rows[0].label);
    else
        fprintf(out, "recorded settings: not in this trace; the defaults assumed\n");
    if (w->settings_unparsed)
        fprintf(out, "  the recorded settings cannot be replayed (%s): the defaults stand in for them\n",
                cmt_esc(w->settings_error));
    if (w->empty_caches)
        fprintf(out, "empty_cache(): %" PRIu64 " call%s found in the trace (segments released outside a request), "
                     "replayed under every setting\n",
                w->empty_caches, w->empty_caches == 1 ? "" : "s");
    for (size_t i = 0; i < w->n_devices; i++)
        print_device(out, w, &w->devices[i]);
    if (w->devices_dropped)
        fprintf(out, "\n%" PRIu64 " requests on devices past the first %d were not replayed\n", w->devices_dropped,
                CMT_WHATIF_MAX_DEVICES);
}

void cmt_whatif_render_section(const struct cmt_whatif_report *w, FILE *out)
{
    if (!strcmp(w->source, "none")) {
        fprintf(out, "\nWhat if: nothing replayed\n  %s\n", w->reason);
        return;
    }
    const char *how = !strcmp(w->source, "uncached") ? "PyTorch ran with its cache off; its tensors replayed with it"
                                                     : "PyTorch's tensor requests replayed through its caching allocator";
    fprintf(out, "\nWhat if (%s; `cumemtrace whatif --compare` says more)\n", how);
    if (w->assumes)
        fprintf(out, "  with PyTorch's cache these requests would reserve as below; this assumes %s\n", w->assumes);
    for (size_t i = 0; i < w->n_devices; i++) {
        const struct cmt_whatif_device_view *d = &w->devices[i];
        fprintf(out, "  device %d:\n", d->ordinal);
        print_table(out, w, d, "    ");
        if (d->best != SIZE_MAX) {
            char delta[40];
            const struct cmt_whatif_row *b = &d->rows[d->best];
            fprintf(out, "    fits with the least reserve: %s (reserved peak %s, %s against the recorded run)\n",
                    b->label, SZ(b->peak_reserved), signed_size(b->vs_recorded, delta, sizeof delta));
        } else {
            fprintf(out, "    none of these settings fits\n");
        }
    }
}
