/* SPDX-License-Identifier: MIT */
#include "job.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "timeline.h"

static uint64_t wall_of(const struct cmt_analysis *a, uint64_t ts)
{
    uint64_t mono = a->info.start_monotonic_ns;
    return a->info.start_realtime_ns + (ts > mono ? ts - mono : 0);
}

void cmt_job_gpu_of(const struct cmt_job_member *m, int32_t ordinal, char *out, size_t len)
{
    if (!m->cvd_set) {
        snprintf(out, len, "%d", ordinal);
        return;
    }
    const char *p = m->cvd;
    for (int32_t i = 0; *p; i++) {
        size_t n = strcspn(p, ",");
        if (i == ordinal) {
            snprintf(out, len, "%.*s", (int)n, p);
            return;
        }
        p += n + (p[n] == ',');
    }
    snprintf(out, len, "?%d", ordinal); /* more devices used than the variable lists */
}

bool cmt_job_same_gpu(const struct cmt_job_member *a, const struct cmt_job_device *da, const struct cmt_job_member *b,
                      const struct cmt_job_device *db)
{
    if (strcmp(a->host, b->host) != 0)
        return false;
    if (da->uuid[0] && db->uuid[0])
        return strcmp(da->uuid, db->uuid) == 0;
    return strcmp(da->gpu, db->gpu) == 0;
}

static void format_uuid(const uint8_t u[16], char *out, size_t len)
{
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static size_t visible_count(const struct cmt_job_member *m)
{
    if (!m->cvd_set || !m->cvd[0])
        return 0;
    size_t n = 1;
    for (const char *p = m->cvd; *p; p++)
        n += *p == ',';
    return n;
}

int cmt_job_own_device(const struct cmt_job_member *m)
{
    int32_t expected = -1;
    if (m->local_rank >= 0)
        expected = visible_count(m) == 1 ? 0 : (int32_t)m->local_rank;
    int best = -1;
    for (size_t d = 0; d < m->n_devices; d++) {
        if (m->devices[d].peak == 0)
            continue;
        if (m->devices[d].ordinal == expected)
            return (int)d;
        if (best < 0 || m->devices[d].peak > m->devices[best].peak)
            best = (int)d;
    }
    return best;
}

static void fill_cells(const struct cmt_analysis *a, const struct cmt_account_view *v, struct cmt_job_member *m)
{
    struct cmt_timeline_view tv;
    if (!v->series || cmt_timeline_resample(&a->replay.timeline, CMT_JOB_CELLS, &tv) != 0)
        return;
    for (size_t s = 0; s < tv.n_series; s++) {
        if (tv.series[s] != v->series)
            continue;
        m->n_cells = tv.n < CMT_JOB_CELLS ? tv.n : CMT_JOB_CELLS;
        m->cell_origin_wall_ns = wall_of(a, tv.origin);
        m->cell_width_ns = tv.width;
        for (size_t b = 0; b < m->n_cells; b++)
            m->cells[b] = tv.cells[s * tv.n + b].max;
        break;
    }
    cmt_timeline_view_free(&tv);
}

static void fill_job_record(const struct cmt_trace_model *md, struct cmt_job_member *m)
{
    m->rank = md->has_process ? md->rank : -1;
    m->local_rank = m->world_size = m->local_world_size = -1;
    if (!md->has_job)
        return;
    const struct cmt_job_in *j = &md->job;
    m->has_job = true;
    m->source = (unsigned)j->source;
    m->rank = j->rank;
    m->local_rank = j->local_rank;
    m->world_size = j->world_size;
    m->local_world_size = j->local_world_size;
    snprintf(m->job_id, sizeof m->job_id, "%s", j->job_id ? cmt_model_string(md, j->job_id) : "");
    for (uint32_t i = 0; i < j->nvars; i++) {
        if (strcmp(cmt_model_string(md, j->vars[i].name_id), "CUDA_VISIBLE_DEVICES") != 0)
            continue;
        m->cvd_set = true;
        snprintf(m->cvd, sizeof m->cvd, "%s", cmt_model_string(md, j->vars[i].value_id));
    }
}

static void fill_device(const struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_account_view *v,
                        struct cmt_job_member *m, struct cmt_job_device *d)
{
    const struct cmt_account *acc = v->account;
    d->ordinal = acc->device;
    cmt_job_gpu_of(m, acc->device, d->gpu, sizeof d->gpu);
    const struct cmt_trace_model *md = &a->model;
    if (acc->device >= 0 && acc->device < CMT_MODEL_MAX_DEVICES && md->has_device[acc->device] &&
        md->device[acc->device].has_uuid) {
        /* All zero is no UUID (trace generators write it as a placeholder). */
        static const uint8_t zero[16];
        if (memcmp(md->device[acc->device].uuid, zero, sizeof zero) != 0)
            format_uuid(md->device[acc->device].uuid, d->uuid, sizeof d->uuid);
    }
    d->peak = acc->peak;
    d->peak_wall_ns = wall_of(a, acc->peak_ts);
    d->live_end = acc->live;
    memcpy(d->peak_by_holder, v->peak_by_holder, sizeof d->peak_by_holder);
    d->has_own_peaks = v->has_own_peaks;
    for (int h = 0; h < CMT_HOLDER_COUNT; h++)
        d->own_peak[h] = v->has_own_peaks ? v->own_peak[h].bytes : 0;
    if (v->n_top) {
        const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, v->top[0].stack);
        const struct cmt_frame *site = cmt_stack_site(sf);
        if (site)
            cmt_frame_describe(site, d->peak_site, sizeof d->peak_site);
    }
}

