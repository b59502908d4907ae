#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Validates cumemtrace's driver-level interception on a real GPU (issue 3):
#
#   1. samples/gpu/driver_leaks.cu built with plain `nvcc` (static runtime,
#      plus -lcuda): every allocation call caught, every leak at its call site,
#      and the leaks compared with `compute-sanitizer --leak-check full` (in a
#      separate run by size, and in one process with both tools by address);
#   2. PyTorch with the four allocator settings (torch_allocators.py);
#   3. CuPy's memory pool (cupy_pool.py).
#
#   samples/gpu/run_driver_validation.sh OUTDIR
#
# Everything (logs, traces, reports, summary.txt) goes to OUTDIR. Exit status 0
# when every check passed. Uses the build in $CMT_BUILD (default: build/ at the
# top of the tree; built with meson if missing), nvcc and compute-sanitizer from
# $CUDA_ROOT (default /usr/local/cuda), and $PYTHON (default python3) for
# PyTorch and CuPy; a part whose tools are missing is reported as skipped.
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
python="${PYTHON:-python3}"
summary="$out/summary.txt"
: >"$summary"

note() { echo "$*" | tee -a "$summary"; }
status=0
result() { # NAME EXIT-STATUS
  if [ "$2" -eq 0 ]; then note "PASS  $1"; else note "FAIL  $1 (exit $2)"; status=1; fi
}

if [ ! -x "$build/analyzer/cumemtrace" ] || [ ! -f "$build/preload/libcumemtrace.so" ]; then
  echo "run_driver_validation: no build in $build; building it (meson setup + compile)"
  (cd "$root" && { [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda-root="$cuda_root"; } &&
    meson compile -C "$build") >"$out/build.log" 2>&1 || {
    echo "run_driver_validation: the build failed, see $out/build.log" >&2
    exit 1
  }
fi
export CMT_SHIM="$build/preload/libcumemtrace.so"
export CMT_CLI="$build/analyzer/cumemtrace"

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader 2>&1
  "$cuda_root/bin/nvcc" --version 2>&1 | tail -n 1
  echo "cumemtrace: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'not a git tree')"
} >"$out/environment.txt"
cat "$out/environment.txt"

# --- 1. plain nvcc: static runtime ------------------------------------------
note "== driver_leaks.cu, built with plain nvcc (static cudart)"
if "$cuda_root/bin/nvcc" -g -O1 -lineinfo -o "$out/driver_leaks" "$here/driver_leaks.cu" -lcuda \
    >"$out/nvcc.log" 2>&1; then
  note "  linked against: $(ldd "$out/driver_leaks" | awk '/libcudart/{print "libcudart.so (dynamic!)"; f=1} END{if(!f) print "no libcudart.so: static runtime"}')"
  rm -f "$out"/driver_leaks.*.bin
  env LD_PRELOAD="$CMT_SHIM" CUMEMTRACE_OUTPUT="$out/driver_leaks.%p.bin" CUMEMTRACE_QUIET=1 \
    "$out/driver_leaks" >"$out/driver_leaks.stdout" 2>"$out/driver_leaks.stderr"
  result "driver_leaks runs under the shim" $?
  trace="$(ls "$out"/driver_leaks.*.bin 2>/dev/null | head -n 1)"
  if [ -n "$trace" ]; then
    "$CMT_CLI" report "$trace" >"$out/driver_leaks.report.txt" 2>&1
    "$CMT_CLI" report --json --top 1000 "$trace" >"$out/driver_leaks.report.json" 2>"$out/driver_leaks.report.err"
  fi
  sanitizer="$cuda_root/bin/compute-sanitizer"
  command -v "$sanitizer" >/dev/null 2>&1 || sanitizer="$(command -v compute-sanitizer || true)"
  if [ -n "$sanitizer" ]; then
    "$sanitizer" --leak-check full "$out/driver_leaks" >"$out/sanitizer.log" 2>&1
    rc=$?
    note "  compute-sanitizer alone: exit $rc ($(grep -c 'Leaked' "$out/sanitizer.log") leaks reported)"
    mkdir -p "$out/combined" && rm -f "$out"/combined/*.bin
    env LD_PRELOAD="$CMT_SHIM" CUMEMTRACE_OUTPUT="$out/combined/driver_leaks.%p.bin" CUMEMTRACE_QUIET=1 \
      "$sanitizer" --leak-check full "$out/driver_leaks" >"$out/combined.log" 2>&1
    rc=$?
    note "  compute-sanitizer with the shim preloaded: exit $rc ($(ls "$out"/combined/*.bin 2>/dev/null | wc -l) traces)"
  else
    note "  compute-sanitizer not found: the leak comparison with it is skipped"
    : >"$out/sanitizer.log"
  fi
  "$python" "$here/compare_leaks.py" "$out" 2>&1 | tee "$out/compare_leaks.txt"
  result "leaks: program, cumemtrace, compute-sanitizer" "${PIPESTATUS[0]}"
else
  note "FAIL  nvcc could not build driver_leaks.cu, see $out/nvcc.log"
  status=1
fi

# --- 2. PyTorch -------------------------------------------------------------
note "== PyTorch, four allocator settings"
if "$python" -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  "$python" "$here/torch_allocators.py" check "$out" 2>&1 | tee "$out/torch_allocators.txt"
  result "PyTorch: allocator peak == max_memory_reserved (caching settings)" "${PIPESTATUS[0]}"
else
  note "SKIP  PyTorch: '$python -c \"import torch\"' failed or no GPU visible to it"
fi

# --- 3. CuPy ----------------------------------------------------------------
note "== CuPy memory pool"
if "$python" -c "import cupy; cupy.cuda.runtime.getDeviceCount()" >/dev/null 2>&1; then
  "$python" "$here/cupy_pool.py" check "$out" 2>&1 | tee "$out/cupy_pool.txt"
  result "CuPy: pool allocations caught, peak == largest total_bytes()" "${PIPESTATUS[0]}"
else
  note "SKIP  CuPy: '$python -c \"import cupy\"' failed or no GPU visible to it"
fi

note "== $( [ $status -eq 0 ] && echo 'all checks passed' || echo 'some checks FAILED' ); details in $out"
exit $status
