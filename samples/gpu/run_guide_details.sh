#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The details behind two rows of docs/comparison.md that
# run_guide_validation.sh only counts (about 1 minute on an H200):
#
#   samples/gpu/run_guide_details.sh OUTDIR
#
#   1. oob_write.cu under compute-sanitizer --tool memcheck --leak-check full:
#      its whole log (OUTDIR/details.txt);
#   2. a small train_mlp.py under compute-sanitizer (the leaks it lists, sizes
#      and the first frames of each) and under cumemtrace run (the report's
#      leak and held-at-exit sections, `check`'s verdict).
#
# Same environment as run_guide_validation.sh ($CMT_BUILD, $CUDA_ROOT,
# $PYTHON). One file, OUTDIR/details.txt.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build="${CMT_BUILD:-$here/../../build}"
cli="$build/analyzer/cumemtrace"
cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
py="${PYTHON:-python3}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
f="$out/details.txt"
small=(--blocks 2 --width 1024 --batch 1024 --warmup 1 --steps 3)
{
  echo "== 1. oob_write under compute-sanitizer --tool memcheck --leak-check full"
  "$cuda_root/bin/nvcc" -g -O1 -lineinfo -o "$scratch/oob_write" "$here/oob_write.cu"
  timeout 60 "$cuda_root/bin/compute-sanitizer" --tool memcheck --leak-check full "$scratch/oob_write" 2>&1 | head -n 80
  echo "exit status ${PIPESTATUS[0]}"
  echo
  echo "== 2a. train_mlp.py ${small[*]} under compute-sanitizer --tool memcheck --leak-check full"
  timeout 150 "$cuda_root/bin/compute-sanitizer" --tool memcheck --leak-check full --log-file "$scratch/san.log" \
    "$py" "$here/train_mlp.py" "${small[@]}" >"$scratch/san.out" 2>&1
  echo "exit status $?; the program's last lines:"
  tail -n 5 "$scratch/san.out" | cut -c 1-300
  echo "-- the leaks (size, then the first 6 host frames of each):"
  awk '/Leaked [0-9,]+ bytes/ {n = 0; print; next} /Host Frame/ && n < 6 {n++; print} /ERROR SUMMARY|Program hit|Invalid/ {print}' \
    "$scratch/san.log" | cut -c 1-220 | head -n 120
  echo "-- every other line of the log that is not a frame (first 40):"
  grep -v 'Host Frame\|Leaked\|Saved host backtrace\|^========= *$' "$scratch/san.log" | head -n 40 | cut -c 1-220
  echo
  echo "== 2b. the same under cumemtrace run"
  (cd "$scratch" && timeout 150 "$cli" run -o "$scratch/mlp.%p.bin" -- "$py" "$here/train_mlp.py" "${small[@]}" >/dev/null 2>&1)
  t="$(ls "$scratch"/mlp.*.bin | head -n 1)"
  echo "\$ cumemtrace report mlp.bin (leaks, held at exit)"
  timeout 120 "$cli" report --chart-width 0 "$t" 2>&1 | awk '/^Leaks|^Held by|^  held|^Growing/ {p = 1} /^Failed|^Phases|^Fragmentation/ {p = 0} p' | head -n 80
  echo "\$ cumemtrace check mlp.bin"
  timeout 120 "$cli" check "$t" 2>&1 | grep -v ': note: module' | head -n 20
  echo "exit status ${PIPESTATUS[0]}"
} >"$f" 2>&1
cat "$f"