static void site_text(const struct cmt_report *r, uint64_t stack, char *buf, size_t len)
{
    buf[0] = 0;
    if (!stack)
        return;
    const struct cmt_frame *site = cmt_stack_site(cmt_frames_get(r->frames, stack));
    if (site)
        cmt_frame_describe(site, buf, len);
}

static void fill_ipc(const struct cmt_report *r, struct cmt_job_member *m)
{
    const struct cmt_ipc_report *x = &r->ipc;
    for (size_t i = 0; i < x->n_exports; i++) {
        if (m->n_exports == CMT_JOB_MAX_IPC) {
            m->exports_dropped++;
            continue;
        }
        struct cmt_job_ipc_item *it = &m->exports[m->n_exports++];
        it->fingerprint = x->exports[i].fingerprint;
        it->bytes = x->exports[i].bytes;
        site_text(r, x->exports[i].found ? x->exports[i].alloc_stack : 0, it->site, sizeof it->site);
    }
    for (size_t i = 0; i < x->n_imports; i++) {
        if (m->n_imports == CMT_JOB_MAX_IPC) {
            m->imports_dropped++;
            continue;
        }
        struct cmt_job_ipc_item *it = &m->imports[m->n_imports++];
        it->fingerprint = x->imports[i].fingerprint;
        it->bytes = x->imports[i].bytes;
        it->closed = x->imports[i].closed;
        site_text(r, x->imports[i].stack, it->site, sizeof it->site);
    }
}

