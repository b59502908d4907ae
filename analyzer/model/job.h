/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_JOB_H
#define CUMEMTRACE_ANALYZER_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory_holder.h"
#include "report.h"

/* The job view: the traces of one job of several processes (torchrun,
 * mpirun, srun; one trace per rank) seen as a whole. Each trace's report is
 * summed up in a member (kept after the report is freed, so memory grows
 * with the number of traces, not their events), then the members are
 * grouped by job id (the JOB record's), ordered by rank, put on one clock
 * (CLOCK_REALTIME, which the processes of one host share) and compared:
 * per rank its peak on its own device, when and where; the imbalance; the
 * memory a rank held on another rank's GPU; leaks and failures; a timeline
 * side by side. docs/report.md, "A job of several processes". */

#define CMT_JOB_MAX_DEVICES 16
#define CMT_JOB_CELLS 256 /* a member's own-device timeline, resampled */

struct cmt_job_device {
    int32_t ordinal;
    char gpu[96]; /* the physical GPU on its host: CUDA_VISIBLE_DEVICES's entry, or the ordinal */
    char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the trace's DEVICE record; "" unknown */
    uint64_t peak, peak_wall_ns, live_end;
    uint64_t peak_by_holder[CMT_HOLDER_COUNT]; /* at the device's peak */
    bool has_own_peaks;
    uint64_t own_peak[CMT_HOLDER_COUNT]; /* each holder's own peak on the device */
    char peak_site[512];                 /* the largest call site live at the peak: its site frame; "" none */
};

/* Memory shared with another process, summed up per trace (ipc_report.h):
 * the first CMT_JOB_MAX_IPC exports and imports, enough to match the ranks
 * of a job to each other by the handle's fingerprint. */
#define CMT_JOB_MAX_IPC 32

struct cmt_job_ipc_item {
    uint64_t fingerprint; /* 0: none */
    uint64_t bytes;
    bool closed;          /* imports: closed before exit */
    char site[192];       /* the allocation's site (exports), the open's (imports); "" none */
};

struct cmt_job_member {
    char trace[512];
    bool analysed, complete;
    bool has_job; /* the trace has a JOB record */
    unsigned source; /* enum cmt_job_source */
    int64_t rank, local_rank, world_size, local_world_size; /* -1 unknown */
    char job_id[256];
    char host[128];
    uint64_t pid;
    bool cvd_set;
    char cvd[256]; /* CUDA_VISIBLE_DEVICES as the process saw it */
    uint64_t start_wall_ns, end_wall_ns;
    size_t n_devices;
    struct cmt_job_device devices[CMT_JOB_MAX_DEVICES];
    int own; /* index into devices of the rank's own device; -1 none */
    uint64_t leak_bytes, leak_count;
    uint64_t failed, failed_first_size; /* failed allocations; the first one's size */
    uint64_t events;
    /* Live bytes on the own device over time: the highest in each of
     * n_cells stretches of cell_width ns from cell_origin_wall_ns. */
    size_t n_cells;
    uint64_t cell_origin_wall_ns, cell_width_ns;
    uint64_t cells[CMT_JOB_CELLS];
    size_t n_exports, n_imports;
    uint64_t exports_dropped, imports_dropped; /* past CMT_JOB_MAX_IPC */
    struct cmt_job_ipc_item exports[CMT_JOB_MAX_IPC];
    struct cmt_job_ipc_item imports[CMT_JOB_MAX_IPC];
};

/* Sums up one trace's report (r) into m. */
void cmt_job_member_from_report(const struct cmt_report *r, const struct cmt_analysis *a, const char *trace, struct cmt_job_member *m);
/* A trace that could not be analysed: it takes part in no job. */
void cmt_job_member_failed(const char *trace, struct cmt_job_member *m);

/* The physical GPU of a device ordinal of m: its entry in
 * CUDA_VISIBLE_DEVICES ("?N" past the list's end), or the ordinal itself
 * when the variable is unset. */
