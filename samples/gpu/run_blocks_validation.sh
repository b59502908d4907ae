#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of PyTorch's block layer (issue 20, docs/design.md
# "Block layer"):
#
#   samples/gpu/run_blocks_validation.sh OUTDIR
#
#   1. the installed PyTorch: version, C++ ABI, its CUDACachingAllocator.h and
#      the headers of the classes below it copied to OUTDIR/torch-headers/, and
#      samples/gpu/torch_layout_probe.cpp compiled against them: the layout
#      line the bridge needs, held against the one built in
#      (preload/torch/layout.c). When they differ the runs below use the
#      probe's line (CUMEMTRACE_TORCH_LAYOUT) and the table check fails.
#   2. train_mlp.py --keep 4 under `cumemtrace run` with the default caching
#      allocator: the block layer's peak allocated equals
#      torch.cuda.max_memory_allocated() and its peak reserved
#      max_memory_reserved() to the byte, every block lies in a live segment,
#      every segment is one of the driver's cudaMalloc, the largest tensor
#      sites at the peak are the script's marked lines, the 4 kept tensors are
#      live at exit (blocks_check.py); the report's own figures too when its
#      JSON has the block layer.
#   3. expandable_segments:True, for the record (NOTE lines).
#   4. step times of train_mlp.py under the profiler with the block layer on
#      and off (CUMEMTRACE_BLOCKS=0), ROUNDS (default 3) interleaved rounds,
#      and without the profiler: the issue's target is 1.03x.
#
# Uses $CMT_BUILD (default build/; the bundle's .gpu/build with
# LD_LIBRARY_PATH=.gpu/lib works) and $PYTHON (default python3) with PyTorch.
# summary.txt has PASS/FAIL/NOTE lines; exit status 0 when none failed.
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
[ -x "$cli" ] || cli="$(ls "$build"/*/cumemtrace "$build"/analyzer/*/cumemtrace 2>/dev/null | head -n 1)"
py="${PYTHON:-python3}"
rounds="${ROUNDS:-3}"
summary="$out/summary.txt"
: >"$summary"
status=0
if [ ! -x "$cli" ]; then
  echo "run_blocks_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1
say() { echo "$*" | tee -a "$summary"; }
mlp="$here/train_mlp.py"