void cmt_job_member_from_report(const struct cmt_report *r, const struct cmt_analysis *a, const char *trace, struct cmt_job_member *m)
{
    const struct cmt_trace_model *md = &a->model;
    memset(m, 0, sizeof *m);
    snprintf(m->trace, sizeof m->trace, "%s", trace);
    m->analysed = true;
    m->complete = cmt_analysis_complete(a);
    fill_job_record(md, m);
    snprintf(m->host, sizeof m->host, "%s", cmt_model_string(md, md->hostname_id));
    m->pid = md->has_process ? md->pid : a->info.pid;
    m->start_wall_ns = a->info.start_realtime_ns;
    uint64_t end = a->replay.timeline.end_ts;
    m->end_wall_ns = end ? wall_of(a, end) : m->start_wall_ns;
    const struct cmt_account_view *views[CMT_JOB_MAX_DEVICES];
    for (size_t i = 0; i < r->n_accounts && m->n_devices < CMT_JOB_MAX_DEVICES; i++) {
        const struct cmt_account_view *v = &r->accounts[i];
        if (v->account->cls != CMT_CLASS_DEVICE || v->account->device < 0)
            continue;
        views[m->n_devices] = v;
        fill_device(r, a, v, m, &m->devices[m->n_devices++]);
    }
    m->own = cmt_job_own_device(m);
    if (m->own >= 0)
        fill_cells(a, views[m->own], m);
    m->leak_bytes = r->leak_bytes;
    m->leak_count = r->leak_count;
    m->failed = a->replay.failed_allocs;
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < r->n_failures; i++)
        if (r->failures[i].first_ts < first) {
            first = r->failures[i].first_ts;
            m->failed_first_size = r->failures[i].min_size;
        }
    m->events = a->replay.events;
    fill_ipc(r, m);
}

void cmt_job_member_failed(const char *trace, struct cmt_job_member *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->trace, sizeof m->trace, "%s", trace);
    m->rank = m->local_rank = m->world_size = m->local_world_size = -1;
    m->own = -1;
}

/* ---- grouping ------------------------------------------------------------- */

static const struct cmt_job_member *sort_members;

static int by_rank(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const struct cmt_job_member *x = &sort_members[a], *y = &sort_members[b];
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return a < b ? -1 : a > b;
}

static uint64_t own_peak(const struct cmt_job_member *m)
{
    return m->own >= 0 ? m->devices[m->own].peak : 0;
}

static void imbalance(const struct cmt_job_set *s, struct cmt_job *job)
{
    struct cmt_job_imbalance *im = &job->imbalance;
    unsigned __int128 sum = 0;
    for (size_t k = 0; k < job->n_members; k++) {
        size_t i = job->members[k];
        const struct cmt_job_member *m = &s->members[i];
        if (m->own < 0)
            continue;
        uint64_t p = own_peak(m);
        if (im->n == 0 || p > im->max) {
            if (im->n) {
                im->next = im->max;
                im->next_member = im->max_member;
            }
            im->max = p;
            im->max_member = i;
        } else if (im->n == 1 || p > im->next) {
            im->next = p;
            im->next_member = i;
        }
        if (im->n == 0 || p < im->min) {
            im->min = p;
            im->min_member = i;
        }
        sum += p;
        im->n++;
    }
    if (im->n) {
        im->mean = (uint64_t)(sum / im->n);
        im->max_over_mean = im->mean ? (double)im->max / (double)im->mean : 1.0;
    }
}

static int peers(const struct cmt_job_set *s, struct cmt_job *job)
{
    for (size_t k = 0; k < job->n_members; k++) {
        const struct cmt_job_member *m = &s->members[job->members[k]];
        for (size_t d = 0; d < m->n_devices; d++) {
            if ((int)d == m->own || m->devices[d].peak == 0)
                continue;
            struct cmt_job_peer p = {.member = job->members[k], .device = d};
            for (size_t o = 0; o < job->n_members; o++) {
                const struct cmt_job_member *x = &s->members[job->members[o]];
                /* Members are in rank order: a rank given twice is its last entry. */
                if (x->own >= 0 && cmt_job_same_gpu(x, &x->devices[x->own], m, &m->devices[d]) &&
                    p.n_owners < sizeof p.owners / sizeof p.owners[0] &&
                    (p.n_owners == 0 || p.owners[p.n_owners - 1] != x->rank))
                    p.owners[p.n_owners++] = x->rank;
            }
            struct cmt_job_peer *grown = realloc(job->peers, (job->n_peers + 1) * sizeof *grown);
            if (!grown)
                return -1;
            job->peers = grown;
            job->peers[job->n_peers++] = p;
        }
    }
    return 0;
}

