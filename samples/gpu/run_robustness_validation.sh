#!/usr/bin/env bash
# Real-GPU part of issue 8: a multithreaded, forking CUDA program (static and
# dynamic cudart) and a PyTorch DataLoader with worker processes run under the
# profiler with unchanged output and complete traces.
# Usage: samples/gpu/run_robustness_validation.sh OUTDIR   (CMT_BUILD: build dir)
set -uo pipefail
out="${1:?usage: $0 OUTDIR}"
mkdir -p "$out"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
nvcc="${CUDA_ROOT:-/usr/local/cuda}/bin/nvcc"
py="${PYTHON:-python3}"
work="$(mktemp -d)"
summary="$out/robustness_summary.txt"
: >"$summary"
verdict() { echo "$1 $2" | tee -a "$summary"; }

for linkage in static shared; do
  exe="$work/threads_fork_$linkage"
  "$nvcc" -g -O1 -cudart "$linkage" -o "$exe" "$root/samples/threads_fork.cu" >"$out/build_$linkage.log" 2>&1 ||
    { verdict FAIL "threads_fork $linkage: build"; continue; }
  "$exe" >"$out/threads_fork_$linkage.native.txt" 2>&1
  dir="$work/tf_$linkage"; mkdir -p "$dir"
  (cd "$dir" && "$cli" run -o "$dir/t.%p.bin" -- "$exe") >"$out/threads_fork_$linkage.traced.txt" 2>"$out/threads_fork_$linkage.stderr"
  if cmp -s "$out/threads_fork_$linkage.native.txt" "$out/threads_fork_$linkage.traced.txt"; then
    verdict PASS "threads_fork $linkage: output identical"
  else
    verdict FAIL "threads_fork $linkage: output differs"
  fi
  n=$(ls "$dir"/*.bin | wc -l)
  [ "$n" = 1 ] && verdict PASS "threads_fork $linkage: one trace (the CUDA-free child wrote none)" ||
    verdict FAIL "threads_fork $linkage: $n traces"
  "$cli" report --json "$dir"/*.bin >"$out/threads_fork_$linkage.report.json" 2>"$out/threads_fork_$linkage.report.stderr"
  "$py" - "$out/threads_fork_$linkage.report.json" "$linkage" <<'PY' | tee -a "$summary"
import json, sys
rep = json.load(open(sys.argv[1]))
e = rep["events_by_api"]
def n(*names): return sum(e.get(x, 0) for x in names)
got = (n("cudaMalloc", "cuMemAlloc"), n("cudaFree", "cuMemFree"), n("cudaMallocAsync", "cuMemAllocAsync"),
       n("cudaFreeAsync", "cuMemFreeAsync"))
# The runtime's own start-up allocations (static cudart: driver-level) may add
# to the plain counts; the sample's own are exact lower bounds, async exact.
ok = got[2] == 800 and got[3] == 800 and got[0] >= 204 and got[1] >= 204 and rep["clean_exit"]
print(("PASS" if ok else "FAIL"), f"threads_fork {sys.argv[2]}: events {e} clean_exit {rep['clean_exit']} "
      f"leaks {rep['leaks']['count']} unmatched {rep['unmatched_frees']}")
PY
done

if "$py" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  "$py" "$root/samples/gpu/torch_dataloader.py" >"$out/dataloader.native.txt" 2>"$out/dataloader.native.stderr"
  dir="$work/dl"; mkdir -p "$dir"
  (cd "$dir" && "$cli" run -o "$dir/t.%p.bin" -- "$py" "$root/samples/gpu/torch_dataloader.py") \
    >"$out/dataloader.traced.txt" 2>"$out/dataloader.traced.stderr"
  if cmp -s "$out/dataloader.native.txt" "$out/dataloader.traced.txt"; then
    verdict PASS "dataloader: losses identical"
  else
    verdict FAIL "dataloader: output differs"
  fi
  ls "$dir" >"$out/dataloader.traces.txt"
  for t in "$dir"/*.bin; do
    "$cli" report --json --no-symbols "$t" >"$out/dataloader.$(basename "$t").json" 2>>"$out/dataloader.report.stderr"
  done
  "$py" - "$out" <<'PY' | tee -a "$summary"
import glob, json, sys
reps = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/dataloader.t.*.json")]
main = [r for r in reps if r["events"] > 0]
ok = len(main) >= 1 and all(r["clean_exit"] for r in reps)
print(("PASS" if ok else "FAIL"), f"dataloader: {len(reps)} traces, events {[r['events'] for r in reps]}, "
      f"clean {[r['clean_exit'] for r in reps]}, devices {[ [d['peak_bytes'] for d in r['devices']] for r in reps]}")
PY
else
  verdict SKIP "dataloader: no PyTorch with CUDA"
fi
cat "$summary"
