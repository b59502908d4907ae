/* SPDX-License-Identifier: MIT */
/* The job view as text: after the comparison table of `report` with several
 * traces (docs/report.md, "A job of several processes"). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job_report.h"
#include "size_parse.h"
#include "timeline_chart.h"
#include "text_escape.h"

static uint64_t since_start(const struct cmt_job *job, uint64_t wall)
{
    return wall > job->start_wall_ns ? wall - job->start_wall_ns : 0;
}

static void print_rank_list(FILE *out, const int64_t *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%" PRId64, i == 0 ? "" : i + 1 == n ? " and " : ", ", r[i]);
}

static void header(const struct cmt_job_set *s, const struct cmt_job *job, const struct cmt_job_render_options *opt,
                   FILE *out)
{
    fprintf(out, "\nJob %s (%s): %zu %s", job->job_id[0] ? cmt_esc(job->job_id) : "without an id",
            cmt_job_source_name(job->source), job->n_members, job->n_members == 1 ? "rank" : "ranks");
    if (job->world_size >= 0)
        fprintf(out, " of %" PRId64, job->world_size);
    fprintf(out, ", %zu %s", job->n_hosts, job->n_hosts == 1 ? "host" : "hosts");
    if (job->n_hosts == 1)
        fprintf(out, " (%s)", cmt_esc(s->members[job->members[0]].host));
    fputc('\n', out);
    char dur[32];
    cmt_format_duration(job->end_wall_ns - job->start_wall_ns, dur, sizeof dur);
    time_t t = (time_t)(job->start_wall_ns / 1000000000ull);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    if (job->n_hosts == 1) {
        fprintf(out, "  clock:    the ranks' traces merged by CLOCK_REALTIME, which one host's processes share; "
                     "from %s, %s\n", when, dur);
    } else {
        char tol[32];
        cmt_format_duration(opt->tolerance_ns, tol, sizeof tol);
        fprintf(out, "  clock:    the ranks' traces merged by CLOCK_REALTIME across %zu hosts, whose clocks are "
                     "taken to agree within %s (--clock-tolerance): times on different hosts closer than that are "
                     "not ordered; from %s, %s\n", job->n_hosts, tol, when, dur);
    }
    if (job->n_missing) {
        fprintf(out, "  missing:  no trace of rank%s ", job->n_missing == 1 ? "" : "s");
        print_rank_list(out, job->missing, job->n_missing);
        fprintf(out, " (world size %" PRId64 ")\n", job->world_size);
    }
    if (job->n_duplicates) {
        fprintf(out, "  twice:    more than one trace of rank%s ", job->n_duplicates == 1 ? "" : "s");
        print_rank_list(out, job->duplicates, job->n_duplicates);
        fputs(" (two launches with one job id? their figures are listed apart)\n", out);
    }
}

static void table(const struct cmt_job_set *s, const struct cmt_job *job, FILE *out)
{
    fprintf(out, "  %5s %5s %-10s %8s %-12s %10s %9s %10s %18s %6s  %s\n", "rank", "local", "host", "pid",
            "own device", "peak", "peak at", "NCCL", "leaks", "failed", "largest site at the peak");
    for (size_t k = 0; k < job->n_members; k++) {
        const struct cmt_job_member *m = &s->members[job->members[k]];
        char local[24] = "-", dev[128] = "-", peak[32] = "-", at[32] = "-", nccl[32] = "-", lb[32], leaks[48];
        if (m->local_rank >= 0)
            snprintf(local, sizeof local, "%" PRId64, m->local_rank);
        cmt_format_size(m->leak_bytes, lb, sizeof lb);
        snprintf(leaks, sizeof leaks, "%s in %" PRIu64, lb, m->leak_count);
        const struct cmt_job_device *own = m->own >= 0 ? &m->devices[m->own] : NULL;
        if (own) {
            char ordinal[16];
            snprintf(ordinal, sizeof ordinal, "%d", own->ordinal);
            if (strcmp(own->gpu, ordinal) != 0)
                snprintf(dev, sizeof dev, "%d (GPU %s)", own->ordinal, own->gpu);
            else
                snprintf(dev, sizeof dev, "%d", own->ordinal);
            cmt_format_size(own->peak, peak, sizeof peak);
            cmt_format_duration(since_start(job, own->peak_wall_ns), at, sizeof at);
            cmt_format_size(own->peak_by_holder[CMT_HOLDER_NCCL], nccl, sizeof nccl);
        }
        fprintf(out, "  %5" PRId64 " %5s %-10.10s %8" PRIu64 " %-12s %10s %9s %10s %18s %6" PRIu64 "  %s%s\n",
                m->rank, local, cmt_esc(m->host), m->pid, cmt_esc(dev), peak, at, nccl, leaks, m->failed,
                own && own->peak_site[0] ? cmt_esc(own->peak_site) : "-", m->complete ? "" : " (incomplete)");
    }
}

static void imbalance(const struct cmt_job_set *s, const struct cmt_job *job, FILE *out)
{
    const struct cmt_job_imbalance *im = &job->imbalance;
    if (im->n < 2)
        return;
    char mx[32], over[32], mean[32], mn[32];
    cmt_format_size(im->max, mx, sizeof mx);
    cmt_format_size(im->max - im->next, over, sizeof over);
    cmt_format_size(im->mean, mean, sizeof mean);
    cmt_format_size(im->min, mn, sizeof mn);
    fprintf(out,
            "  imbalance: rank %" PRId64 " peaked highest, %s, %s over rank %" PRId64 " (the next highest); "
            "%.2fx the mean %s; lowest rank %" PRId64 ", %s\n",
            s->members[im->max_member].rank, mx, over, s->members[im->next_member].rank, im->max_over_mean, mean,
            s->members[im->min_member].rank, mn);
}

static void peers(const struct cmt_job_set *s, const struct cmt_job *job, FILE *out)
{
    if (!job->n_peers)
        return;
    fputs("  memory on another rank's GPU (each rank should allocate on its own; memory it puts on another's\n"
          "  is that rank's to lose, the classic cause of rank 0 running out first):\n", out);
    for (size_t i = 0; i < job->n_peers; i++) {
        const struct cmt_job_peer *p = &job->peers[i];
        const struct cmt_job_member *m = &s->members[p->member];
        const struct cmt_job_device *d = &m->devices[p->device];
        char pk[32], live[32], at[32];
        cmt_format_size(d->peak, pk, sizeof pk);
        cmt_format_size(d->live_end, live, sizeof live);
        cmt_format_duration(since_start(job, d->peak_wall_ns), at, sizeof at);
        fprintf(out, "    rank %" PRId64 ": %s at most on its device %d (GPU %s of %s, ", m->rank, pk, d->ordinal,
                cmt_esc(d->gpu), cmt_esc(m->host));
        if (p->n_owners) {
            fprintf(out, "rank%s ", p->n_owners == 1 ? "" : "s");
            print_rank_list(out, p->owners, p->n_owners);
            fputs("'s own", out);
        } else {
            fputs("no rank's own", out);
        }
        fprintf(out, ") at %s, %s there at exit%s%s\n", at, live, d->peak_site[0] ? "; " : "", cmt_esc(d->peak_site));
    }
}

/* GPUs that are the own GPU of several ranks (ranks sharing one GPU). */
static void shared(const struct cmt_job_set *s, const struct cmt_job *job, FILE *out)
{
    for (size_t k = 0; k < job->n_members; k++) {
        const struct cmt_job_member *m = &s->members[job->members[k]];
        if (m->own < 0)
            continue;
        int64_t ranks[16];
        size_t n = 0;
        bool first = true;
        for (size_t o = 0; o < job->n_members; o++) {
            const struct cmt_job_member *x = &s->members[job->members[o]];
            if (x->own < 0 || !cmt_job_same_gpu(x, &x->devices[x->own], m, &m->devices[m->own]))
                continue;
            if (o < k)
                first = false;
            if (n < 16 && (n == 0 || ranks[n - 1] != x->rank))
                ranks[n++] = x->rank;
        }
        if (!first || n < 2)
            continue;
        fprintf(out, "  shared:   GPU %s of %s is the own GPU of ranks ", cmt_esc(m->devices[m->own].gpu),
                cmt_esc(m->host));
        print_rank_list(out, ranks, n);
        fputs(": their peaks add up on it\n", out);
    }
}

