#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of the job view from summaries (issue 30, docs/report.md
# "A job at scale"):
#
#   samples/gpu/run_job_summary_validation.sh shared OUTDIR   # one GPU, two ranks (gloo)
#   samples/gpu/run_job_summary_validation.sh x2 OUTDIR       # two GPUs, NCCL
#
# `cumemtrace run --summary -o OUTDIR/trace.%r.bin -- torchrun --nproc-per-node 2
# train_ddp.py ...` writes one trace and, at exit, one summary per rank; then
# the job view of `report --json` from the summaries must equal the one from
# the traces, field by field ("comparison" and "jobs"), and so must the one
# from `summarize -j 2` of the same traces into another directory (the
# real program's symbols name the sites where the traces were recorded).
#
# Uses the build in $CMT_BUILD (default build/; scripts/gpu_bundle.sh's
# .gpu/build with LD_LIBRARY_PATH=.gpu/lib works) and $PYTHON (default
# python3) with PyTorch. summary.txt has PASS/FAIL/NOTE lines; exit status 0
# when none failed. The torchrun is time-limited (200 s).
set -uo pipefail

if [ $# -ne 2 ] || { [ "$1" != shared ] && [ "$1" != x2 ]; }; then
  echo "usage: $0 shared|x2 OUTDIR" >&2
  exit 2
fi
mode=$1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
py="${PYTHON:-python3}"
summary="$out/summary.txt"
: >"$summary"
if [ ! -x "$cli" ]; then
  echo "run_job_summary_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=2
args=(--backend nccl --stray 64)
[ "$mode" = shared ] && args=(--backend gloo --shared --width 1024 --warmup 2 --steps 10)
port=$((29500 + RANDOM % 1000))
rm -rf "$out"/trace.* "$out/again"
timeout -k 10 200 "$cli" run --summary -o "$out/trace.%r.bin" -- "$py" -m torch.distributed.run \
  --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $port "$here/train_ddp.py" --out "$out/traced" \
  "${args[@]}" >"$out/traced.log" 2>&1
rc=$?
n_traces=$(ls "$out"/trace.*.bin 2>/dev/null | wc -l)
n_sums=$(ls "$out"/trace.*.cmtsum 2>/dev/null | wc -l)
if [ $rc -ne 0 ] || [ "$n_traces" -ne 2 ] || [ "$n_sums" -ne 2 ]; then
  echo "FAIL $mode: run --summary exited with $rc, $n_traces trace(s), $n_sums summaries (see traced.log)" |
    tee -a "$summary"
  tail -n 30 "$out/traced.log" >&2
  exit 1
fi
echo "PASS $mode: run --summary wrote a summary beside each of the 2 traces" >>"$summary"
"$cli" report --json "$out"/trace.0.bin "$out"/trace.1.bin >"$out/traces.json" 2>"$out/report.stderr"
"$cli" report --json "$out" >"$out/summaries.json" 2>>"$out/report.stderr"
"$cli" summarize -j 2 -o "$out/again" "$out"/trace.0.bin "$out"/trace.1.bin 2>>"$out/report.stderr"
"$cli" report --json "$out/again" >"$out/again.json" 2>>"$out/report.stderr"
"$cli" report "$out" >"$out/summaries.txt" 2>>"$out/report.stderr"
"$py" - "$out" "$mode" >>"$summary" <<'PYEOF'
import json, sys
out, mode = sys.argv[1], sys.argv[2]
t = json.load(open(f"{out}/traces.json"))
for name in ("summaries", "again"):
    s = json.load(open(f"{out}/{name}.json"))
    diffs = []
    if s["comparison"] != t["comparison"]:
        diffs.append("comparison")
    for jt, js in zip(t["jobs"], s["jobs"]):
        diffs += [f"jobs.{k}" for k in jt if k != "ranks" and jt[k] != js.get(k)]
        for rt, rs in zip(jt["ranks"], js["ranks"]):
            diffs += [f"rank {rt['rank']}.{k}" for k in rt if rt[k] != rs.get(k)]
    if len(t["jobs"]) != len(s["jobs"]):
        diffs.append("the number of jobs")
    ok = not diffs and t["jobs"]
    print(("PASS " if ok else "FAIL ") + f"{mode}: the job view from {name} equals the one from the traces"
          + (f" (differs: {', '.join(diffs[:20])})" if diffs else "") + ("" if t["jobs"] else " (no job!)"))
    if t["jobs"]:
        for r in s["jobs"][0]["ranks"]:
            print(f"NOTE {mode} ({name}): rank {r['rank']} peak {r['peak_bytes']} B on device {r['own_device']}, "
                  f"NCCL {r['peak_by_holder'].get('nccl')} B, site {r['peak_site']}")
PYEOF
status=0
grep -q '^FAIL' "$summary" && status=1
cat "$summary"
exit $status
