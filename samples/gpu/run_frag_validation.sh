#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Validates the out-of-memory and fragmentation forensics on a real GPU
# (issue 5, docs/fragmentation.md):
#
#   1. oom_verdicts.cu, built with plain nvcc: a failure of each verdict where
#      the GPU allows it (capacity twice, fragmentation, pool caching, another
#      process holding memory, a caching allocator's release and retry), each
#      report's verdict checked (frag_check.py); `cumemtrace frag` of the
#      fragmentation run;
#   2. what a device sample costs (bench/sample_cost.c, natively and under the
#      shim with CUMEMTRACE_SAMPLE_MS 0, 100 and 1) and the device memory a
#      bare context takes (the allowance);
#   3. PyTorch with growing input shapes under the default caching allocator
#      and with expandable_segments (torch_varying_shapes.py).
#
#   samples/gpu/run_frag_validation.sh OUTDIR
#
# Everything goes to OUTDIR; summary.txt has one PASS/FAIL/NOTE/SKIP line per
# check, exit status 0 when none failed. A failing part never stops the
# others, and every program runs under a time limit (a hang is a FAIL, not a
# stuck GPU). Uses the build in $CMT_BUILD (default build/ at the top of the
# tree; built with meson if missing; scripts/gpu_bundle.sh's .gpu/build
# works), nvcc from $CUDA_ROOT (default /usr/local/cuda), gcc, and $PYTHON
# (default python3) with PyTorch for part 3. About 2 minutes on an H200, 6 at
# most; GPU 0 must be otherwise idle (part 1 fills it).
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
# Appends a checker's PASS/FAIL/NOTE lines to the summary; a checker that
# failed without saying so (a crash, a report that is not JSON) is a FAIL too.
checked() { # NAME LOGFILE EXIT-STATUS
  grep -E '^(PASS|FAIL|NOTE|SKIP) ' "$2" >>"$summary"
  if [ "$3" -ne 0 ]; then
    status=1
    grep -q '^FAIL ' "$2" || note "FAIL  $1: the check exited with $3 without a verdict (see $(basename "$2"))"
  fi
}
# Runs a command for at most SECONDS (then SIGTERM, SIGKILL 10 s later);
# returns its status, 124 when it timed out.
limited() { # SECONDS COMMAND...
  local secs=$1
  shift
  timeout -k 10 "$secs" "$@"
}

if [ ! -x "$build/analyzer/cumemtrace" ] || [ ! -f "$build/preload/libcumemtrace.so" ]; then
  echo "run_frag_validation: no build in $build; building it (meson setup + compile)"
  (cd "$root" && { [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda-root="$cuda_root"; } &&
    meson compile -C "$build") >"$out/build.log" 2>&1 || {
    echo "run_frag_validation: the build failed, see $out/build.log" >&2
    exit 1
  }
fi
export CMT_SHIM="$build/preload/libcumemtrace.so"
export CMT_CLI="$build/analyzer/cumemtrace"

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,memory.total,memory.used --format=csv,noheader 2>&1
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1
  "$cuda_root/bin/nvcc" --version 2>&1 | tail -n 1
  echo "cumemtrace: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'not a git tree')"
} >"$out/environment.txt"
cat "$out/environment.txt"

# Runs oom_verdicts SCENARIO under the shim, writes SCENARIO.{stdout,bin,report.txt,report.json}.
traced() {
  local s=$1
  rm -f "$out/$s".*.bin
  limited 120 env LD_PRELOAD="$CMT_SHIM" CUMEMTRACE_QUIET=1 CUMEMTRACE_OUTPUT="$out/$s.%p.bin" \
    "$out/oom_verdicts" "$s" >"$out/$s.stdout" 2>"$out/$s.stderr"
  local rc=$?
  if [ $rc -eq 124 ]; then
    note "FAIL  $s: still running after 120 s, killed (see $s.stderr)"
    status=1
  fi
  local trace
  trace="$(ls "$out/$s".*.bin 2>/dev/null | head -n 1)"
  if [ -z "$trace" ]; then
    note "FAIL  $s: no trace written (see $s.stderr)"
    status=1
    return 1
  fi
  limited 120 "$CMT_CLI" report "$trace" >"$out/$s.report.txt" 2>&1
  limited 120 "$CMT_CLI" report --json "$trace" >"$out/$s.report.json" 2>"$out/$s.report.err"
  "$python" "$here/frag_check.py" "$s" "$out/$s.stdout" "$out/$s.report.json" >"$out/$s.check.txt" 2>&1
  rc=$?
  cat "$out/$s.check.txt"
  checked "$s" "$out/$s.check.txt" $rc
}