# --- 1. the installed PyTorch ------------------------------------------------
expected_layout="attach=44,name=49,action=0,device=4,addr=8,stream=32,size=40,mempool=48,actions=0:1:2:3:4:5:6:7:8"
"$py" - >"$out/torch-facts.txt" 2>&1 <<'PY'
import os, torch
print("version", torch.__version__)
print("cxx11_abi", int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("cuda", torch.version.cuda)
print("dir", os.path.dirname(torch.__file__))
print("allocator_backend", torch.cuda.get_allocator_backend() if hasattr(torch.cuda, "get_allocator_backend") else "?")
PY
tdir="$(awk '$1 == "dir" {print $2}' "$out/torch-facts.txt")"
abi="$(awk '$1 == "cxx11_abi" {print $2}' "$out/torch-facts.txt")"
say "NOTE torch: $(tr '\n' ' ' <"$out/torch-facts.txt")"
mkdir -p "$out/torch-headers"
for h in c10/cuda/CUDACachingAllocator.h c10/core/CachingDeviceAllocator.h c10/core/Allocator.h \
  c10/core/AllocatorConfig.h c10/cuda/CUDAAllocatorConfig.h; do
  [ -f "$tdir/include/$h" ] && cp "$tdir/include/$h" "$out/torch-headers/$(echo "$h" | tr / _)"
done
nm -D --defined-only "$tdir/lib/libc10_cuda.so" 2>/dev/null | grep -i "CUDACachingAllocator" >"$out/libc10_cuda-exports.txt"
say "NOTE libc10_cuda.so exports $(wc -l <"$out/libc10_cuda-exports.txt") CUDACachingAllocator symbols; allocator: $(grep -c ' _ZN3c104cuda20CUDACachingAllocator9allocatorE$' "$out/libc10_cuda-exports.txt")"
cuda_inc=""
for d in "${CUDA_HOME:-/usr/local/cuda}/include" /usr/local/cuda/include $(ls -d "$tdir"/../nvidia/*/include "$tdir"/../nvidia/cu*/include 2>/dev/null); do
  [ -f "$d/cuda_runtime_api.h" ] && { cuda_inc="$d"; break; }
done
layout=""
if g++ -std=c++17 -O0 -D_GLIBCXX_USE_CXX11_ABI="${abi:-1}" -I"$tdir/include" \
  -I"$tdir/include/torch/csrc/api/include" ${cuda_inc:+-I"$cuda_inc"} "$here/torch_layout_probe.cpp" \
  -Wl,--unresolved-symbols=ignore-all -o "$out/torch_layout_probe" >"$out/probe-build.txt" 2>&1 &&
  "$out/torch_layout_probe" >"$out/probe.txt" 2>&1; then
  layout="$(head -n 1 "$out/probe.txt")"
  say "NOTE probe: $(tr '\n' ' ' <"$out/probe.txt")"
  if [ "$layout" = "$expected_layout" ]; then
    say "PASS layout table: the built-in layout for this release is the probe's ($layout)"
    layout=""
  else
    say "FAIL layout table: built in $expected_layout, the probe says $layout; the runs below use the probe's"
    status=1
  fi
else
  say "FAIL probe: torch_layout_probe.cpp did not build or run (probe-build.txt, cuda headers: ${cuda_inc:-none}); the built-in layout is used"
  status=1
fi
layout_env=()
[ -n "$layout" ] && layout_env=(CUMEMTRACE_TORCH_LAYOUT="$layout")

# traced NAME [ENV=VALUE...] -- ARGS: train_mlp.py under the profiler.
traced() {
  local name=$1
  shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  rm -f "$out/$name".*.bin
  env "${layout_env[@]}" "${envs[@]}" timeout -k 10 150 "$cli" run -o "$out/$name.%p.bin" -- "$py" "$mlp" "$@" \
    >"$out/$name.json" 2>"$out/$name.stderr"
  local rc=$?
  mv "$out/$name".*.bin "$out/$name.bin" 2>/dev/null
  if [ $rc -ne 0 ] || [ ! -f "$out/$name.bin" ]; then
    say "FAIL $name: the traced run exited with $rc (see $name.stderr: $(tail -n 2 "$out/$name.stderr" | tr '\n' ' '))"
    status=1
    return 1
  fi
}

# --- 2. the block layer against PyTorch's figures ------------------------------
if traced blocks -- --keep 4; then
  "$cli" report --chart-width 0 "$out/blocks.bin" >"$out/blocks.report.txt" 2>&1
  head -n 60 "$out/blocks.report.txt" >"$out/blocks.head.txt"
  "$cli" report --json "$out/blocks.bin" >"$out/blocks.report.json" 2>>"$out/blocks.stderr"
  "$cli" check "$out/blocks.bin" >"$out/blocks.check.txt" 2>&1
  say "NOTE blocks: check exited with $? ($(tail -n 1 "$out/blocks.check.txt"))"
  "$py" "$here/blocks_check.py" "$mlp" "$out/blocks.json" "$out/blocks.bin" "$out/blocks.report.json" --kept 4 \
    >"$out/blocks.figures.txt" 2>&1 || status=1
  cat "$out/blocks.figures.txt" >>"$summary"
  grep -q '^FAIL' "$out/blocks.figures.txt" && status=1
fi

# --- 3. expandable segments, for the record ------------------------------------
if traced expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- --steps 10; then
  "$py" "$here/blocks_check.py" "$mlp" "$out/expandable.json" "$out/expandable.bin" \
    >"$out/expandable.figures.txt" 2>&1
  sed 's/^\(PASS\|FAIL\)/NOTE expandable (model not checked there):/' "$out/expandable.figures.txt" >>"$summary"
fi

# --- 4. step times --------------------------------------------------------------
on=() off=() plain=()
for r in $(seq 1 "$rounds"); do
  traced time_on_$r -- && on+=("$("$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["median_step_ms"])' "$out/time_on_$r.json")")
  traced time_off_$r CUMEMTRACE_BLOCKS=0 -- && off+=("$("$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["median_step_ms"])' "$out/time_off_$r.json")")
  if timeout -k 10 150 "$py" "$mlp" >"$out/time_plain_$r.json" 2>"$out/time_plain_$r.stderr"; then
    plain+=("$("$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["median_step_ms"])' "$out/time_plain_$r.json")")
  fi
  rm -f "$out"/time_*_"$r".bin
done
"$py" - "${#on[@]}" "${on[@]}" "${off[@]}" "${plain[@]}" >"$out/timing.txt" <<'PY'
import statistics, sys
n = int(sys.argv[1]); v = [float(x) for x in sys.argv[2:]]
on, rest = v[:n], v[n:]
off, plain = rest[:n], rest[n:]
if not on or not off:
    print("FAIL step time: runs missing"); sys.exit(1)
mon, moff = statistics.median(on), statistics.median(off)
ratio = mon / moff
pl = f", no profiler {statistics.median(plain):.2f} ms ({' '.join(f'{x:.2f}' for x in plain)})" if plain else ""
print(("PASS" if ratio <= 1.03 else "FAIL") + f" step time: block layer on {mon:.2f} ms ({' '.join(f'{x:.2f}' for x in on)}), "
      f"off {moff:.2f} ms ({' '.join(f'{x:.2f}' for x in off)}): {ratio:.3f}x (target 1.03x){pl}")
PY
cat "$out/timing.txt" >>"$summary"
grep -q '^FAIL' "$out/timing.txt" && status=1
rm -f "$out"/time_*.bin
echo "---"
cat "$summary"
exit $status
