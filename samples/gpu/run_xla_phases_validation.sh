#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Validates the phase rule for XLA's compiler on a real GPU (issue 33 item 9,
# docs/report.md, "Phases and steps"): jax_phases.py under `cumemtrace run`,
# its report checked by xla_phases_check.py (no phase path inside a compile
# range; the phase at the peak the program's, compilation said apart).
#
#   samples/gpu/run_xla_phases_validation.sh OUTDIR
#
# Uses the build in $CMT_BUILD (default build/; scripts/gpu_bundle.sh's
# .gpu/build works) and $PYTHON (default python3) with JAX for CUDA; without
# JAX it says SKIP and exits 1. OUTDIR/summary.txt has the PASS/FAIL/NOTE
# lines; about a minute; every run is time-limited (300 s).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build="${CMT_BUILD:-$root/build}"
python="$(command -v "${PYTHON:-python3}" || echo "${PYTHON:-python3}")"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
cli="$build/analyzer/cumemtrace"
if [ ! -x "$cli" ] || [ ! -f "$build/preload/libcumemtrace.so" ]; then
  note "FAIL  no build in $build (set CMT_BUILD)"
  exit 1
fi
export CUMEMTRACE_SHIM="$build/preload/libcumemtrace.so"
if ! "$python" -c 'import jax; assert jax.devices()[0].platform == "gpu"' >/dev/null 2>&1; then
  note "SKIP  JAX with a GPU not available to $python"
  exit 1
fi
"$python" -c 'import jax; print("jax", jax.__version__, jax.devices())' >"$out/environment.txt" 2>&1
nvidia-smi -L >>"$out/environment.txt" 2>&1
unset NVTX_INJECTION64_PATH
rm -f "$out"/jax.*.bin
# preallocation off: each array its own allocation, the peak where the program makes it
timeout -k 10 300 env XLA_PYTHON_CLIENT_PREALLOCATE=false CUMEMTRACE_QUIET=1 "$cli" run -o "$out/jax.%p.bin" -- \
  "$python" "$here/jax_phases.py" --json "$out/jax.figures.json" >"$out/jax.stdout" 2>"$out/jax.stderr"
rc=$?
if [ $rc -ne 0 ]; then
  note "FAIL  jax_phases.py exited with $rc under the profiler (see jax.stderr)"
  exit 1
fi
trace="$(ls "$out"/jax.*.bin 2>/dev/null | head -n 1)"
if [ -z "$trace" ]; then
  note "FAIL  no trace written (see jax.stderr)"
  exit 1
fi
timeout 300 "$cli" report "$trace" >"$out/jax.report.txt" 2>&1
timeout 300 "$cli" report --json "$trace" >"$out/jax.report.json" 2>"$out/jax.report.err"
"$python" "$here/xla_phases_check.py" "$out/jax.report.json" >"$out/jax.check.txt" 2>&1
rc=$?
cat "$out/jax.check.txt" | tee -a "$summary" >/dev/null
cat "$out/jax.check.txt"
grep -E "phase at the peak" "$out/jax.report.txt" | head -n 3 | sed 's/^/  /'
echo "summary: $summary"
exit $rc
