#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Validates on a real GPU that cudaMalloc called through ctypes on a libcudart
# the program opened itself is recorded as cudaMalloc, the API it called, not
# as the cuMemAlloc the runtime makes inside it (issue 33, item 4), and that a
# second copy of the runtime, whose cudaMalloc the shim's hook does not call,
# is passed through untouched:
#
#   1. tests/e2e/programs/ctypes_runtime.py local LIBCUDART: 13 cudaMalloc of
#      1..13 MiB, 5 freed: events {cudaMalloc: 13, cudaFree: 5}, 76 MiB live
#      at exit (6 + ... + 13 MiB);
#   2. ... two LIBCUDART COPY (LIBCUDART global, a copy of its file local):
#      events {cudaMalloc: 1, cudaFree: 1, cuMemAlloc: 1, cuMemFree: 1},
#      nothing live at exit.
#
#   samples/gpu/run_ctypes_runtime_validation.sh OUTDIR
#
# LIBCUDART: $LIBCUDART, else PyTorch's (nvidia/cuda_runtime in $PYTHON's
# site-packages), else $CUDA_ROOT/lib64/libcudart.so. Uses the build in
# $CMT_BUILD (default: build/ at the top of the tree; the bundle's
# .gpu/build works). Exit status 0 when both checks passed.
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
[ -x /opt/torch/.venv/bin/python ] && [ -z "${PYTHON:-}" ] && python=/opt/torch/.venv/bin/python
shim="$build/preload/libcumemtrace.so"
cli="$build/analyzer/cumemtrace"
program="$root/tests/e2e/programs/ctypes_runtime.py"
summary="$out/summary.txt"
: >"$summary"

libcudart="${LIBCUDART:-}"
if [ -z "$libcudart" ]; then
  libcudart=$("$python" - <<'PY' 2>/dev/null
import glob, os, site
for d in site.getsitepackages():
    found = sorted(glob.glob(os.path.join(d, "nvidia", "cuda_runtime", "lib", "libcudart.so.*")))
    if found:
        print(found[0])
        break
PY
)
fi
[ -z "$libcudart" ] && libcudart="$cuda_root/lib64/libcudart.so"
if [ ! -f "$libcudart" ] || [ ! -f "$shim" ] || [ ! -x "$cli" ]; then
  echo "run_ctypes_runtime_validation: needs $shim, $cli and a libcudart (tried $libcudart)" >&2
  exit 1
fi
echo "libcudart: $libcudart" | tee -a "$summary"
status=0

# run NAME EXPECTED-EVENTS EXPECTED-LIVE-BYTES ARGS...
run() {
  local name=$1 events=$2 live=$3
  shift 3
  mkdir -p "$out/$name"
  rm -f "$out/$name"/*.bin
  LD_PRELOAD="$shim" CUMEMTRACE_OUTPUT="$out/$name/trace.%p.bin" "$python" "$program" "$@" \
    >"$out/$name/stdout.txt" 2>"$out/$name/stderr.txt"
  local rc=$?
  local trace
  trace=$(ls "$out/$name"/trace.*.bin 2>/dev/null | head -n 1)
  if [ "$rc" -ne 0 ] || [ -z "$trace" ]; then
    echo "FAIL  $name: exit $rc, trace '${trace}' (see $out/$name/stderr.txt)" | tee -a "$summary"
    status=1
    return
  fi
  "$cli" report --json "$trace" >"$out/$name/report.json" 2>"$out/$name/report.err"
  if "$python" - "$out/$name/report.json" "$events" "$live" <<'PY' >>"$summary" 2>&1; then
import json, sys
rep = json.load(open(sys.argv[1]))
want = json.loads(sys.argv[2])
got, live = rep["events_by_api"], rep["leaks"]["bytes"]
ok = got == want and live == int(sys.argv[3])
print(f"{'PASS' if ok else 'FAIL'}  events {got} (want {want}), live at exit {live} B (want {sys.argv[3]})")
sys.exit(0 if ok else 1)
PY
    echo "PASS  $name" | tee -a "$summary"
  else
    echo "FAIL  $name" | tee -a "$summary"
    status=1
  fi
}

run local '{"cudaMalloc": 13, "cudaFree": 5}' $((76 << 20)) local "$libcudart"
copy="$out/libcudart_copy.so"
cp -L "$libcudart" "$copy"
run two '{"cudaMalloc": 1, "cudaFree": 1, "cuMemAlloc": 1, "cuMemFree": 1}' 0 two "$libcudart" "$copy"
exit $status