void cmt_job_gpu_of(const struct cmt_job_member *m, int32_t ordinal, char *out, size_t len);
/* Two devices of two members are one physical GPU: on one host, with the
 * same UUID when both traces recorded one (so a GPU named by index in one
 * process and by UUID in another still matches), else the same
 * CUDA_VISIBLE_DEVICES entry. */
bool cmt_job_same_gpu(const struct cmt_job_member *a, const struct cmt_job_device *da, const struct cmt_job_member *b,
                      const struct cmt_job_device *db);
/* The rank's own device (index into m->devices, -1 none): the one its local
 * rank names among the visible devices (the first and only one when
 * CUDA_VISIBLE_DEVICES lists one, as srun --gpus-per-task does), when the
 * process used it; else the device where it peaked highest. */
int cmt_job_own_device(const struct cmt_job_member *m);

/* Memory one rank held on a GPU that is another rank's own (or that is not
 * its own, when no rank of the job owns it). */
struct cmt_job_peer {
    size_t member;   /* index into the job's members */
    size_t device;   /* index into that member's devices */
    int64_t owners[8]; /* ranks whose own GPU it is, lowest first */
    size_t n_owners;
};

/* A rank mapping memory another process exported, matched by the handle's
 * fingerprint: exporter SIZE_MAX when no trace of the job exported it. */
struct cmt_job_share {
    size_t importer, import; /* member, index into its imports */
    size_t exporter, export; /* member, index into its exports; SIZE_MAX: none in the job */
};

struct cmt_job_imbalance {
    size_t n;                        /* ranks with an own-device peak */
    size_t max_member, min_member;   /* highest and lowest own-device peak */
    size_t next_member;              /* the second highest (n >= 2) */
    uint64_t max, min, mean, next;
    double max_over_mean;            /* 1.0: balanced */
};

struct cmt_job {
    char job_id[256]; /* "" for traces with a rank but no job id */
    unsigned source;
    int64_t world_size;  /* as the ranks said; -1 unknown or not agreed */
    size_t *members;     /* indices into the members given, by rank */
    size_t n_members;
    int64_t *missing;    /* ranks below world_size without a trace */
    size_t n_missing;
    int64_t *duplicates; /* ranks with more than one trace */
    size_t n_duplicates;
    size_t n_hosts;
    uint64_t start_wall_ns, end_wall_ns;
    struct cmt_job_imbalance imbalance;
    struct cmt_job_peer *peers;
    size_t n_peers;
    struct cmt_job_share *shares; /* by importer rank, in the order it opened */
    size_t n_shares;
};

struct cmt_job_set {
    struct cmt_job *jobs;
    size_t n_jobs;
    const struct cmt_job_member *members;
    size_t n_members;
    const char *holder_key[CMT_HOLDER_COUNT]; /* the holders' names in JSON (memory_holder.h) */
};

/* Groups members into jobs: traces with a rank, by job id; every job with
 * at least two members, or one whose world size is above 1. Returns 0, or
 * -1 when out of memory. */
int cmt_job_set_build(struct cmt_job_set *s, const struct cmt_job_member *members, size_t n);
void cmt_job_set_free(struct cmt_job_set *s);

/* "torchrun", "Open MPI", "MPICH/PMI", "Slurm", "none" (JSON: "torchrun",
 * "openmpi", "pmi", "slurm", "none"). */
const char *cmt_job_source_name(unsigned source);
const char *cmt_job_source_key(unsigned source);

/* The job's timeline: columns stretches of equal wall time from the job's
 * start to its end; out[i * columns + c] the highest live bytes member
 * job->members[i] had on its own device in column c (0 before its trace
 * started or after it ended). out holds n_members * columns values. */
void cmt_job_timeline(const struct cmt_job_set *s, const struct cmt_job *job, size_t columns, uint64_t *out);

/* Where two hosts' clocks may disagree (--clock-tolerance): the job view
 * states it when a job spans several hosts. */
#define CMT_JOB_DEFAULT_CLOCK_TOLERANCE_NS 10000000ull /* 10 ms: NTP on a LAN */

#endif