static int push_rank(int64_t **list, size_t *n, int64_t rank)
{
    int64_t *grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    *list = grown;
    (*list)[(*n)++] = rank;
    return 0;
}

/* Ranks missing below the world size, ranks given twice. */
static int completeness(const struct cmt_job_set *s, struct cmt_job *job)
{
    for (size_t k = 0; k < job->n_members; k++) {
        int64_t r = s->members[job->members[k]].rank;
        if (k && s->members[job->members[k - 1]].rank == r &&
            (job->n_duplicates == 0 || job->duplicates[job->n_duplicates - 1] != r) &&
            push_rank(&job->duplicates, &job->n_duplicates, r) != 0)
            return -1;
    }
    /* A bound keeps a hostile world size from listing billions. */
    int64_t expect = job->world_size > 0 && job->world_size <= 65536 ? job->world_size : 0;
    size_t k = 0;
    for (int64_t r = 0; r < expect; r++) {
        while (k < job->n_members && s->members[job->members[k]].rank < r)
            k++;
        if ((k == job->n_members || s->members[job->members[k]].rank != r) &&
            push_rank(&job->missing, &job->n_missing, r) != 0)
            return -1;
    }
    return 0;
}

static void describe(const struct cmt_job_set *s, struct cmt_job *job)
{
    job->world_size = -2;
    for (size_t k = 0; k < job->n_members; k++) {
        const struct cmt_job_member *m = &s->members[job->members[k]];
        if (k == 0 || m->start_wall_ns < job->start_wall_ns)
            job->start_wall_ns = m->start_wall_ns;
        if (m->end_wall_ns > job->end_wall_ns)
            job->end_wall_ns = m->end_wall_ns;
        if (m->world_size >= 0)
            job->world_size = job->world_size == -2 || job->world_size == m->world_size ? m->world_size : -1;
        if (m->has_job && !job->source)
            job->source = m->source;
        bool seen = false;
        for (size_t o = 0; o < k && !seen; o++)
            seen = !strcmp(s->members[job->members[o]].host, m->host);
        job->n_hosts += !seen;
    }
    if (job->world_size == -2)
        job->world_size = -1;
}

/* Each import of a rank, matched to the export of another rank of the job
 * with the same fingerprint (the first such, by rank). */
static int shares(const struct cmt_job_set *s, struct cmt_job *job)
{
    for (size_t k = 0; k < job->n_members; k++) {
        size_t im = job->members[k];
        const struct cmt_job_member *m = &s->members[im];
        for (size_t i = 0; i < m->n_imports; i++) {
            struct cmt_job_share sh = {.importer = im, .import = i, .exporter = SIZE_MAX, .export = SIZE_MAX};
            uint64_t fp = m->imports[i].fingerprint;
            for (size_t o = 0; fp && o < job->n_members && sh.exporter == SIZE_MAX; o++) {
                const struct cmt_job_member *x = &s->members[job->members[o]];
                if (job->members[o] == im)
                    continue;
                for (size_t e = 0; e < x->n_exports; e++)
                    if (x->exports[e].fingerprint == fp) {
                        sh.exporter = job->members[o];
                        sh.export = e;
                        break;
                    }
            }
            struct cmt_job_share *grown = realloc(job->shares, (job->n_shares + 1) * sizeof *grown);
            if (!grown)
                return -1;
            job->shares = grown;
            job->shares[job->n_shares++] = sh;
        }
    }
    return 0;
}

static int build_job(struct cmt_job_set *s, struct cmt_job *job)
{
    sort_members = s->members;
    qsort(job->members, job->n_members, sizeof *job->members, by_rank);
    describe(s, job);
    imbalance(s, job);
    if (completeness(s, job) != 0 || peers(s, job) != 0 || shares(s, job) != 0)
        return -1;
    return 0;
}