/* "rank 1 maps 64.0 MiB of rank 0's allocation from export_weights at
 * prog.c:12 (closed)": memory shared between the ranks, matched by the
 * handle's fingerprint. */
static void ipc(const struct cmt_job_set *s, const struct cmt_job *job, FILE *out)
{
    for (size_t i = 0; i < job->n_shares; i++) {
        const struct cmt_job_share *sh = &job->shares[i];
        const struct cmt_job_member *m = &s->members[sh->importer];
        const struct cmt_job_ipc_item *imp = &m->imports[sh->import];
        char sz[96];
        cmt_format_size(imp->bytes, sz, sizeof sz);
        /* A pool pointer's mapping has no size of its own (CUDA gives none):
         * the exporter's allocation says how much is shared. */
        if (!imp->bytes && sh->exporter != SIZE_MAX && s->members[sh->exporter].exports[sh->export].bytes) {
            char e[32];
            cmt_format_size(s->members[sh->exporter].exports[sh->export].bytes, e, sizeof e);
            snprintf(sz, sizeof sz, "%s (the exporter's figure: CUDA gave this mapping no size)", e);
        } else if (!imp->bytes) {
            snprintf(sz, sizeof sz, "memory of unknown size");
        }
        fprintf(out, "  ipc:      rank %" PRId64 " maps %s of ", m->rank, sz);
        if (sh->exporter == SIZE_MAX) {
            fprintf(out, "memory of a process outside these traces (handle %016" PRIx64 ")", imp->fingerprint);
        } else {
            const struct cmt_job_member *x = &s->members[sh->exporter];
            const struct cmt_job_ipc_item *e = &x->exports[sh->export];
            fprintf(out, "rank %" PRId64 "'s allocation%s%s", x->rank, e->site[0] ? " from " : "", cmt_esc(e->site));
        }
        fprintf(out, " (%s)%s%s\n", imp->closed ? "closed" : "never closed: a leak of a mapping",
                imp->site[0] ? "; opened at " : "", cmt_esc(imp->site));
    }
}

