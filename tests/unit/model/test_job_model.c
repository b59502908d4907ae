/* SPDX-License-Identifier: MIT */
/* The job view's model (analyzer/model/job.h) on members made by hand:
 * grouping, order, own devices, GPUs, memory on another rank's GPU, the
 * imbalance, missing and duplicate ranks, the timeline on the job's clock. */
#include "job.h"
#include "job_report.h"
#include "test_util.h"

#define MiB (1024ull * 1024ull)
#define SEC 1000000000ull

static struct cmt_job_member member(int64_t rank, int64_t local, int64_t world, const char *job, const char *host,
                                    const char *cvd)
{
    struct cmt_job_member m;
    cmt_job_member_failed("t.bin", &m);
    m.analysed = m.complete = m.has_job = true;
    m.source = CMT_JOB_TORCH;
    m.rank = rank;
    m.local_rank = local;
    m.world_size = world;
    snprintf(m.job_id, sizeof m.job_id, "%s", job);
    snprintf(m.host, sizeof m.host, "%s", host);
    if (cvd) {
        m.cvd_set = true;
        snprintf(m.cvd, sizeof m.cvd, "%s", cvd);
    }
    return m;
}

static void device(struct cmt_job_member *m, int32_t ordinal, uint64_t peak, uint64_t peak_at)
{
    struct cmt_job_device *d = &m->devices[m->n_devices++];
    d->ordinal = ordinal;
    cmt_job_gpu_of(m, ordinal, d->gpu, sizeof d->gpu);
    d->peak = peak;
    d->peak_wall_ns = peak_at;
    m->own = cmt_job_own_device(m);
}

static void test_gpus_and_own_devices(void)
{
    struct cmt_job_member m = member(1, 1, 2, "j", "h", NULL);
    char gpu[32];
    cmt_job_gpu_of(&m, 3, gpu, sizeof gpu);
    CHECK_STR(gpu, "3");
    m = member(1, 1, 2, "j", "h", "2,3");
    cmt_job_gpu_of(&m, 1, gpu, sizeof gpu);
    CHECK_STR(gpu, "3");
    cmt_job_gpu_of(&m, 2, gpu, sizeof gpu);
    CHECK_STR(gpu, "?2");
    m = member(1, 1, 2, "j", "h", "GPU-aaaa,GPU-bbbb");
    cmt_job_gpu_of(&m, 0, gpu, sizeof gpu);
    CHECK_STR(gpu, "GPU-aaaa");

    /* torchrun: LOCAL_RANK's device, even when another peaked higher. */
    m = member(1, 1, 2, "j", "h", NULL);
    device(&m, 0, 100 * MiB, 0);
    device(&m, 1, 10 * MiB, 0);
    CHECK_EQ_U64(m.own, 1);
    /* srun --gpus-per-task=1: one visible device, ordinal 0, whatever the local rank. */
    m = member(3, 1, 4, "j", "h", "5");
    device(&m, 0, 10 * MiB, 0);
    CHECK_EQ_U64(m.own, 0);
    CHECK_STR(m.devices[0].gpu, "5");
    /* Two ranks on one GPU: rank 1 never used device 1, its own is where it peaked. */
    m = member(1, 1, 2, "j", "h", NULL);
    device(&m, 0, 10 * MiB, 0);
    CHECK_EQ_U64(m.own, 0);
    m = member(1, -1, 2, "j", "h", NULL);
    CHECK_EQ_U64(m.own, (uint64_t)-1);
}

