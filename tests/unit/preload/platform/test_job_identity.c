/* SPDX-License-Identifier: MIT */
/* Who a process is in a job, from each launcher's variables (job_identity.h). */
#include "job_identity.h"
#include "test_util.h"

static const char *const all_vars[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMIX_RANK",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
    "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
};

static void clear(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
}

static void check_identity(const struct cmt_job_identity *id, enum cmt_job_source source, int64_t rank,
                           int64_t local_rank, int64_t size, int64_t local_size, const char *job)
{
    CHECK_EQ_U64(id->source, source);
    CHECK_EQ_U64(id->rank, rank);
    CHECK_EQ_U64(id->local_rank, local_rank);
    CHECK_EQ_U64(id->world_size, size);
    CHECK_EQ_U64(id->local_world_size, local_size);
    CHECK_STR(id->job_id, job);
}

int main(void)
{
    struct cmt_job_identity id;
    clear();
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_NONE, -1, -1, -1, -1, "");
    CHECK_STR(id.rank_text, "");
    CHECK_EQ_U64(id.nvars, 0);

    /* torchrun --nproc-per-node 2 (no --rdzv-id: the run is "none"). */
    setenv("RANK", "1", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_TORCH, 1, 1, 2, 2, "torch:127.0.0.1:29500");
    CHECK_STR(id.rank_text, "1");
    CHECK_EQ_U64(id.nvars, 8);
    CHECK_STR(id.vars[0].name, "RANK");
    CHECK_STR(cmt_job_identity_var(&id, "MASTER_PORT"), "29500");
    /* Set but empty is recorded (it hides every device). */
    CHECK_STR(cmt_job_identity_var(&id, "CUDA_VISIBLE_DEVICES"), "");
    CHECK(cmt_job_identity_var(&id, "SLURM_PROCID") == NULL);
    /* A named rendezvous wins over the address. */
    setenv("TORCHELASTIC_RUN_ID", "job42", 1);
    cmt_job_identity_read(&id);
    CHECK_STR(id.job_id, "torchelastic:job42");

    /* torchrun under srun: torchrun's rank, the run named by torchrun. */
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_LOCALID", "0", 1);
    setenv("SLURM_NTASKS", "2", 1);
    setenv("SLURM_JOB_ID", "777", 1);
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_TORCH, 1, 1, 2, 2, "torchelastic:job42");

    /* srun alone. */
    clear();
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_JOB_ID", "777", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_SLURM, 5, 1, 8, -1, "slurm:777.3");
    CHECK_STR(id.rank_text, "5");

    /* Open MPI's mpirun (PMIx namespace), inside the Slurm allocation. */
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    setenv("PMIX_NAMESPACE", "prterun-host-1234@1", 1);
    unsetenv("SLURM_JOB_ID");
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_OPENMPI, 3, 1, 4, 2, "pmix:prterun-host-1234@1");

    /* MPICH's hydra (PMI), no job id of its own. */
    clear();
    setenv("PMI_RANK", "2", 1);
    setenv("PMI_SIZE", "4", 1);
    setenv("MPI_LOCALRANKID", "0", 1);
    setenv("MPI_LOCALNRANKS", "2", 1);
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_PMI, 2, 0, 4, 2, "");

    /* Not a number: not a rank (it would end up in a file name); the next
     * launcher's is taken. */
    setenv("RANK", "1; rm -rf /", 1);
    cmt_job_identity_read(&id);
    check_identity(&id, CMT_JOB_PMI, 2, 0, 4, 2, "");
    setenv("RANK", "123456789012", 1); /* 12 digits */
    cmt_job_identity_read(&id);
    CHECK_EQ_U64(id.source, CMT_JOB_PMI);
    setenv("RANK", "007", 1);
    cmt_job_identity_read(&id);
    CHECK_EQ_U64(id.rank, 7);
    CHECK_STR(id.rank_text, "7");

    /* Long values are cut, never overflow. */
    char longv[600];
    memset(longv, 'x', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    setenv("CUDA_VISIBLE_DEVICES", longv, 1);
    cmt_job_identity_read(&id);
    CHECK_EQ_U64(strlen(cmt_job_identity_var(&id, "CUDA_VISIBLE_DEVICES")), CMT_JOB_TEXT_MAX - 1);
    return 0;
}
