/* SPDX-License-Identifier: MIT */
/* The comparison of several traces as JSON (docs/report.md). */
#include <inttypes.h>
#include <string.h>

#include "compare.h"
#include "json_writer.h"
#include "render_parts.h"

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
        cmt_json_key(j, "program");
        cmt_json_string(j, p->program);
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
