#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Validates phases and steps on a real GPU (issue 18, docs/report.md,
# "Phases and steps") with PyTorch's own NVTX ranges (torch.cuda.nvtx), no
# change to the program beyond the ranges:
#
#   1. torch_phases.py under `cumemtrace run` (which names the shim in
#      NVTX_INJECTION64_PATH) with the default caching allocator: the
#      report's phase at the peak must be the step and phase of PyTorch's
#      highest max_memory_reserved() (what the allocator asks the device for);
#   2. the same with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor its own
#      cudaMalloc): the phase at the peak must be the step and phase of the
#      highest max_memory_allocated() (read in run 1: with its cache off
#      PyTorch keeps no statistics); its steps the script's; its growth per
#      step 16 MiB (phases_check.py);
#   3. step times, default allocator, 60 steps: without the profiler, phases
#      off and on (NVTX no-ops); under the profiler, phases off and on. The
#      figure: under the profiler, the median step with phases on within 1%
#      of phases off.
#
#   samples/gpu/run_phases_validation.sh OUTDIR
#
# Everything goes to OUTDIR; summary.txt has one PASS/FAIL/NOTE line per
# check, exit status 0 when none failed. Uses the build in $CMT_BUILD
# (default build/ at the top of the tree; scripts/gpu_bundle.sh's .gpu/build
# works) and $PYTHON (default python3) with PyTorch. About 3 minutes on an
# H200; every run is time-limited (300 s).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build="${CMT_BUILD:-$root/build}"
cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
python="$(command -v "${PYTHON:-python3}" || echo "${PYTHON:-python3}")"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
status=0
checked() { # NAME LOGFILE EXIT-STATUS
  grep -E '^(PASS|FAIL|NOTE|SKIP) ' "$2" >>"$summary"
  if [ "$3" -ne 0 ]; then
    status=1
    grep -q '^FAIL ' "$2" || note "FAIL  $1: the check exited with $3 without a verdict (see $(basename "$2"))"
  fi
}
limited() { # SECONDS COMMAND...
  local secs=$1
  shift
  timeout -k 10 "$secs" "$@"
}

if [ ! -x "$build/analyzer/cumemtrace" ] || [ ! -f "$build/preload/libcumemtrace.so" ]; then
  echo "run_phases_validation: no build in $build; building it (meson setup + compile)"
  (cd "$root" && { [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda-root="$cuda_root"; } &&
    meson compile -C "$build") >"$out/build.log" 2>&1 || {
    echo "run_phases_validation: the build failed, see $out/build.log" >&2
    exit 1
  }
fi
export CUMEMTRACE_SHIM="$build/preload/libcumemtrace.so"
cli="$build/analyzer/cumemtrace"

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,memory.total,memory.used --format=csv,noheader 2>&1
  "$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1
  echo "NVTX_INJECTION64_PATH before: ${NVTX_INJECTION64_PATH:-(unset)}"
  echo "cumemtrace: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'not a git tree')"
} >"$out/environment.txt"
cat "$out/environment.txt"
if ! "$python" -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  note "SKIP  PyTorch with CUDA not available to $python"
  exit 1
fi
# Nsight or another tool already named would keep its place (and the
# report would say NVTX was not recorded): this validation needs it unset.
# PyTorch treats PYTORCH_NO_CUDA_MEMORY_CACHING as set even when empty.
unset NVTX_INJECTION64_PATH PYTORCH_NO_CUDA_MEMORY_CACHING

