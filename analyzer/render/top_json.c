/* SPDX-License-Identifier: MIT */
/* `cumemtrace top --once --format json` (docs/top.md, "JSON"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "render_parts.h"

static void json_sites(struct cmt_json *j, const struct cmt_top_snapshot *m, size_t i, size_t d)
{
    struct cmt_top_site *rows = m->max_sites ? calloc(m->max_sites, sizeof *rows) : NULL;
    size_t n = rows ? cmt_top_sites(m->top, i, d, m->sort, rows, m->max_sites) : 0;
    cmt_json_begin_array(j);
    for (size_t k = 0; k < n; k++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "site");
        cmt_json_string(j, rows[k].label);
        cmt_json_key(j, "live_bytes");
        cmt_json_uint(j, rows[k].live);
        cmt_json_key(j, "count");
        cmt_json_uint(j, rows[k].count);
        cmt_json_key(j, "bytes_at_peak");
        cmt_json_uint(j, rows[k].at_peak);
        cmt_json_key(j, "growth_per_step");
        cmt_json_int(j, rows[k].growth);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    free(rows);
}

static void json_device(struct cmt_json *j, const struct cmt_top_snapshot *m, size_t i, size_t d,
                        const struct cmt_top_device *v)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "device");
    cmt_json_int(j, v->device);
    cmt_json_key(j, "live_bytes");
    cmt_json_uint(j, v->live);
    cmt_json_key(j, "live_count");
    cmt_json_uint(j, v->live_count);
    cmt_json_key(j, "peak_bytes");
    cmt_json_uint(j, v->peak);
    cmt_json_key(j, "peak_ns");
    cmt_json_uint(j, v->peak_ns);
    cmt_json_key(j, "holders");
    cmt_json_begin_object(j);
    cmt_json_key(j, "pytorch_reserve");
    cmt_json_uint(j, v->reserve);
    cmt_json_key(j, "cublas");
    cmt_json_uint(j, v->cublas);
    cmt_json_key(j, "nccl");
    cmt_json_uint(j, v->nccl);
    cmt_json_key(j, "other");
    cmt_json_uint(j, v->other);
    cmt_json_end_object(j);
    cmt_json_key(j, "reserve_from");
    cmt_json_string(j, v->reserve_from_blocks ? "blocks" : "stacks");
    cmt_json_key(j, "pytorch_tensors");
    if (v->has_tensors)
        cmt_json_uint(j, v->tensors);
    else
        cmt_json_null(j);
    cmt_json_key(j, "growth_per_step");
    if (v->has_growth)
        cmt_json_int(j, v->growth_per_step);
    else
        cmt_json_null(j);
    cmt_json_key(j, "failed");
    cmt_json_uint(j, v->failed);
    cmt_json_key(j, "last_failed");
    if (v->failed) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "size");
        cmt_json_uint(j, v->last_failed_size);
        cmt_json_key(j, "site");
        cmt_json_string(j, v->last_failed_site);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    cmt_json_key(j, "sites");
    json_sites(j, m, i, d);
    cmt_json_end_object(j);
}

void cmt_top_render_json(const struct cmt_top_snapshot *m, FILE *out)
{
    const struct cmt_top_process *const *p;
    size_t n = cmt_top_processes(m->top, &p);
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "sort");
    cmt_json_string(&j, cmt_top_sort_name(m->sort));
    cmt_json_key(&j, "processes");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
        cmt_top_detail(m->top, i);
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "trace");
        cmt_json_string(&j, p[i]->path);
        cmt_json_key(&j, "pid");
        cmt_json_uint(&j, p[i]->pid);
        cmt_json_key(&j, "rank");
        if (p[i]->rank >= 0)
            cmt_json_int(&j, p[i]->rank);
        else
            cmt_json_null(&j);
        cmt_json_key(&j, "command");
        cmt_json_string(&j, p[i]->command);
        cmt_json_key(&j, "state");
        cmt_json_string(&j, cmt_top_state_name(p[i]->state));
        cmt_json_key(&j, "how");
        cmt_json_string(&j, p[i]->how[0] ? p[i]->how : NULL);
        cmt_json_key(&j, "events");
        cmt_json_uint(&j, p[i]->events);
        cmt_json_key(&j, "elapsed_ns");
        cmt_json_uint(&j, p[i]->elapsed_ns);
        cmt_json_key(&j, "step");
        if (p[i]->has_step)
            cmt_json_uint(&j, p[i]->step);
        else
            cmt_json_null(&j);
        cmt_json_key(&j, "phase");
        cmt_json_string(&j, p[i]->phase[0] ? p[i]->phase : NULL);
        cmt_json_key(&j, "devices");
        cmt_json_begin_array(&j);
        for (size_t d = 0; d < p[i]->n_devices; d++)
            json_device(&j, m, i, d, &p[i]->devices[d]);
        cmt_json_end_array(&j);
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
    fputc('\n', out);
}
