/* SPDX-License-Identifier: MIT */
#include "job_identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every variable recorded when set, launchers' and CUDA's. */
static const char *const recorded_vars[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMIX_RANK",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
};
_Static_assert(sizeof recorded_vars / sizeof recorded_vars[0] <= CMT_JOB_MAX_VARS, "JOB record variables");

/* One launcher's names: rank, local rank, world size, local world size. */
struct launcher {
    enum cmt_job_source source;
    const char *rank, *local_rank, *size, *local_size;
};

static const struct launcher launchers[] = {
    {CMT_JOB_TORCH, "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
    {CMT_JOB_OPENMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {CMT_JOB_PMI, "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "MPI_LOCALNRANKS"},
    {CMT_JOB_SLURM, "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", NULL},
};

/* A number of at most 11 digits, or -1: a rank ends up in a file name. */
static int64_t number(const char *v)
{
    if (!v || !*v || strlen(v) >= 12 || strspn(v, "0123456789") != strlen(v))
        return -1;
    return strtoll(v, NULL, 10);
}

static const char *env(const char *name)
{
    return name ? secure_getenv(name) : NULL;
}

static const char *set(const char *name)
{
    const char *v = env(name);
    return v && *v ? v : NULL;
}

static void job_id(struct cmt_job_identity *id)
{
    const char *run = set("TORCHELASTIC_RUN_ID"), *addr = set("MASTER_ADDR"), *port = set("MASTER_PORT");
    const char *slurm = set("SLURM_JOB_ID"), *step = set("SLURM_STEP_ID");
    const char *pmix = set("PMIX_NAMESPACE"), *ompi = set("OMPI_MCA_ess_base_jobid");
    /* torchrun without --rdzv-id names every run "none": its rendezvous
     * address is what tells one launch from another then. */
    if (run && strcmp(run, "none") != 0)
        snprintf(id->job_id, sizeof id->job_id, "torchelastic:%s", run);
    else if (addr && port)
        snprintf(id->job_id, sizeof id->job_id, "torch:%s:%s", addr, port);
    else if (slurm)
        snprintf(id->job_id, sizeof id->job_id, "slurm:%s%s%s", slurm, step ? "." : "", step ? step : "");
    else if (pmix)
        snprintf(id->job_id, sizeof id->job_id, "pmix:%s", pmix);
    else if (ompi)
        snprintf(id->job_id, sizeof id->job_id, "ompi:%s", ompi);
    else
        id->job_id[0] = '\0';
}

void cmt_job_identity_read(struct cmt_job_identity *id)
{
    memset(id, 0, sizeof *id);
    id->rank = id->local_rank = id->world_size = id->local_world_size = -1;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        const struct launcher *l = &launchers[i];
        int64_t rank = number(env(l->rank));
        if (rank < 0)
            continue;
        id->source = l->source;
        id->rank = rank;
        snprintf(id->rank_text, sizeof id->rank_text, "%lld", (long long)rank);
        id->local_rank = number(env(l->local_rank));
        id->world_size = number(env(l->size));
        id->local_world_size = number(env(l->local_size));
        break;
    }
    job_id(id);
    for (size_t i = 0; i < sizeof recorded_vars / sizeof recorded_vars[0]; i++) {
        const char *v = env(recorded_vars[i]);
        if (!v)
            continue; /* set but empty is recorded: CUDA_VISIBLE_DEVICES= hides every device */
        struct cmt_job_var *out = &id->vars[id->nvars++];
        out->name = recorded_vars[i];
        snprintf(out->value, sizeof out->value, "%s", v);
    }
}

const char *cmt_job_identity_var(const struct cmt_job_identity *id, const char *name)
{
    for (size_t i = 0; i < id->nvars; i++)
        if (strcmp(id->vars[i].name, name) == 0)
            return id->vars[i].value;
    return NULL;
}
