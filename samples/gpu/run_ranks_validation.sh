#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of the job view (issue 21, docs/report.md "A job of
# several processes"):
#
#   samples/gpu/run_ranks_validation.sh shared OUTDIR   # one GPU
#   samples/gpu/run_ranks_validation.sh nccl1 OUTDIR    # one GPU, NCCL
#   samples/gpu/run_ranks_validation.sh x2 OUTDIR       # two GPUs
#
# shared: `cumemtrace run -- torchrun --nproc-per-node 2 train_ddp.py --shared
#   --backend gloo`: two ranks sharing GPU 0 (NCCL refuses two ranks on one
#   GPU, "Duplicate GPU detected"; gloo keeps DDP, its gradient buckets and
#   its allreduce, the latter staged through host memory), one trace per rank
#   (trace.%r.bin); the job report's per-rank PyTorch peaks equal each rank's
#   torch.cuda.max_memory_reserved() to the byte (ranks_check.py).
# nccl1: one rank with NCCL on GPU 0 (`--nproc-per-node 1`): NCCL still
#   sets up its communicator and DDP still all-reduces through it, so NCCL's
#   own device memory is there to attribute on a single GPU; then step times
#   with and without the profiler.
# x2: the same with NCCL, one GPU per rank, NCCL_NVLS_ENABLE=0, and rank 1
#   keeping a 64 MiB tensor on cuda:0: NCCL's memory attributed per rank, the
#   stray tensor named as memory on rank 0's GPU, then step times of the run
#   with and without the profiler (ROUNDS, default 2, interleaved).
#
# Uses the build in $CMT_BUILD (default build/; scripts/gpu_bundle.sh's
# .gpu/build with LD_LIBRARY_PATH=.gpu/lib works) and $PYTHON (default
# python3) with PyTorch. summary.txt has PASS/FAIL/NOTE lines; exit status 0
# when none failed. Each torchrun is time-limited (200 s).
set -uo pipefail

if [ $# -ne 2 ] || { [ "$1" != shared ] && [ "$1" != nccl1 ] && [ "$1" != x2 ]; }; then
  echo "usage: $0 shared|nccl1|x2 OUTDIR" >&2
  exit 2
fi
mode=$1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
py="${PYTHON:-python3}"
rounds="${ROUNDS:-2}"
summary="$out/summary.txt"
: >"$summary"
status=0
if [ ! -x "$cli" ]; then
  echo "run_ranks_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=2
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "NOTE $mode: $gpus GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)" >>"$summary"
if [ "$mode" = x2 ] && [ "$gpus" -lt 2 ]; then
  echo "FAIL x2: needs two GPUs, found $gpus" | tee -a "$summary"
  exit 1
fi
stray=0
args=(--backend nccl)
if [ "$mode" = shared ]; then
  # gloo reduces 4 bytes per parameter through host memory each step: a
  # smaller model keeps the run well inside its time limit.
  args=(--backend gloo --shared --width 1024 --warmup 2 --steps 10)
elif [ "$mode" = x2 ]; then
  stray=64
  args+=(--stray $stray)
fi
nproc=2
[ "$mode" = nccl1 ] && nproc=1
port=$((29500 + RANDOM % 1000))
torchrun=("$py" -m torch.distributed.run --nproc-per-node $nproc --master-addr 127.0.0.1)

# The traced run: one trace per rank.
rm -f "$out"/trace.*.bin
timeout -k 10 200 "$cli" run -o "$out/trace.%r.bin" -- "${torchrun[@]}" --master-port $port \
  "$here/train_ddp.py" --out "$out/traced" "${args[@]}" >"$out/traced.log" 2>&1
rc=$?
ls "$out"/trace.*.bin >"$out/traces.txt" 2>/dev/null
if [ $rc -ne 0 ] || [ "$(wc -l <"$out/traces.txt")" -ne $nproc ]; then
  echo "FAIL $mode: the traced torchrun exited with $rc, $(wc -l <"$out/traces.txt") trace(s) (see traced.log)" |
    tee -a "$summary"
  tail -n 30 "$out/traced.log" >&2
  exit 1
fi
traces=()
for r in $(seq 0 $((nproc - 1))); do traces+=("$out/trace.$r.bin"); done
"$cli" report --chart-width 64 "${traces[@]}" >"$out/report.txt" 2>"$out/report.stderr"
"$cli" report --json "${traces[@]}" >"$out/report.json" 2>>"$out/report.stderr"
sed -n '/^Job /,$p' "$out/report.txt" >"$out/job.txt"
"$py" "$here/ranks_check.py" "$mode" "$out/traced" "$out/report.json" $nproc $stray >>"$summary" 2>&1 || status=1

# Step times with and without the profiler, interleaved.
if [ "$mode" != shared ]; then
  for r in $(seq 1 "$rounds"); do
    port=$((port + 1))
    timeout -k 10 200 "${torchrun[@]}" --master-port $port "$here/train_ddp.py" --out "$out/native.$r" \
      "${args[@]}" >"$out/native.$r.log" 2>&1
    port=$((port + 1))
    timeout -k 10 200 "$cli" run -o "$out/time.%r.bin" -- "${torchrun[@]}" --master-port $port \
      "$here/train_ddp.py" --out "$out/profiled.$r" "${args[@]}" >"$out/profiled.$r.log" 2>&1
    rm -f "$out"/time.*.bin
  done
  "$py" - "$out" "$rounds" $nproc >>"$summary" <<'PYEOF'
import json, statistics, sys
out, rounds, nproc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for rank in range(nproc):
    def med(kind):
        v = []
        for r in range(1, rounds + 1):
            try:
                v.append(json.load(open(f"{out}/{kind}.{r}.rank{rank}.json"))["median_step_ms"])
            except (OSError, ValueError, KeyError):
                pass
        return v
    n, p = med("native"), med("profiled")
    if not n or not p:
        print(f"FAIL step time rank {rank}: runs missing")
        continue
    print(f"NOTE step time rank {rank}: native {['%.2f' % x for x in n]} ms, profiled {['%.2f' % x for x in p]} ms, "
          f"ratio of medians {statistics.median(p) / statistics.median(n):.3f}")
PYEOF
fi
grep -q '^FAIL' "$summary" && status=1
cat "$summary"
exit $status
