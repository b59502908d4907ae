#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Records the real-GPU traces behind the tensor-level report (issue 27) and
# `cumemtrace whatif` (issue 28): samples/gpu/torch_workloads.py run under
# `cumemtrace run`, each with what PyTorch itself said beside its trace.
#
#   samples/gpu/run_tensor_validation.sh OUTDIR [PART...]
#
# PART (default: all of them):
#   tensor   train with and without a per-step leak, default allocator and
#            expandable segments, steps marked with NVTX and not; a
#            fragmentation OOM and a capacity OOM; cats_mlp and cats_gpt
#            traced, and again under MemTracker (untraced) for its
#            per-category peaks
#   matrix   train, hf, varlen, frag_oom, capacity_oom under the default
#            allocator, expandable_segments:True, max_split_size_mb:128,
#            max_split_size_mb:512, roundup_power2_divisions:4 (and
#            garbage_collection_threshold:0.6 for varlen and frag_oom)
#
# OUTDIR gets runs.tsv (name, mode, settings, exit status, seconds),
# json/NAME.json (PyTorch's figures), traces-PART.tar.xz (the traces) and
# logs. Uses $CMT_BUILD (default build/; the bundle's .gpu/build with
# LD_LIBRARY_PATH=.gpu/lib works) and $PYTHON (default python3).
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR [tensor|matrix]..." >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tensor matrix)
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
py="${PYTHON:-python3}"
wl="$here/torch_workloads.py"
if [ ! -x "$cli" ]; then
  echo "run_tensor_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1 CUMEMTRACE_QUIET=1
mkdir -p "$out/json" "$out/logs"

# run PART NAME SETTINGS MODE [ARGS...]: one traced run.
run() {
  local part="$1" name="$2" conf="$3" mode="$4"
  shift 4
  mkdir -p "$out/traces-$part"
  local t0 t1 rc
  t0=$(date +%s.%N)
  PYTORCH_CUDA_ALLOC_CONF="$conf" timeout 150 "$cli" run -o "$out/traces-$part/$name.bin" -- \
    "$py" "$wl" "$mode" "$out/json/$name.json" "$@" >"$out/logs/$name.out" 2>"$out/logs/$name.err"
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%.1f\n' "$name" "$mode" "${conf:-default}" "$rc" "$(echo "$t1 - $t0" | bc)" >>"$out/runs.tsv"
}

# run_bg: the same in the background, at most 4 at a time: workloads that do
# not run out of memory leave each other room on the device, and each process
# has its own allocator, so their traces do not change. The OOM workloads
# run alone (they take the whole device).
run_bg() {
  while [ "$(jobs -rp | wc -l)" -ge 4 ]; do wait -n; done
  run "$@" &
}

# The same, untraced (MemTracker's own runs).
run_plain() {
  local name="$1" mode="$2"
  shift 2
  "$py" "$wl" "$mode" "$out/json/$name.json" "$@" >"$out/logs/$name.out" 2>"$out/logs/$name.err"
  printf '%s\t%s\t%s\t%s\t-\n' "$name" "$mode" "untraced" "$?" >>"$out/runs.tsv"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
"$py" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)' >"$out/versions.txt" 2>&1

for part in "${parts[@]}"; do
  case "$part" in
  tensor)
    run_bg tensor train_leak "" train --steps 12 --leak
    run_bg tensor train_leak_nvtx "" train --steps 12 --leak --nvtx
    run_bg tensor train_leak_exp "expandable_segments:True" train --steps 12 --leak --nvtx
    run_bg tensor train_clean "" train --steps 12
    run_bg tensor train_clean_nvtx "" train --steps 12 --nvtx
    run_bg tensor train_clean_exp "expandable_segments:True" train --steps 12 --nvtx
    run_bg tensor cats_mlp "" cats_mlp --nvtx
    run_bg tensor cats_gpt "" cats_gpt --nvtx
    wait
    run tensor frag_oom "" frag_oom
    run tensor frag_oom_exp "expandable_segments:True" frag_oom
    run tensor capacity_oom "" capacity_oom
    run_plain cats_mlp_memtracker cats_mlp --memtracker &
    run_plain cats_gpt_memtracker cats_gpt --memtracker &
    wait
    ;;
  matrix)
    for conf in "" "expandable_segments:True" "max_split_size_mb:128" "max_split_size_mb:512" \
      "roundup_power2_divisions:4"; do
      tag="${conf//[:,]/_}"
      tag="${tag:-default}"
      run_bg matrix "m_train_$tag" "$conf" train --steps 8
      run_bg matrix "m_hf_$tag" "$conf" hf --steps 5
      run_bg matrix "m_varlen_$tag" "$conf" varlen --steps 24
    done
    run_bg matrix m_varlen_gc "garbage_collection_threshold:0.6" varlen --steps 24
    wait
    for conf in "" "expandable_segments:True" "max_split_size_mb:128" "max_split_size_mb:512" \
      "roundup_power2_divisions:4" "garbage_collection_threshold:0.6"; do
      tag="${conf//[:,]/_}"
      tag="${tag:-default}"
      run matrix "m_frag_$tag" "$conf" frag_oom
      [ "$tag" = garbage_collection_threshold_0.6 ] || run matrix "m_capacity_$tag" "$conf" capacity_oom
    done
    ;;
  *)
    echo "run_tensor_validation: unknown part $part" >&2
    exit 2
    ;;
  esac
  if [ -d "$out/traces-$part" ]; then
    tar -C "$out" -cJf "$out/traces-$part.tar.xz" "traces-$part" && rm -rf "$out/traces-$part"
  fi
done
tar -C "$out" -czf "$out/json-logs.tar.gz" json logs runs.tsv gpu.txt versions.txt
cat "$out/runs.tsv"
