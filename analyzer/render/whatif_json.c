/* SPDX-License-Identifier: MIT */
/* `cumemtrace whatif --format json` and the report's "whatif" key
 * (docs/report.md, "What if"; model/whatif_report.h). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "render_parts.h"

static void uint_or_null(struct cmt_json *j, const char *key, uint64_t v, bool known)
{
    cmt_json_key(j, key);
    if (known)
        cmt_json_uint(j, v);
    else
        cmt_json_null(j);
}

static void json_failure(struct cmt_json *j, const struct cmt_whatif_failure_view *f)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "time_ns");
    cmt_json_uint(j, f->time_ns);
    cmt_json_key(j, "requested_bytes");
    cmt_json_uint(j, f->request);
    cmt_json_key(j, "rounded_bytes");
    cmt_json_uint(j, f->rounded);
    cmt_json_key(j, "allocated_bytes");
    cmt_json_uint(j, f->allocated);
    cmt_json_key(j, "reserved_bytes");
    cmt_json_uint(j, f->reserved);
    uint_or_null(j, "room_bytes", f->limit, f->limit != UINT64_MAX);
    cmt_json_key(j, "cache_free_bytes");
    cmt_json_uint(j, f->cache_free);
    cmt_json_key(j, "verdict");
    cmt_json_string(j, f->verdict);
    uint_or_null(j, "short_by_bytes", f->short_by, f->short_by != 0);
    cmt_json_key(j, "recorded_run_failed_it");
    cmt_json_bool(j, f->recorded_failed);
    cmt_json_key(j, "stack_id");
    cmt_json_uint(j, f->stack);
    cmt_json_key(j, "site");
    cmt_json_string(j, f->site[0] ? f->site : NULL);
    cmt_json_key(j, "phase");
    cmt_json_string(j, f->phase[0] ? f->phase : NULL);
    cmt_json_end_object(j);
}

static void json_row(struct cmt_json *j, const struct cmt_whatif_report *w, const struct cmt_whatif_row *r)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "setting");
    cmt_json_string(j, r->text);
    cmt_json_key(j, "label");
    cmt_json_string(j, r->label);
    cmt_json_key(j, "recorded");
    cmt_json_bool(j, r->recorded);
    cmt_json_key(j, "garbage_collection_inert");
    cmt_json_bool(j, r->gc_inert);
    cmt_json_key(j, "peak_reserved_bytes");
    cmt_json_uint(j, r->peak_reserved);
    cmt_json_key(j, "peak_reserved_time_ns");
    cmt_json_uint(j, r->peak_reserved_ns);
    cmt_json_key(j, "vs_recorded_bytes");
    cmt_json_int(j, r->vs_recorded);
    cmt_json_key(j, "peak_allocated_bytes");
    cmt_json_uint(j, r->peak_allocated);
    cmt_json_key(j, "replay_peak_reserved_bytes");
    cmt_json_uint(j, r->replay_peak_reserved);
    cmt_json_key(j, "replay_peak_allocated_bytes");
    cmt_json_uint(j, r->replay_peak_allocated);
    cmt_json_key(j, "allocated_at_peak_bytes");
    cmt_json_uint(j, r->allocated_at_peak);
    cmt_json_key(j, "unallocated_at_peak");
    cmt_json_begin_object(j);
    uint64_t total = 0;
    for (unsigned c = 0; c < CMT_TA_CLASS_COUNT; c++) {
        cmt_json_key(j, w->class_key[c]);
        cmt_json_uint(j, r->unallocated_at_peak[c]);
        total += r->unallocated_at_peak[c];
    }
    cmt_json_key(j, "total");
    cmt_json_uint(j, total);
    cmt_json_end_object(j);
    cmt_json_key(j, "segments_made");
    cmt_json_uint(j, r->segments_made);
    cmt_json_key(j, "segments_released");
    cmt_json_uint(j, r->segments_released);
    cmt_json_key(j, "expandable_segments");
    cmt_json_uint(j, r->expandable_segments);
    cmt_json_key(j, "maps");
    cmt_json_uint(j, r->maps);
    cmt_json_key(j, "mapped_bytes");
    cmt_json_uint(j, r->mapped_bytes);
    cmt_json_key(j, "unmaps");
    cmt_json_uint(j, r->unmaps);
    cmt_json_key(j, "unmapped_bytes");
    cmt_json_uint(j, r->unmapped_bytes);
    cmt_json_key(j, "requests");
    cmt_json_uint(j, r->requests);
    cmt_json_key(j, "served_from_cache");
    cmt_json_uint(j, r->served_from_cache);
    cmt_json_key(j, "retries");
    cmt_json_uint(j, r->retries);
    cmt_json_key(j, "released_for_retry_bytes");
    cmt_json_uint(j, r->released_for_retry_bytes);
    cmt_json_key(j, "garbage_collected_bytes");
    cmt_json_uint(j, r->gc_released_bytes);
    cmt_json_key(j, "empty_cache_released_bytes");
    cmt_json_uint(j, r->empty_cache_released_bytes);
    cmt_json_key(j, "out_of_memory");
    cmt_json_bool(j, !r->fits);
    cmt_json_key(j, "failures");
    cmt_json_uint(j, r->failures);
    cmt_json_key(j, "first_failure");
    if (r->failures)
        json_failure(j, &r->first);
    else
        cmt_json_null(j);
    cmt_json_key(j, "served_recorded_failures");
    cmt_json_uint(j, r->served_recorded_failures);
    uint_or_null(j, "min_room_left_bytes", r->min_headroom, r->bounded && r->min_headroom != UINT64_MAX);
    uint_or_null(j, "min_room_left_time_ns", r->min_headroom_ns, r->bounded && r->min_headroom != UINT64_MAX);
    cmt_json_end_object(j);
}

static void json_device(struct cmt_json *j, const struct cmt_whatif_report *w, const struct cmt_whatif_device_view *d)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "ordinal");
    cmt_json_int(j, d->ordinal);
    cmt_json_key(j, "name");
    cmt_json_string(j, d->name[0] ? d->name : NULL);
    uint_or_null(j, "total_bytes", d->total, d->total != 0);
    uint_or_null(j, "capacity_bytes", d->capacity, d->capacity != 0);
    cmt_json_key(j, "outside_cache_max_bytes");
    cmt_json_uint(j, d->outside_max);
    cmt_json_key(j, "context_max_bytes");
    cmt_json_uint(j, d->context_max);
    cmt_json_key(j, "other_allocations_max_bytes");
    cmt_json_uint(j, d->others_max);
    uint_or_null(j, "min_room_bytes", d->min_room, d->min_room != UINT64_MAX);
    cmt_json_key(j, "tensor_requests");
    cmt_json_uint(j, d->requests);
    cmt_json_key(j, "tensor_releases");
    cmt_json_uint(j, d->releases);
    cmt_json_key(j, "recorded_failures");
    cmt_json_uint(j, d->recorded_ooms);
    char digest[24];
    snprintf(digest, sizeof digest, "%016" PRIx64, d->digest);
    cmt_json_key(j, "requests_digest");
    cmt_json_string(j, digest);
    cmt_json_key(j, "streams");
    cmt_json_uint(j, d->streams);
    cmt_json_key(j, "recorded");
    cmt_json_begin_object(j);
    cmt_json_key(j, "peak_reserved_bytes");
    cmt_json_uint(j, d->recorded_peak_reserved);
    cmt_json_key(j, "peak_allocated_bytes");
    cmt_json_uint(j, d->recorded_peak_allocated);
    cmt_json_end_object(j);
    uint_or_null(j, "memory_fraction_allowed_bytes", d->allowed, d->fraction_inferred);
    cmt_json_key(j, "replays_exactly");
    cmt_json_bool(j, d->exact);
    cmt_json_key(j, "settings");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < d->n_rows; i++)
        json_row(j, w, &d->rows[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "best");
    cmt_json_string(j, d->best != SIZE_MAX ? d->rows[d->best].text : NULL);
    cmt_json_key(j, "best_label");
    cmt_json_string(j, d->best != SIZE_MAX ? d->rows[d->best].label : NULL);
    cmt_json_end_object(j);
}

void cmt_whatif_render_json_value(const struct cmt_whatif_report *w, struct cmt_json *j)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "trace");
    cmt_json_string(j, w->path);
    cmt_json_key(j, "source");
    cmt_json_string(j, w->source);
    cmt_json_key(j, "reason");
    cmt_json_string(j, w->reason[0] ? w->reason : NULL);
    cmt_json_key(j, "assumes");
    cmt_json_string(j, w->assumes);
    cmt_json_key(j, "pytorch_version");
    cmt_json_string(j, w->version && w->version[0] ? w->version : NULL);
    cmt_json_key(j, "recorded_settings");
    cmt_json_begin_object(j);
    cmt_json_key(j, "known");
    cmt_json_bool(j, w->settings_known);
    cmt_json_key(j, "inferred");
    cmt_json_bool(j, w->settings_inferred);
    cmt_json_key(j, "variable");
    cmt_json_string(j, w->settings_variable);
    cmt_json_key(j, "value");
    cmt_json_string(j, w->settings_text);
    cmt_json_key(j, "unreadable");
    cmt_json_string(j, w->settings_unparsed ? w->settings_error : NULL);
    cmt_json_end_object(j);
    uint_or_null(j, "capacity_asked_bytes", w->capacity_asked, w->capacity_asked != 0);
    cmt_json_key(j, "empty_cache_calls");
    cmt_json_uint(j, w->empty_caches);
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < w->n_devices; i++)
        json_device(j, w, &w->devices[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

void cmt_whatif_render_json(const struct cmt_whatif_report *w, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_whatif_render_json_value(w, &j);
    cmt_json_finish(&j);
}
