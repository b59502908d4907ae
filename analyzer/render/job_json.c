/* SPDX-License-Identifier: MIT */
/* The job view as JSON: the "jobs" array of `report --json` with several
 * traces (docs/report.md lists every field). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_report.h"
#include "json_writer.h"

static uint64_t since_start(const struct cmt_job *job, uint64_t wall)
{
    return wall > job->start_wall_ns ? wall - job->start_wall_ns : 0;
}

static void holders(const struct cmt_job_set *s, struct cmt_json *j, const char *key, const uint64_t *bytes,
                    bool skip_other)
{
    if (key)
        cmt_json_key(j, key);
    cmt_json_begin_object(j);
    for (int h = skip_other ? 1 : 0; h < CMT_HOLDER_DEVICE_COUNT; h++) {
        cmt_json_key(j, s->holder_key[h]);
        cmt_json_uint(j, bytes[h]);
    }
    cmt_json_end_object(j);
}

static void owner_ranks(const struct cmt_job *job, const struct cmt_job_set *s, const struct cmt_job_member *m,
                        const struct cmt_job_device *d, struct cmt_json *j)
{
    cmt_json_key(j, "owner_ranks");
    cmt_json_begin_array(j);
    int64_t last = -1;
    for (size_t o = 0; o < job->n_members; o++) {
        const struct cmt_job_member *x = &s->members[job->members[o]];
        if (x->own >= 0 && cmt_job_same_gpu(x, &x->devices[x->own], m, d) && x->rank != last) {
            cmt_json_int(j, x->rank);
            last = x->rank;
        }
    }
    cmt_json_end_array(j);
}

static void device(const struct cmt_job *job, const struct cmt_job_set *s, const struct cmt_job_member *m, size_t d,
                   struct cmt_json *j)
{
    const struct cmt_job_device *dv = &m->devices[d];
    cmt_json_begin_object(j);
    cmt_json_key(j, "ordinal");
    cmt_json_int(j, dv->ordinal);
    cmt_json_key(j, "gpu");
    cmt_json_string(j, dv->gpu);
    cmt_json_key(j, "uuid");
    cmt_json_string(j, dv->uuid[0] ? dv->uuid : NULL);
    cmt_json_key(j, "own");
    cmt_json_bool(j, (int)d == m->own);
    owner_ranks(job, s, m, dv, j);
    cmt_json_key(j, "peak_bytes");
    cmt_json_uint(j, dv->peak);
    cmt_json_key(j, "peak_time_ns");
    cmt_json_uint(j, since_start(job, dv->peak_wall_ns));
    cmt_json_key(j, "live_at_end_bytes");
    cmt_json_uint(j, dv->live_end);
    cmt_json_key(j, "peak_site");
    cmt_json_string(j, dv->peak_site[0] ? dv->peak_site : NULL);
    holders(s, j, "peak_by_holder", dv->peak_by_holder, false);
    cmt_json_key(j, "own_peaks");
    if (dv->has_own_peaks)
        holders(s, j, NULL, dv->own_peak, true);
    else
        cmt_json_null(j);
    cmt_json_end_object(j);
}

static void rank(const struct cmt_job *job, const struct cmt_job_set *s, const struct cmt_job_member *m,
                 struct cmt_json *j)
{
    static const uint64_t none[CMT_HOLDER_COUNT];
    const struct cmt_job_device *own = m->own >= 0 ? &m->devices[m->own] : NULL;
    cmt_json_begin_object(j);
    cmt_json_key(j, "rank");
    cmt_json_int(j, m->rank);
    cmt_json_key(j, "local_rank");
    cmt_json_int(j, m->local_rank);
    cmt_json_key(j, "world_size");
    cmt_json_int(j, m->world_size);
    cmt_json_key(j, "local_world_size");
    cmt_json_int(j, m->local_world_size);
    cmt_json_key(j, "host");
    cmt_json_string(j, m->host);
    cmt_json_key(j, "pid");
    cmt_json_uint(j, m->pid);
    cmt_json_key(j, "trace");
    cmt_json_string(j, m->trace);
    cmt_json_key(j, "complete");
    cmt_json_bool(j, m->complete);
    cmt_json_key(j, "cuda_visible_devices");
    cmt_json_string(j, m->cvd_set ? m->cvd : NULL);
    cmt_json_key(j, "start_time_ns");
    cmt_json_uint(j, since_start(job, m->start_wall_ns));
    cmt_json_key(j, "end_time_ns");
    cmt_json_uint(j, since_start(job, m->end_wall_ns));
    cmt_json_key(j, "own_device");
    if (own)
        cmt_json_int(j, own->ordinal);
    else
        cmt_json_null(j);
    cmt_json_key(j, "own_gpu");
    cmt_json_string(j, own ? own->gpu : NULL);
    cmt_json_key(j, "peak_bytes");
    cmt_json_uint(j, own ? own->peak : 0);
    cmt_json_key(j, "peak_time_ns");
    cmt_json_uint(j, own ? since_start(job, own->peak_wall_ns) : 0);
    cmt_json_key(j, "peak_wall_ns");
    cmt_json_uint(j, own ? own->peak_wall_ns : 0);
    cmt_json_key(j, "peak_site");
    cmt_json_string(j, own && own->peak_site[0] ? own->peak_site : NULL);
    holders(s, j, "peak_by_holder", own ? own->peak_by_holder : none, false);
    cmt_json_key(j, "own_peaks");
    if (own && own->has_own_peaks)
        holders(s, j, NULL, own->own_peak, true);
    else
        cmt_json_null(j);
    uint64_t elsewhere = 0;
    for (size_t d = 0; d < m->n_devices; d++)
        if ((int)d != m->own)
            elsewhere += m->devices[d].peak;
    cmt_json_key(j, "elsewhere_peak_bytes");
    cmt_json_uint(j, elsewhere);
    cmt_json_key(j, "leak_bytes");
    cmt_json_uint(j, m->leak_bytes);
    cmt_json_key(j, "leak_count");
    cmt_json_uint(j, m->leak_count);
    cmt_json_key(j, "failed_count");
    cmt_json_uint(j, m->failed);
    cmt_json_key(j, "failed_first_size_bytes");
    cmt_json_uint(j, m->failed_first_size);
    cmt_json_key(j, "events");
    cmt_json_uint(j, m->events);
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (size_t d = 0; d < m->n_devices; d++)
        device(job, s, m, d, j);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void ranks_list(struct cmt_json *j, const char *key, const int64_t *r, size_t n)
{
    cmt_json_key(j, key);
    cmt_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        cmt_json_int(j, r[i]);
    cmt_json_end_array(j);
}

static void imbalance(const struct cmt_job *job, const struct cmt_job_set *s, struct cmt_json *j)
{
    const struct cmt_job_imbalance *im = &job->imbalance;
    cmt_json_key(j, "imbalance");
    if (im->n < 2) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "ranks");
    cmt_json_uint(j, im->n);
    cmt_json_key(j, "peak_max_bytes");
    cmt_json_uint(j, im->max);
    cmt_json_key(j, "peak_max_rank");
    cmt_json_int(j, s->members[im->max_member].rank);
    cmt_json_key(j, "next_bytes");
    cmt_json_uint(j, im->next);
    cmt_json_key(j, "next_rank");
    cmt_json_int(j, s->members[im->next_member].rank);
    cmt_json_key(j, "peak_max_over_next_bytes");
    cmt_json_uint(j, im->max - im->next);
    cmt_json_key(j, "peak_min_bytes");
    cmt_json_uint(j, im->min);
    cmt_json_key(j, "peak_min_rank");
    cmt_json_int(j, s->members[im->min_member].rank);
    cmt_json_key(j, "peak_mean_bytes");
    cmt_json_uint(j, im->mean);
    cmt_json_key(j, "peak_max_over_mean");
    cmt_json_double(j, im->max_over_mean);
    cmt_json_end_object(j);
}

static void peers(const struct cmt_job *job, const struct cmt_job_set *s, struct cmt_json *j)
{
    cmt_json_key(j, "peer_memory");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < job->n_peers; i++) {
        const struct cmt_job_peer *p = &job->peers[i];
        const struct cmt_job_member *m = &s->members[p->member];
        const struct cmt_job_device *d = &m->devices[p->device];
        cmt_json_begin_object(j);
        cmt_json_key(j, "rank");
        cmt_json_int(j, m->rank);
        cmt_json_key(j, "device");
        cmt_json_int(j, d->ordinal);
        cmt_json_key(j, "gpu");
        cmt_json_string(j, d->gpu);
        ranks_list(j, "owner_ranks", p->owners, p->n_owners);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, d->peak);
        cmt_json_key(j, "peak_time_ns");
        cmt_json_uint(j, since_start(job, d->peak_wall_ns));
        cmt_json_key(j, "live_at_end_bytes");
        cmt_json_uint(j, d->live_end);
        cmt_json_key(j, "peak_site");
        cmt_json_string(j, d->peak_site[0] ? d->peak_site : NULL);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

/* Memory one rank mapped from another process, matched to the rank that
 * exported it (exporter_rank null: no trace of the job did). */
