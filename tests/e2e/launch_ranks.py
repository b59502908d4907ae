# SPDX-License-Identifier: MIT
"""A stand-in for torchrun, mpirun and srun on one host: starts N copies of a
program at once with the variables the real launcher gives each process,
waits for all, exits with the first failure's status.

    launch_ranks.py STYLE N PROGRAM [ARGS...]

STYLE: torchrun (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID=none), openmpi
(OMPI_COMM_WORLD_*, PMIX_NAMESPACE), pmi (PMI_RANK, PMI_SIZE,
MPI_LOCALRANKID, MPI_LOCALNRANKS), slurm (SLURM_PROCID, SLURM_LOCALID,
SLURM_NTASKS, SLURM_JOB_ID, SLURM_STEP_ID). LAUNCH_JOB_TAG, when set, goes
into the job's id (MASTER_PORT, the PMIx namespace, the Slurm job), so two
launches are two jobs. LAUNCH_SERIAL=1 starts each rank when the previous
one has exited (a job's clock, tested). LAUNCH_RANK_CVD, when set, is a
';'-separated CUDA_VISIBLE_DEVICES per rank (an index in one, a UUID in
another: one GPU named two ways)."""
import os
import subprocess
import sys


def rank_env(style, rank, n, tag):
    if style == "torchrun":
        return {"RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": n, "LOCAL_WORLD_SIZE": n, "GROUP_RANK": 0,
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": 29500 + tag, "TORCHELASTIC_RUN_ID": "none"}
    if style == "openmpi":
        return {"OMPI_COMM_WORLD_RANK": rank, "OMPI_COMM_WORLD_LOCAL_RANK": rank, "OMPI_COMM_WORLD_SIZE": n,
                "OMPI_COMM_WORLD_LOCAL_SIZE": n, "PMIX_NAMESPACE": f"prterun-sim-{tag}@1", "PMIX_RANK": rank}
    if style == "pmi":
        return {"PMI_RANK": rank, "PMI_SIZE": n, "MPI_LOCALRANKID": rank, "MPI_LOCALNRANKS": n}
    if style == "slurm":
        return {"SLURM_PROCID": rank, "SLURM_LOCALID": rank, "SLURM_NTASKS": n, "SLURM_JOB_ID": 4000 + tag,
                "SLURM_STEP_ID": 0, "SLURM_NODEID": 0}
    raise SystemExit(f"launch_ranks.py: unknown style {style}")


def main():
    style, n, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    tag = int(os.environ.get("LAUNCH_JOB_TAG", "0"))
    serial = os.environ.get("LAUNCH_SERIAL") == "1"
    procs = []
    for rank in range(n):
        env = dict(os.environ)
        # In the asan setup the launcher (python, not ours) runs without leak
        # checks; the ranks, our programs, get the suite's own options back.
        if "LAUNCH_CHILD_ASAN_OPTIONS" in env:
            env["ASAN_OPTIONS"] = env.pop("LAUNCH_CHILD_ASAN_OPTIONS")
        env.update({k: str(v) for k, v in rank_env(style, rank, n, tag).items()})
        cvd = os.environ.get("LAUNCH_RANK_CVD")
        if cvd is not None:
            env["CUDA_VISIBLE_DEVICES"] = cvd.split(";")[rank]
        procs.append(subprocess.Popen(argv, env=env))
        if serial:
            procs[-1].wait()
    status = 0
    for p in procs:
        rc = p.wait()
        if rc and not status:
            status = rc if rc > 0 else 128 - rc
    sys.exit(status)


if __name__ == "__main__":
    main()
