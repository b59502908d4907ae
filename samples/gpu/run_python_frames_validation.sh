#!/usr/bin/env bash
# Real-GPU check of the Python frames (issue 14): samples/gpu/torch_python_frames.py
# run under the profiler with PYTORCH_NO_CUDA_MEMORY_CACHING=1; its check
# mode compares every reported tensor's Python frames (file, function, line)
# with the lines the script marks. Also the test suite's Python cases'
# program (tests/e2e/programs/py_alloc.py, ctypes on the real libcudart).
# Usage (repository root, after scripts/gpu_bundle.sh or a build):
#   samples/gpu/run_python_frames_validation.sh OUTDIR   (PYTHON: interpreter, default python3)
set -uo pipefail
out="${1:?usage: $0 OUTDIR}"
mkdir -p "$out"
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -x "$root/.gpu/bin/cumemtrace" ]; then
  export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CUMEMTRACE_SHIM="$root/.gpu/lib/cumemtrace/libcumemtrace.so"
  cli="$root/.gpu/bin/cumemtrace"
else
  cli="${CMT_BUILD:-$root/build}/analyzer/cumemtrace"
fi
py="${PYTHON:-python3}"
work="$(mktemp -d)"
summary="$out/python_frames_summary.txt"
: >"$summary"
{
  "$py" -VV
  "$py" -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1 | tail -n 1
  nvidia-smi -L
} >"$out/machine.txt" 2>&1

# 1. PyTorch, no caching: each tensor one cudaMalloc from a known line.
(cd "$work" && PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$cli" run -o "$work/torch.%p.bin" -- \
  "$py" "$root/samples/gpu/torch_python_frames.py" run) >"$out/torch.traced.txt" 2>"$out/torch.stderr"
echo "torch run exit $?" >>"$summary"
trace="$(ls "$work"/torch.*.bin | head -n 1)"
"$cli" report --json --full-stacks --top 1000 "$trace" >"$out/torch.report.json" 2>"$out/torch.report.stderr"
"$cli" report --full-stacks "$trace" >"$out/torch.report.txt" 2>>"$out/torch.report.stderr"
"$py" "$root/samples/gpu/torch_python_frames.py" check "$out/torch.report.json" | tee -a "$summary"
# The same with the Python frames off, for the step's native-only stacks.
(cd "$work" && PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUMEMTRACE_PYTHON=0 "$cli" run -o "$work/off.%p.bin" -- \
  "$py" "$root/samples/gpu/torch_python_frames.py" run) >"$out/torch_off.traced.txt" 2>"$out/torch_off.stderr"
"$cli" report --full-stacks "$(ls "$work"/off.*.bin | head -n 1)" >"$out/torch_off.report.txt" 2>&1

# 2. ctypes on the real runtime: the e2e program's `lines` and `callback` are
#    not needed (no helper library here); `lines` and `deep` are.
cudart="$("$py" -c 'import ctypes.util, glob, os, torch; d = os.path.dirname(torch.__file__); c = sorted(glob.glob(os.path.join(d, "..", "nvidia", "*", "lib", "libcudart.so*")) + glob.glob(os.path.join(d, "lib", "libcudart*.so*"))); print(os.path.dirname(c[0]) if c else "")' 2>/dev/null)"
for mode in lines "deep 50 3"; do
  tag="${mode%% *}"
  (cd "$work" && LD_LIBRARY_PATH="$cudart:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" "$cli" run -o "$work/$tag.%p.bin" -- \
    "$py" "$root/tests/e2e/programs/py_alloc.py" $mode) >"$out/ctypes_$tag.txt" 2>"$out/ctypes_$tag.stderr"
  echo "ctypes $tag exit $?" >>"$summary"
  "$cli" report --full-stacks "$(ls "$work"/$tag.*.bin | head -n 1)" >"$out/ctypes_$tag.report.txt" 2>&1
done
rm -rf "$work"
cat "$summary"
