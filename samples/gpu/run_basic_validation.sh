#!/usr/bin/env bash
# Real-GPU check of the first slice: samples/leak_and_peak.cu built with
# `nvcc -cudart shared`, profiled by cumemtrace and by compute-sanitizer's leak
# checker; both reports land in OUTDIR for comparison.
# Usage (repository root, after scripts/gpu_bundle.sh or a build):
#   samples/gpu/run_basic_validation.sh OUTDIR
set -uo pipefail
out="${1:?usage: $0 OUTDIR}"
mkdir -p "$out"
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -x "$root/.gpu/bin/cumemtrace" ]; then
  export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CUMEMTRACE_SHIM="$root/.gpu/lib/cumemtrace/libcumemtrace.so"
  cli="$root/.gpu/bin/cumemtrace"
else
  cli="$root/build/analyzer/cumemtrace"
fi
nvcc="${CUDA_ROOT:-/usr/local/cuda}/bin/nvcc"
work="$(mktemp -d)"

{
  echo "== machine"; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
  "$nvcc" --version | tail -n 2
  for l in libunwind.so.8 libdw.so.1; do ldconfig -p | grep -q "$l" && echo "$l: installed" || echo "$l: missing"; done
  command -v compute-sanitizer || echo "compute-sanitizer: missing"
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1 | tail -n 1
  python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -n 1
} >"$out/machine.txt" 2>&1

"$nvcc" -g -O1 -cudart shared -o "$work/leak_and_peak" "$root/samples/leak_and_peak.cu" >"$out/build.log" 2>&1
(cd "$work" && "$cli" run -o "$work/leak_and_peak.%p.bin" -- ./leak_and_peak) >"$out/run.txt" 2>&1
echo "run status $?" >>"$out/run.txt"
"$cli" report "$work"/leak_and_peak.*.bin >"$out/report.txt" 2>&1
"$cli" report --json "$work"/leak_and_peak.*.bin >"$out/report.json" 2>"$out/report.stderr"
cp "$work"/leak_and_peak.*.bin "$out/leak_and_peak.bin"
compute-sanitizer --leak-check full "$work/leak_and_peak" >"$out/compute-sanitizer.txt" 2>&1
echo "compute-sanitizer status $?" >>"$out/compute-sanitizer.txt"
cat "$out/machine.txt"; echo; cat "$out/run.txt"; echo
sed -n '/^Leaks/,$p' "$out/report.txt"
grep -E "Leaked|LEAK SUMMARY|ERROR SUMMARY" "$out/compute-sanitizer.txt"