# NAME ALLOCATOR_ENV MEASURE [REFERENCE]: one profiled run and its check.
profiled() {
  local name=$1 alloc_env=$2 measure=$3 reference=${4:-}
  rm -f "$out/$name".*.bin
  # shellcheck disable=SC2086
  limited 300 env $alloc_env CUMEMTRACE_QUIET=1 "$cli" run -o "$out/$name.%p.bin" -- \
    "$python" "$here/torch_phases.py" --steps 12 --json "$out/$name.figures.json" \
    >"$out/$name.stdout" 2>"$out/$name.stderr"
  local rc=$?
  if [ $rc -ne 0 ]; then
    note "FAIL  $name: torch_phases.py exited with $rc under the profiler (see $name.stderr)"
    status=1
    return
  fi
  local trace
  trace="$(ls "$out/$name".*.bin 2>/dev/null | head -n 1)"
  if [ -z "$trace" ]; then
    note "FAIL  $name: no trace written (see $name.stderr)"
    status=1
    return
  fi
  limited 300 "$cli" report "$trace" >"$out/$name.report.txt" 2>&1
  limited 300 "$cli" report --json "$trace" >"$out/$name.report.json" 2>"$out/$name.report.err"
  "$python" "$here/phases_check.py" "$name" "$out/$name.report.json" "$out/$name.figures.json" "$measure" \
    ${reference:+"$out/$reference.figures.json"} >"$out/$name.check.txt" 2>&1
  rc=$?
  cat "$out/$name.check.txt"
  checked "$name" "$out/$name.check.txt" $rc
  grep -E "phase at the peak|live bytes at step ends|per step:" "$out/$name.report.txt" | head -n 4 | sed 's/^/  /'
}

note "== 1. default caching allocator"
profiled default "-u PYTORCH_NO_CUDA_MEMORY_CACHING" reserved
# PyTorch keeps no statistics with its cache off: the tensors' figures per
# phase come from the run above (the same tensors, max_memory_allocated()).
note "== 2. PYTORCH_NO_CUDA_MEMORY_CACHING=1 (allocations per tensor)"
profiled nocache PYTORCH_NO_CUDA_MEMORY_CACHING=1 allocated default

note "== 3. step times (default allocator, 60 steps, first 10 left out; median)"
# NAME PROFILED(0/1) PHASES(on/off)
timed() {
  local name=$1 prof=$2 phases=$3 flag=""
  [ "$phases" = off ] && flag="--no-phases"
  local cmd=("$python" "$here/torch_phases.py" --steps 60 --warmup 10 $flag --json "$out/$name.figures.json")
  if [ "$prof" = 1 ]; then
    limited 300 env CUMEMTRACE_QUIET=1 "$cli" run -o "$out/$name.%p.bin" -- "${cmd[@]}" >"$out/$name.stdout" 2>&1
  else
    limited 300 "${cmd[@]}" >"$out/$name.stdout" 2>&1
  fi
  local rc=$?
  [ $rc -eq 0 ] || { note "FAIL  $name: exited with $rc (see $name.stdout)"; status=1; }
}
# Interleaved twice, so that a drift of the GPU's clocks affects both sides.
for round in 1 2; do
  timed "bare_off_$round" 0 off
  timed "bare_on_$round" 0 on
  timed "prof_off_$round" 1 off
  timed "prof_on_$round" 1 on
done
"$python" - "$out" <<'PY' | tee -a "$summary"
import json, statistics, sys, os
out = sys.argv[1]
def med(prefix):
    times = []
    for r in (1, 2):
        p = os.path.join(out, f"{prefix}_{r}.figures.json")
        if os.path.exists(p):
            times += json.load(open(p))["step_times_s"][10:]
    return statistics.median(times) if times else float("nan")
bare_off, bare_on, prof_off, prof_on = (med(n) for n in ("bare_off", "bare_on", "prof_off", "prof_on"))
print(f"NOTE  step time (median, ms): no profiler phases off {bare_off * 1e3:.3f}, on {bare_on * 1e3:.3f}; "
      f"profiled phases off {prof_off * 1e3:.3f}, on {prof_on * 1e3:.3f}")
d = (prof_on - prof_off) / prof_off * 100
print(f"{'PASS' if abs(d) <= 1.0 else 'FAIL'}  step time under the profiler, phases on vs off: {d:+.2f}% (target within 1%)")
print(f"NOTE  the profiler itself, phases off: {(prof_off - bare_off) / bare_off * 100:+.2f}% over no profiler")
PY
grep -q '^FAIL' "$summary" && status=1
echo "summary: $summary"
exit $status