static void job_free(struct cmt_job *job)
{
    free(job->members);
    free(job->missing);
    free(job->duplicates);
    free(job->peers);
    free(job->shares);
}

int cmt_job_set_build(struct cmt_job_set *s, const struct cmt_job_member *members, size_t n)
{
    memset(s, 0, sizeof *s);
    s->members = members;
    s->n_members = n;
    for (int h = 0; h < CMT_HOLDER_COUNT; h++)
        s->holder_key[h] = cmt_holder_key((enum cmt_holder)h);
    bool *taken = calloc(n ? n : 1, sizeof *taken);
    size_t *idx = calloc(n ? n : 1, sizeof *idx);
    if (!taken || !idx)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        if (taken[i] || !members[i].analysed || members[i].rank < 0)
            continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            if (!taken[j] && members[j].analysed && members[j].rank >= 0 &&
                !strcmp(members[j].job_id, members[i].job_id)) {
                taken[j] = true;
                idx[k++] = j;
            }
        if (k < 2 && !(members[i].world_size > 1))
            continue;
        struct cmt_job *grown = realloc(s->jobs, (s->n_jobs + 1) * sizeof *grown);
        if (!grown)
            goto fail;
        s->jobs = grown;
        struct cmt_job *job = &s->jobs[s->n_jobs++];
        memset(job, 0, sizeof *job);
        snprintf(job->job_id, sizeof job->job_id, "%s", members[i].job_id);
        job->members = malloc(k * sizeof *job->members);
        if (!job->members)
            goto fail;
        memcpy(job->members, idx, k * sizeof *idx);
        job->n_members = k;
        if (build_job(s, job) != 0)
            goto fail;
    }
    free(taken);
    free(idx);
    return 0;
fail:
    free(taken);
    free(idx);
    cmt_job_set_free(s);
    return -1;
}

void cmt_job_set_free(struct cmt_job_set *s)
{
    for (size_t i = 0; i < s->n_jobs; i++)
        job_free(&s->jobs[i]);
    free(s->jobs);
    s->jobs = NULL;
    s->n_jobs = 0;
}

const char *cmt_job_source_name(unsigned source)
{
    static const char *const names[] = {"none", "torchrun", "Open MPI", "MPICH/PMI", "Slurm"};
    return source < sizeof names / sizeof names[0] ? names[source] : "unknown";
}

const char *cmt_job_source_key(unsigned source)
{
    static const char *const keys[] = {"none", "torchrun", "openmpi", "pmi", "slurm"};
    return source < sizeof keys / sizeof keys[0] ? keys[source] : "unknown";
}

void cmt_job_timeline(const struct cmt_job_set *s, const struct cmt_job *job, size_t columns, uint64_t *out)
{
    memset(out, 0, job->n_members * columns * sizeof *out);
    if (!columns)
        return;
    uint64_t span = job->end_wall_ns > job->start_wall_ns ? job->end_wall_ns - job->start_wall_ns : 1;
    uint64_t width = (span + columns - 1) / columns;
    for (size_t k = 0; k < job->n_members; k++) {
        const struct cmt_job_member *m = &s->members[job->members[k]];
        for (size_t b = 0; b < m->n_cells; b++) {
            uint64_t from = m->cell_origin_wall_ns + (uint64_t)b * m->cell_width_ns;
            uint64_t to = m->cell_width_ns > UINT64_MAX - from ? UINT64_MAX : from + m->cell_width_ns; /* exclusive */
            if (to > job->end_wall_ns)
                to = job->end_wall_ns;
            if (from < job->start_wall_ns || from >= to)
                continue;
            size_t c0 = (size_t)((from - job->start_wall_ns) / width);
            size_t c1 = (size_t)((to - 1 - job->start_wall_ns) / width);
            for (size_t c = c0; c <= c1 && c < columns; c++)
                if (m->cells[b] > out[k * columns + c])
                    out[k * columns + c] = m->cells[b];
        }
    }
}
