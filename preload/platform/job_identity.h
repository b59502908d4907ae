/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_JOB_IDENTITY_H
#define CUMEMTRACE_PRELOAD_JOB_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* Who this process is in a job of several processes, from the variables the
 * launchers users already have set in each process they start (torchrun and
 * torch.distributed, Open MPI's mpirun, MPICH and Intel MPI's PMI, Slurm's
 * srun). Read once, when the trace is created, into the JOB record
 * (format.h). The rank comes from the first of RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK, SLURM_PROCID that holds a number; local rank and sizes come from
 * the same launcher's variables, so torchrun started by srun is torchrun's
 * rank, not Slurm's task. */

#define CMT_JOB_TEXT_MAX 256u

struct cmt_job_var {
    const char *name;            /* a string constant */
    char value[CMT_JOB_TEXT_MAX]; /* cut at CMT_JOB_TEXT_MAX - 1 bytes */
};

struct cmt_job_identity {
    enum cmt_job_source source;
    int64_t rank, local_rank, world_size, local_world_size; /* -1 unknown */
    char rank_text[24];                                     /* "" unknown: what %r expands to */
    /* The job the process belongs to, prefixed by its scheme so two schemes
     * never collide: "torchelastic:RUN_ID", "torch:ADDR:PORT",
     * "slurm:JOB.STEP", "pmix:NAMESPACE", "ompi:JOBID"; "" none. */
    char job_id[CMT_JOB_TEXT_MAX];
    size_t nvars;
    struct cmt_job_var vars[CMT_JOB_MAX_VARS]; /* set variables, in the order of the list in job_identity.c */
};

/* Reads the environment (secure_getenv) into *id. */
void cmt_job_identity_read(struct cmt_job_identity *id);

/* The value of a variable that was set, or NULL. */
const char *cmt_job_identity_var(const struct cmt_job_identity *id, const char *name);

#endif
