#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU checks of issue 15 (a gate people can trust), on PyTorch and a
# CUDA sample:
#   1. a PyTorch run under `cumemtrace run`: the trace reads complete, and no
#      call was counted unrecorded (the real cudart and libcuda make no
#      nested calls through the shim that `check` would take for lost ones);
#   2. the same run killed with SIGKILL half-way: the trace reads incomplete,
#      never damaged, `check` exits 2 (could not check);
#   3. samples/leak_and_peak.cu built with AddressSanitizer, under plain
#      `cumemtrace run` (no LD_PRELOAD by hand): the program's exit status is
#      the same as without the profiler;
#   4. the PyTorch run under `ulimit -f 1024`: exits 0 (no SIGXFSZ), one
#      warning;
#   5. the hot-path figures: bench_record_cost (the record check's cost),
#      bench_clock_cost, the NVTX pair cost.
#
#   samples/gpu/run_trust_validation.sh OUTDIR
#
# Build: $CMT_BUILD (default build/; scripts/gpu_bundle.sh's .gpu/build with
# LD_LIBRARY_PATH=.gpu/lib works). summary.txt: PASS/FAIL/NOTE lines; exit
# status 0 when none failed.
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
py="${PYTHON:-python3}"
nvcc="${CUDA_ROOT:-/usr/local/cuda}/bin/nvcc"
summary="$out/summary.txt"
: >"$summary"
status=0
verdict() { # NAME OK(0/1) DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1: $3" >>"$summary"; else echo "FAIL $1: $3" >>"$summary"; status=1; fi
}
field() { # REPORT_JSON PYTHON-EXPRESSION-OF-r
  "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}
mlp="$here/train_mlp.py"

# 1. complete, nothing unrecorded
timeout -k 10 240 "$cli" run -o "$out/whole.%p.bin" -- "$py" "$mlp" --steps 5 >"$out/whole.out" 2>&1
mv "$out"/whole.*.bin "$out/whole.bin" 2>/dev/null
"$cli" report --json "$out/whole.bin" >"$out/whole.json" 2>"$out/whole.stderr"
state=$(field "$out/whole.json" 'r["trace_state"]')
nested=$(field "$out/whole.json" 'r["unrecorded"]["nested_calls"]')
verdict "complete trace" "$([ "$state" = complete ]; echo $?)" "trace_state $state"
verdict "nothing unrecorded" "$([ "$nested" = 0 ]; echo $?)" "unrecorded nested calls: $nested"

# 2. killed half-way
"$cli" run -o "$out/killed.%p.bin" -- "$py" "$mlp" --steps 200 >"$out/killed.out" 2>&1 &
sleep 15
pkill -KILL -f "train_mlp.py --steps 200"
wait
mv "$out"/killed.*.bin "$out/killed.bin" 2>/dev/null
"$cli" report "$out/killed.bin" >"$out/killed.report.txt" 2>&1
rrc=$?
"$cli" check "$out/killed.bin" >"$out/killed.check.txt" 2>&1
crc=$?
"$cli" report --json "$out/killed.bin" >"$out/killed.json" 2>/dev/null
state=$(field "$out/killed.json" 'r["trace_state"]')
damaged=$(grep -c -i damaged "$out/killed.report.txt" "$out/killed.check.txt" | awk -F: '{s += $2} END {print s}')
verdict "killed run" "$([ "$state" = incomplete ] && [ "$rrc" = 0 ] && [ "$crc" = 2 ] && [ "$damaged" = 0 ]; echo $?)" \
  "trace_state $state, report status $rrc, check status $crc, 'damaged' said $damaged times"
echo "NOTE killed run: $(sed -n 2,4p "$out/killed.report.txt" | tr -s ' ' | tr '\n' '|')" >>"$summary"

# 3. an ASan-built CUDA program under plain `run`
if "$nvcc" -g -O1 -cudart shared -Xcompiler -fsanitize=address -lasan \
  -o "$out/leak_and_peak_asan" "$root/samples/leak_and_peak.cu" >"$out/asan.build.log" 2>&1; then
  ASAN_OPTIONS=detect_leaks=0,protect_shadow_gap=0 "$out/leak_and_peak_asan" >"$out/asan.native.out" 2>&1
  native=$?
  ASAN_OPTIONS=detect_leaks=0,protect_shadow_gap=0 "$cli" run -o "$out/asan.%p.bin" -- "$out/leak_and_peak_asan" \
    >"$out/asan.traced.out" 2>&1
  traced=$?
  verdict "ASan program under run" "$([ "$native" = "$traced" ] && ls "$out"/asan.*.bin >/dev/null 2>&1; echo $?)" \
    "exit status $native without the profiler, $traced under cumemtrace run; trace written: $(ls "$out"/asan.*.bin 2>/dev/null | wc -l)"
else
  echo "NOTE ASan program: nvcc could not build it (asan.build.log)" >>"$summary"
fi

# 4. file-size limit
bash -c "ulimit -f 1024; exec timeout -k 10 240 '$cli' run -o '$out/fsize.%p.bin' -- '$py' '$mlp' --steps 5" \
  >"$out/fsize.out" 2>"$out/fsize.err"
frc=$?
warn=$(grep -c "cumemtrace:" "$out/fsize.err")
verdict "ulimit -f 1024" "$([ "$frc" = 0 ]; echo $?)" "exit status $frc; shim messages: $warn ($(grep cumemtrace: "$out/fsize.err" | head -n 3 | tr '\n' '|'))"

# 5. hot-path figures
{
  [ -x "$build/bench/bench_record_cost" ] && "$build/bench/bench_record_cost" 2000000 21
  [ -x "$build/bench/bench_clock_cost" ] && "$build/bench/bench_clock_cost"
  [ -x "$build/bench/bench_nvtx_cost" ] && sh "$root/bench/nvtx_cost.sh" "$build"
} >"$out/bench.txt" 2>&1
sed 's/^/NOTE bench: /' "$out/bench.txt" >>"$summary"
cat "$summary"
exit $status