static void shares(const struct cmt_job *job, const struct cmt_job_set *s, struct cmt_json *j)
{
    cmt_json_key(j, "ipc_mappings");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < job->n_shares; i++) {
        const struct cmt_job_share *sh = &job->shares[i];
        const struct cmt_job_member *m = &s->members[sh->importer];
        const struct cmt_job_ipc_item *imp = &m->imports[sh->import];
        char fp[24];
        snprintf(fp, sizeof fp, "%016llx", (unsigned long long)imp->fingerprint);
        cmt_json_begin_object(j);
        cmt_json_key(j, "rank");
        cmt_json_int(j, m->rank);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, imp->bytes);
        cmt_json_key(j, "closed");
        cmt_json_bool(j, imp->closed);
        cmt_json_key(j, "handle");
        cmt_json_string(j, imp->fingerprint ? fp : NULL);
        cmt_json_key(j, "site");
        cmt_json_string(j, imp->site[0] ? imp->site : NULL);
        cmt_json_key(j, "exporter_rank");
        if (sh->exporter == SIZE_MAX) {
            cmt_json_null(j);
        } else {
            const struct cmt_job_member *x = &s->members[sh->exporter];
            cmt_json_int(j, x->rank);
        }
        cmt_json_key(j, "exporter_bytes");
        if (sh->exporter == SIZE_MAX)
            cmt_json_null(j);
        else
            cmt_json_uint(j, s->members[sh->exporter].exports[sh->export].bytes);
        cmt_json_key(j, "exporter_site");
        const char *site = sh->exporter == SIZE_MAX ? "" : s->members[sh->exporter].exports[sh->export].site;
        cmt_json_string(j, site[0] ? site : NULL);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void timeline(const struct cmt_job *job, const struct cmt_job_set *s, size_t columns, struct cmt_json *j)
{
    cmt_json_key(j, "timeline");
    uint64_t *cells = columns ? calloc(job->n_members * columns, sizeof *cells) : NULL;
    if (!cells) {
        cmt_json_null(j);
        return;
    }
    cmt_job_timeline(s, job, columns, cells);
    uint64_t span = job->end_wall_ns > job->start_wall_ns ? job->end_wall_ns - job->start_wall_ns : 1;
    cmt_json_begin_object(j);
    cmt_json_key(j, "columns");
    cmt_json_uint(j, columns);
    cmt_json_key(j, "column_ns");
    cmt_json_uint(j, (span + columns - 1) / columns);
    cmt_json_key(j, "ranks");
    cmt_json_begin_array(j);
    for (size_t k = 0; k < job->n_members; k++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "rank");
        cmt_json_int(j, s->members[job->members[k]].rank);
        cmt_json_key(j, "own_device_max_bytes");
        cmt_json_begin_array(j);
        for (size_t c = 0; c < columns; c++)
            cmt_json_uint(j, cells[k * columns + c]);
        cmt_json_end_array(j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    free(cells);
}

static void clock_object(const struct cmt_job *job, const struct cmt_job_render_options *opt, struct cmt_json *j)
{
    cmt_json_key(j, "clock");
    cmt_json_begin_object(j);
    cmt_json_key(j, "basis");
    cmt_json_string(j, "CLOCK_REALTIME");
    cmt_json_key(j, "hosts");
    cmt_json_uint(j, job->n_hosts);
    cmt_json_key(j, "tolerance_ns");
    cmt_json_uint(j, job->n_hosts > 1 ? opt->tolerance_ns : 0);
    cmt_json_key(j, "start_wall_ns");
    cmt_json_uint(j, job->start_wall_ns);
    cmt_json_key(j, "end_wall_ns");
    cmt_json_uint(j, job->end_wall_ns);
    cmt_json_end_object(j);
}

void cmt_job_render_json(const struct cmt_job_set *s, const struct cmt_job_render_options *opt, struct cmt_json *j)
{
    cmt_json_begin_array(j);
    for (size_t i = 0; i < s->n_jobs; i++) {
        const struct cmt_job *job = &s->jobs[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "job_id");
        cmt_json_string(j, job->job_id);
        cmt_json_key(j, "launcher");
        cmt_json_string(j, cmt_job_source_key(job->source));
        cmt_json_key(j, "world_size");
        cmt_json_int(j, job->world_size);
        ranks_list(j, "missing_ranks", job->missing, job->n_missing);
        ranks_list(j, "duplicate_ranks", job->duplicates, job->n_duplicates);
        cmt_json_key(j, "hosts");
        cmt_json_begin_array(j);
        for (size_t k = 0; k < job->n_members; k++) {
            const char *h = s->members[job->members[k]].host;
            bool seen = false;
            for (size_t o = 0; o < k && !seen; o++)
                seen = !strcmp(s->members[job->members[o]].host, h);
            if (!seen)
                cmt_json_string(j, h);
        }
        cmt_json_end_array(j);
        clock_object(job, opt, j);
        cmt_json_key(j, "ranks");
        cmt_json_begin_array(j);
        for (size_t k = 0; k < job->n_members; k++)
            rank(job, s, &s->members[job->members[k]], j);
        cmt_json_end_array(j);
        imbalance(job, s, j);
        peers(job, s, j);
        shares(job, s, j);
        timeline(job, s, opt->columns, j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}