static void test_job(void)
{
    struct cmt_job_member ms[7];
    /* Given out of order; rank 2 leaves a 2 MiB tensor on rank 0's GPU. */
    ms[0] = member(2, 2, 4, "torch:a:1", "h", NULL);
    device(&ms[0], 2, 82 * MiB, 10 * SEC + 9000);
    device(&ms[0], 0, 2 * MiB, 10 * SEC + 500);
    ms[0].start_wall_ns = 10 * SEC + 100;
    ms[0].end_wall_ns = 10 * SEC + 10000;
    ms[1] = member(0, 0, 4, "torch:a:1", "h", NULL);
    device(&ms[1], 0, 32 * MiB, 10 * SEC + 2000);
    ms[1].start_wall_ns = 10 * SEC;
    ms[1].end_wall_ns = 10 * SEC + 4000;
    ms[2] = member(0, 0, 4, "torch:a:1", "h", NULL); /* rank 0 again */
    device(&ms[2], 0, 32 * MiB, 10 * SEC + 2000);
    ms[2].start_wall_ns = 10 * SEC;
    ms[2].end_wall_ns = 10 * SEC + 4000;
    /* Another job, and traces in none. */
    ms[3] = member(0, 0, 2, "torch:b:2", "h", NULL);
    ms[4] = member(-1, -1, -1, "", "h", NULL);
    cmt_job_member_failed("bad.bin", &ms[5]);
    ms[6] = member(1, 1, 4, "torch:a:1", "other", NULL); /* rank 1, another host */
    device(&ms[6], 1, 57 * MiB, 10 * SEC + 3000);
    device(&ms[6], 0, 1 * MiB, 10 * SEC + 3000); /* GPU 0 of "other": no rank's own */
    ms[6].start_wall_ns = 10 * SEC + 50;
    ms[6].end_wall_ns = 10 * SEC + 8000;
    ms[1].cells[0] = 16 * MiB;
    ms[1].cells[1] = 32 * MiB;
    ms[1].n_cells = 2;
    ms[1].cell_origin_wall_ns = 10 * SEC;
    ms[1].cell_width_ns = 2000;
    ms[0].cells[0] = 82 * MiB;
    ms[0].n_cells = 1;
    ms[0].cell_origin_wall_ns = 10 * SEC + 9000;
    ms[0].cell_width_ns = 1000;

    struct cmt_job_set s;
    CHECK(cmt_job_set_build(&s, ms, 7) == 0);
    /* torch:b:2 has one trace but a world size of 2: a job with rank 1 missing. */
    CHECK_EQ_U64(s.n_jobs, 2);
    const struct cmt_job *job = &s.jobs[0];
    CHECK_STR(job->job_id, "torch:a:1");
    CHECK_EQ_U64(job->n_members, 4);
    CHECK_EQ_U64(job->members[0], 1); /* rank 0 as given first */
    CHECK_EQ_U64(job->members[1], 2); /* rank 0 again */
    CHECK_EQ_U64(job->members[2], 6);
    CHECK_EQ_U64(job->members[3], 0);
    CHECK_EQ_U64(job->world_size, 4);
    CHECK_EQ_U64(job->n_hosts, 2);
    CHECK_EQ_U64(job->n_duplicates, 1);
    CHECK_EQ_U64(job->duplicates[0], 0);
    CHECK_EQ_U64(job->n_missing, 1);
    CHECK_EQ_U64(job->missing[0], 3);
    CHECK_EQ_U64(job->start_wall_ns, 10 * SEC);
    CHECK_EQ_U64(job->end_wall_ns, 10 * SEC + 10000);
    const struct cmt_job_imbalance *im = &job->imbalance;
    CHECK_EQ_U64(im->n, 4);
    CHECK_EQ_U64(im->max, 82 * MiB);
    CHECK_EQ_U64(im->max_member, 0);
    CHECK_EQ_U64(im->next, 57 * MiB);
    CHECK_EQ_U64(im->next_member, 6);
    CHECK_EQ_U64(im->min, 32 * MiB);
    CHECK_EQ_U64(im->min_member, 1);
    CHECK_EQ_U64(im->mean, (32 + 32 + 57 + 82) * MiB / 4);
    CHECK_EQ_U64(job->n_peers, 2);
    /* Rank 1's memory on its host's GPU 0, which no rank there owns. */
    CHECK_EQ_U64(job->peers[0].member, 6);
    CHECK_EQ_U64(job->peers[0].n_owners, 0);
    /* Rank 2's tensor on GPU 0 of h: rank 0's (named once for its two traces). */
    CHECK_EQ_U64(job->peers[1].member, 0);
    CHECK_EQ_U64(job->peers[1].device, 1);
    CHECK_EQ_U64(job->peers[1].n_owners, 1);
    CHECK_EQ_U64(job->peers[1].owners[0], 0);

    const struct cmt_job *b = &s.jobs[1];
    CHECK_STR(b->job_id, "torch:b:2");
    CHECK_EQ_U64(b->n_members, 1);
    CHECK_EQ_U64(b->n_missing, 1);
    CHECK_EQ_U64(b->missing[0], 1);
    CHECK_EQ_U64(b->imbalance.n, 0);

    /* Ten columns of 1000 ns from the job's start. */
    uint64_t cells[4 * 10];
    cmt_job_timeline(&s, job, 10, cells);
    CHECK_EQ_U64(cells[0 * 10 + 0], 16 * MiB);
    CHECK_EQ_U64(cells[0 * 10 + 1], 16 * MiB);
    CHECK_EQ_U64(cells[0 * 10 + 2], 32 * MiB);
    CHECK_EQ_U64(cells[0 * 10 + 3], 32 * MiB);
    CHECK_EQ_U64(cells[0 * 10 + 4], 0);
    for (size_t c = 0; c < 9; c++)
        CHECK_EQ_U64(cells[3 * 10 + c], 0);
    CHECK_EQ_U64(cells[3 * 10 + 9], 82 * MiB);

    /* Two hosts: the clock line states the tolerance. */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    struct cmt_job_render_options opt = {0, 5000000};
    cmt_job_render_text(&s, &opt, out);
    fclose(out);
    CHECK(strstr(text, "Job torch:a:1 (torchrun): 4 ranks of 4, 2 hosts\n"));
    CHECK(strstr(text, "  clock:    the ranks' traces merged by CLOCK_REALTIME across 2 hosts, whose clocks are taken "
                       "to agree within 5.0 ms (--clock-tolerance)"));
    CHECK(strstr(text, "  missing:  no trace of rank 3 (world size 4)\n"));
    CHECK(strstr(text, "  twice:    more than one trace of rank 0 "));
    CHECK(strstr(text, "    rank 1: 1.0 MiB at most on its device 0 (GPU 0 of other, no rank's own)"));
    CHECK(strstr(text, "    rank 2: 2.0 MiB at most on its device 0 (GPU 0 of h, rank 0's own)"));
    free(text);
    cmt_job_set_free(&s);
}

int main(void)
{
    test_gpus_and_own_devices();
    test_job();
    CHECK_STR(cmt_job_source_key(CMT_JOB_SLURM), "slurm");
    CHECK_STR(cmt_job_source_name(CMT_JOB_OPENMPI), "Open MPI");
    return 0;
}
