/* SPDX-License-Identifier: MIT */
/* The report's "blocks" object: PyTorch's block layer (docs/report.md,
 * "Inside PyTorch's cache"; model/blocks_report.h). */
#include "blocks_report.h"
#include "render_parts.h"

static void json_site_list(const struct cmt_report *r, struct cmt_json *j, const char *key,
                           const struct cmt_blocks_site *s, size_t n, size_t max)
{
    cmt_json_key(j, key);
    cmt_json_begin_array(j);
    for (size_t i = 0; i < n && (!max || i < max); i++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, s[i].bytes);
        cmt_json_key(j, "blocks");
        cmt_json_uint(j, s[i].blocks);
        cmt_json_key(j, "stack");
        cmt_json_uint(j, s[i].stack);
        cmt_report_json_frames(r, j, s[i].stack);
        if (s[i].suppression)
            cmt_report_json_suppression(r, j, s[i].suppression);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void json_view(const struct cmt_report *r, struct cmt_json *j, const char *key, const struct cmt_blocks_view *v)
{
    cmt_json_key(j, key);
    cmt_json_begin_object(j);
    cmt_json_key(j, "ts_ns");
    cmt_json_uint(j, v->ts - r->trace.start_ns);
    cmt_json_key(j, "allocated_bytes");
    cmt_json_uint(j, v->allocated);
    cmt_json_key(j, "requested_bytes");
    cmt_json_uint(j, v->requested);
    cmt_json_key(j, "reserved_bytes");
    cmt_json_uint(j, v->reserved);
    cmt_json_key(j, "unallocated_bytes");
    cmt_json_uint(j, v->reserved > v->allocated ? v->reserved - v->allocated : 0);
    cmt_json_key(j, "size_classes");
    cmt_json_begin_array(j);
    static const char *const keys[CMT_BL_CLASS_COUNT] = {"small", "large", "huge"};
    for (unsigned c = 0; c < CMT_BL_CLASS_COUNT; c++) {
        const struct cmt_bl_class_state *s = &v->classes[c];
        cmt_json_begin_object(j);
        cmt_json_key(j, "class");
        cmt_json_string(j, keys[c]);
        cmt_json_key(j, "segments");
        cmt_json_uint(j, s->segments);
        cmt_json_key(j, "reserved_bytes");
        cmt_json_uint(j, s->reserved);
        cmt_json_key(j, "allocated_bytes");
        cmt_json_uint(j, s->allocated);
        cmt_json_key(j, "unallocated_bytes");
        cmt_json_uint(j, s->reserved > s->allocated ? s->reserved - s->allocated : 0);
        cmt_json_key(j, "largest_free_bytes");
        cmt_json_uint(j, s->largest_free);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    json_site_list(r, j, "sites", v->sites, v->n_sites, r->opt->top);
    cmt_json_end_object(j);
}

void cmt_blocks_render_json(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_blocks_report *b = r->blocks;
    cmt_json_key(j, "blocks");
    if (!b || !b->on) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "framework");
    cmt_json_string(j, "pytorch");
    cmt_json_key(j, "version");
    cmt_json_string(j, b->version[0] ? b->version : NULL);
    cmt_json_key(j, "backend");
    cmt_json_string(j, b->backend[0] ? b->backend : NULL);
    cmt_json_key(j, "settings_known");
    cmt_json_bool(j, b->settings_known);
    cmt_json_key(j, "alloc_conf");
    cmt_json_string(j, b->alloc_conf[0] ? b->alloc_conf : NULL);
    cmt_json_key(j, "cuda_alloc_conf");
    cmt_json_string(j, b->cuda_alloc_conf[0] ? b->cuda_alloc_conf : NULL);
    cmt_json_key(j, "events");
    cmt_json_uint(j, b->events);
    cmt_json_key(j, "peak_allocated_bytes");
    cmt_json_uint(j, b->peak_allocated);
    cmt_json_key(j, "peak_reserved_bytes");
    cmt_json_uint(j, b->peak_reserved);
    cmt_json_key(j, "leaked_blocks");
    cmt_json_uint(j, b->leak_blocks);
    cmt_json_key(j, "leaked_bytes");
    cmt_json_uint(j, b->leak_bytes);
    cmt_json_key(j, "suppressed_blocks");
    cmt_json_uint(j, b->suppressed_blocks);
    cmt_json_key(j, "suppressed_bytes");
    cmt_json_uint(j, b->suppressed_bytes);
    cmt_json_key(j, "inconsistencies");
    cmt_json_uint(j, b->inconsistencies);
    cmt_json_key(j, "first_inconsistency");
    if (b->inconsistencies) {
        const struct cmt_bl_inconsistency *f = &b->first_inconsistency;
        cmt_json_begin_object(j);
        cmt_json_key(j, "ts_ns");
        cmt_json_uint(j, f->ts - r->trace.start_ns);
        cmt_json_key(j, "device");
        cmt_json_int(j, f->device);
        cmt_json_key(j, "api");
        cmt_json_string(j, cmt_api_name(f->api));
        cmt_json_key(j, "address");
        cmt_json_uint(j, f->addr);
        cmt_json_key(j, "what");
        cmt_json_string(j, f->what);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < b->n_devices; i++) {
        const struct cmt_blocks_device *d = &b->devices[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "ordinal");
        cmt_json_int(j, d->ordinal);
        cmt_json_key(j, "peak_allocated_bytes");
        cmt_json_uint(j, d->peak_allocated);
        cmt_json_key(j, "peak_reserved_bytes");
        cmt_json_uint(j, d->peak_reserved);
        cmt_json_key(j, "allocated_at_exit_bytes");
        cmt_json_uint(j, d->allocated_at_exit);
        cmt_json_key(j, "reserved_at_exit_bytes");
        cmt_json_uint(j, d->reserved_at_exit);
        json_view(r, j, "at_peak", &d->peak);
        cmt_json_key(j, "failures");
        cmt_json_begin_array(j);
        for (size_t k = 0; k < d->n_ooms; k++) {
            const struct cmt_blocks_oom *o = &d->ooms[k];
            cmt_json_begin_object(j);
            cmt_json_key(j, "requested_bytes");
            cmt_json_uint(j, o->request);
            cmt_json_key(j, "rounded_bytes");
            cmt_json_uint(j, o->rounded);
            cmt_json_key(j, "device_free_bytes");
            cmt_json_uint(j, o->device_free);
            cmt_json_key(j, "verdict");
            cmt_json_string(j, o->verdict_name);
            cmt_json_key(j, "expandable_segments_would_serve");
            cmt_json_bool(j, o->expandable_would_serve);
            cmt_json_key(j, "explanation");
            cmt_json_string(j, o->sentence);
            cmt_json_key(j, "replayed");
            cmt_oom_replay_render_json(j, &o->replay, o->verdict != CMT_BL_VERDICT_FRAGMENTATION);
            cmt_json_key(j, "stack");
            cmt_json_uint(j, o->stack);
            cmt_report_json_frames(r, j, o->stack);
            json_view(r, j, "cache", &o->at);
            cmt_json_end_object(j);
        }
        cmt_json_end_array(j);
        cmt_json_key(j, "leaked_blocks");
        cmt_json_uint(j, d->leak_blocks);
        cmt_json_key(j, "leaked_bytes");
        cmt_json_uint(j, d->leak_bytes);
        json_site_list(r, j, "leaks", d->leaks, d->n_leaks, 0);
        cmt_json_key(j, "suppressed_blocks");
        cmt_json_uint(j, d->suppressed_blocks);
        cmt_json_key(j, "suppressed_bytes");
        cmt_json_uint(j, d->suppressed_bytes);
        json_site_list(r, j, "suppressed", d->suppressed, d->n_suppressed, 0);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}