static void failures(const struct cmt_job_set *s, const struct cmt_job *job, bool from_summaries, FILE *out)
{
    for (size_t k = 0; k < job->n_members; k++) {
        const struct cmt_job_member *m = &s->members[job->members[k]];
        if (!m->failed)
            continue;
        char sz[32];
        cmt_format_size(m->failed_first_size, sz, sizeof sz);
        fprintf(out, "  failed:   rank %" PRId64 ": %" PRIu64 " failed allocation%s, the first of %s (%s says why)\n",
                m->rank, m->failed, m->failed == 1 ? "" : "s", sz,
                from_summaries ? "`cumemtrace report` on its trace" : "its section above");
    }
}

static void chart(const struct cmt_job_set *s, const struct cmt_job *job, size_t columns, FILE *out)
{
    static const char levels[] = " .:-=+*#";
    if (!columns || !job->imbalance.max)
        return;
    uint64_t *cells = calloc(job->n_members * columns, sizeof *cells);
    if (!cells)
        return;
    cmt_job_timeline(s, job, columns, cells);
    char mx[32], dur[32];
    cmt_format_size(job->imbalance.max, mx, sizeof mx);
    fprintf(out, "  live bytes on each rank's own device, side by side on the job's clock (the highest in each "
                 "column; '#' near %s, the job's highest peak, ' ' nothing):\n", mx);
    for (size_t k = 0; k < job->n_members; k++) {
        fprintf(out, "    rank %4" PRId64 " |", s->members[job->members[k]].rank);
        for (size_t c = 0; c < columns; c++) {
            uint64_t v = cells[k * columns + c];
            size_t level = v ? 1 + (size_t)((unsigned __int128)v * 6 / job->imbalance.max) : 0;
            fputc(levels[level > 7 ? 7 : level], out);
        }
        fputs("|\n", out);
    }
    cmt_format_duration(job->end_wall_ns - job->start_wall_ns, dur, sizeof dur);
    fprintf(out, "              0 s%*s\n", (int)(columns > 3 ? columns - 3 + 1 : 1), dur);
    free(cells);
}

void cmt_job_render_text(const struct cmt_job_set *s, const struct cmt_job_render_options *opt, FILE *out)
{
    for (size_t i = 0; i < s->n_jobs; i++) {
        const struct cmt_job *job = &s->jobs[i];
        header(s, job, opt, out);
        table(s, job, out);
        imbalance(s, job, out);
        shared(s, job, out);
        peers(s, job, out);
        ipc(s, job, out);
        failures(s, job, opt->from_summaries, out);
        chart(s, job, opt->columns, out);
    }
}
