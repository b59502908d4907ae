/* SPDX-License-Identifier: MIT */
/* cumemtrace diff --json (docs/report.md, "Comparing two runs"). */
#include <string.h>

#include "render_parts.h"
#include "json_writer.h"

static void run_json(const struct cmt_diff_run *run, struct cmt_json *j)
{
    const struct cmt_process_summary *s = &run->summary;
    cmt_json_begin_object(j);
    cmt_json_key(j, "trace");
    cmt_json_string(j, run->trace);
    cmt_json_key(j, "program");
    cmt_json_string(j, run->program);
    cmt_json_key(j, "exe");
    cmt_json_string(j, run->exe);
    cmt_json_key(j, "recorded");
    cmt_json_string(j, run->when);
    cmt_json_key(j, "duration_ns");
    cmt_json_uint(j, run->duration_ns);
    cmt_json_key(j, "pid");
    cmt_json_uint(j, s->pid);
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < s->n_devices; i++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "ordinal");
        cmt_json_int(j, s->devices[i].ordinal);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, s->devices[i].peak);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "leak_bytes");
    cmt_json_uint(j, s->leak_bytes);
    cmt_json_key(j, "leak_count");
    cmt_json_uint(j, s->leak_count);
    cmt_json_key(j, "suppressed_bytes");
    cmt_json_uint(j, run->suppressed_bytes);
    cmt_json_key(j, "suppressed_count");
    cmt_json_uint(j, run->suppressed_count);
    cmt_json_key(j, "calls");
    cmt_json_uint(j, run->calls);
    cmt_json_end_object(j);
}

static void change_json(struct cmt_json *j, const char *const *names, const uint64_t *ov, const uint64_t *nv,
                        size_t n)
{
    for (size_t k = 0; k < n; k++) {
        cmt_json_key(j, names[k]);
        cmt_json_begin_object(j);
        cmt_json_key(j, "old");
        cmt_json_uint(j, ov[k]);
        cmt_json_key(j, "new");
        cmt_json_uint(j, nv[k]);
        cmt_json_key(j, "change");
        cmt_json_int(j, cmt_diff_delta(ov[k], nv[k]));
        cmt_json_end_object(j);
    }
}

static void side_json(const struct cmt_diff_side *o, const struct cmt_diff_side *n, struct cmt_json *j)
{
    static const char *const names[] = {"peak_bytes", "leak_bytes", "calls", "tensor_peak_bytes", "tensor_kept_bytes"};
    uint64_t ov[] = {o->peak, o->leak, o->calls, o->tensor_peak, o->tensor_kept},
             nv[] = {n->peak, n->leak, n->calls, n->tensor_peak, n->tensor_kept};
    change_json(j, names, ov, nv, 5);
}

static void frames_json(const struct cmt_diff_site *s, struct cmt_json *j)
{
    cmt_json_key(j, "frames");
    cmt_json_begin_array(j);
    const char *p = s->key;
    char line[1100];
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        cmt_json_string(j, line);
        p = nl ? nl + 1 : p + len;
    }
    cmt_json_end_array(j);
}

/* A site whose suppressed leaks changed: apart from "sites", whose leak_bytes
 * they are not in. */
static void suppressed_json(const struct cmt_diff *d, const struct cmt_diff_site *s, struct cmt_json *j)
{
    static const char *const names[] = {"suppressed_bytes", "suppressed_count"};
    uint64_t ov[] = {s->side[0].suppressed, s->side[0].suppressed_count},
             nv[] = {s->side[1].suppressed, s->side[1].suppressed_count};
    cmt_json_begin_object(j);
    cmt_json_key(j, "api");
    cmt_json_string(j, s->api);
    change_json(j, names, ov, nv, 2);
    /* the report's "suppression" member */
    struct cmt_report names_of = {.suppressions = d->suppressions, .n_suppressions = d->n_suppressions};
    cmt_report_json_suppression(&names_of, j, s->suppression);
    frames_json(s, j);
    cmt_json_end_object(j);
}

/* PyTorch's tensors of the two runs (null when neither has the block layer). */
static void tensors_json(const struct cmt_diff *d, struct cmt_json *j)
{
    const struct cmt_diff_tensors *o = &d->run[0].tensors, *n = &d->run[1].tensors;
    cmt_json_key(j, "tensors");
    if (!o->on && !n->on) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    static const char *const names[] = {"peak_bytes", "kept_bytes", "kept_count", "alive_bytes", "alive_count",
                                        "rate_bytes_per_step", "steps"};
    uint64_t ov[] = {o->peak, o->kept_bytes, o->kept_count, o->alive_bytes, o->alive_count, o->rate_per_step, o->steps},
             nv[] = {n->peak, n->kept_bytes, n->kept_count, n->alive_bytes, n->alive_count, n->rate_per_step, n->steps};
    change_json(j, names, ov, nv, 7);
    cmt_json_key(j, "categories_at_peak");
    cmt_json_begin_object(j);
    change_json(j, d->category_key, o->cats, n->cats, CMT_CAT_COUNT);
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void diff_json(const struct cmt_diff *d, struct cmt_json *j)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "old");
    run_json(&d->run[0], j);
    cmt_json_key(j, "new");
    run_json(&d->run[1], j);
    cmt_json_key(j, "different_program");
    cmt_json_bool(j, d->different_program);
    tensors_json(d, j);
    cmt_json_key(j, "sites_total");
    cmt_json_uint(j, d->n_sites);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < d->n_sites; i++) {
        const struct cmt_diff_site *s = &d->sites[i];
        if (!cmt_diff_site_changed(s))
            continue;
        cmt_json_begin_object(j);
        cmt_json_key(j, "api");
        cmt_json_string(j, s->api);
        side_json(&s->side[0], &s->side[1], j);
        frames_json(s, j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "suppressed_sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < d->n_sites; i++)
        if (cmt_diff_site_suppressed_changed(&d->sites[i]))
            suppressed_json(d, &d->sites[i], j);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

void cmt_diff_render_json(const struct cmt_diff *d, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    diff_json(d, &j);
    cmt_json_finish(&j);
}