# --- 1. each verdict ---------------------------------------------------------
note "== oom_verdicts.cu, built with plain nvcc (static cudart)"
# CMT_NVCC_FLAGS: extra nvcc flags (the suite's authors try the script on the
# simulated device with "-cudart shared -L<sim dir>").
# shellcheck disable=SC2086
if "$cuda_root/bin/nvcc" -g -O1 -lineinfo ${CMT_NVCC_FLAGS:-} -o "$out/oom_verdicts" "$here/oom_verdicts.cu" \
    >"$out/nvcc.log" 2>&1; then
  for s in capacity_large capacity_live fragmentation caching retry; do
    traced "$s"
  done
  # Another process holds 70% of the free memory, untraced, while "other" runs.
  rm -f "$out/holder.ready"
  # timeout itself (not a function: $! must be the process that gets the
  # kill below and passes it on) limits it in case this script is killed.
  timeout -k 10 150 "$out/oom_verdicts" hold 0.7 120 "$out/holder.ready" >"$out/holder.stdout" 2>&1 &
  holder=$!
  for _ in $(seq 1 300); do [ -e "$out/holder.ready" ] && break; sleep 0.1; done
  if [ -e "$out/holder.ready" ]; then
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >"$out/other.nvidia-smi.txt" 2>&1
    traced other
  else
    note "FAIL  other: the holding process did not start (see holder.stdout)"
    status=1
  fi
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  trace="$(ls "$out"/fragmentation.*.bin 2>/dev/null | head -n 1)"
  if [ -n "$trace" ]; then
    limited 120 "$CMT_CLI" frag "$trace" >"$out/fragmentation.frag.txt" 2>&1
    limited 120 "$CMT_CLI" frag --json "$trace" >"$out/fragmentation.frag.json" 2>&1
    note "  cumemtrace frag of the fragmentation run: fragmentation.frag.txt"
  fi
else
  note "FAIL  nvcc could not build oom_verdicts.cu, see $out/nvcc.log"
  status=1
fi

# --- 2. the cost of a sample -------------------------------------------------
note "== sample cost (bench/sample_cost.c, dynamic cudart)"
if gcc -O2 -I"$cuda_root/include" "$root/bench/sample_cost.c" -L"$cuda_root/lib64" -lcudart -lcuda \
    -Wl,-rpath,"$cuda_root/lib64" -o "$out/sample_cost" >"$out/sample_cost.build.log" 2>&1; then
  # 20000 pairs: about 1.5 s of cudaMalloc/cudaFree per run, four runs.
  PATH="$(dirname "$python"):$PATH" limited 240 bash "$root/bench/sample_cost.sh" "$out/sample_cost" "$CMT_SHIM" \
    "$CMT_CLI" 20000 "$out" >"$out/sample_cost.txt" 2>&1
  rc=$?
  cat "$out/sample_cost.txt"
  if [ $rc -eq 0 ]; then
    note "NOTE  sample cost: $(grep -m1 '^sample queries' "$out/sample_cost.txt")"
    # One NOTE per run: native, then each CUMEMTRACE_SAMPLE_MS.
    awk '/^== /{run=substr($0, 4)} /^pairs of/{pairs=$0} /^samples in/{print "NOTE  sample cost, " run ": " pairs "; " $0; pairs=""}
         /^pairs of/ && run == "native" {print "NOTE  sample cost, native: " $0}' "$out/sample_cost.txt" | tee -a "$summary"
  else
    note "FAIL  sample cost: bench/sample_cost.sh exited with $rc (sample_cost.txt)"
    status=1
  fi
else
  note "FAIL  sample cost: gcc could not build bench/sample_cost.c (sample_cost.build.log)"
  status=1
fi
# The context's own memory: unexplained at the start sample of a bare program.
if [ -f "$out/capacity_large.report.json" ]; then
  "$python" - "$out/capacity_large.report.json" <<'EOF' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
for d in r["device_samples"]:
    f = d["first"]
    print(f"NOTE  context allowance: device {d['ordinal']} at the first sample: {f['used'] / 2**20:.0f} MiB in use, "
          f"{f['live'] / 2**20:.0f} MiB of it allocated, {f['unexplained'] / 2**20:.0f} MiB unexplained "
          f"(context and module images; the default allowance is 1024 MiB)")
EOF
fi

# --- 3. PyTorch --------------------------------------------------------------
note "== PyTorch, growing input shapes, default caching allocator and expandable_segments"
if "$python" -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  limited 420 "$python" "$here/torch_varying_shapes.py" check "$out" >"$out/torch_varying_shapes.txt" 2>&1
  rc=$?
  cat "$out/torch_varying_shapes.txt"
  checked "PyTorch" "$out/torch_varying_shapes.txt" $rc
else
  note "SKIP  PyTorch: '$python -c \"import torch\"' failed or no GPU visible to it"
fi

note "== $( [ $status -eq 0 ] && echo 'no check failed' || echo 'some checks FAILED' ); details in $out"
exit $status
