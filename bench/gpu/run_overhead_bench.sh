#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Recording overhead on a real GPU (docs/performance.md, "Recording overhead"):
#
#   1. alloc_pairs.cu, built with `nvcc -cudart shared` and with plain nvcc
#      (static runtime): cudaMallocAsync+cudaFreeAsync and cudaMalloc+cudaFree
#      pairs from a call site about 24 frames deep, natively and under the
#      shim (no stacks; stacks; stacks without the stack cache; for async
#      pairs also no stacks with CUMEMTRACE_CLOCK=monotonic, the timestamp
#      from clock_gettime instead of the TSC), each configuration in its own
#      process, alternating, ROUNDS times;
#   2. the native cost of what the shim adds per event (clock_gettime, rdtsc,
#      cudaGetDevice, cuCtxGetDevice, a 24-frame unw_backtrace);
#   3. torch_train.py: a training loop's step time natively and under the
#      shim, with the caching allocator and with PYTORCH_NO_CUDA_MEMORY_CACHING=1,
#      alternating; the trace's bytes per event;
#   4. the check modes of both caches on the same programs (no cached stack
#      or device may differ from a fresh answer), and a context-switching
#      program (ctx_switch.cu) for the device cache;
#   5. the CPU benchmark (bench/run_cpu_bench.py) on this machine's CPU, when
#      the build tree has it.
#
#   bench/gpu/run_overhead_bench.sh OUTDIR
#
# About six minutes on an H200 (the 4-round version took 210 s; every part's
# start time is printed). Prints the table at the end (also in
# OUTDIR/summary.txt; every measurement in OUTDIR/results.jsonl). A part that
# fails (a build, a run, a run past RUN_TIMEOUT seconds, default 180) is
# recorded and the rest goes on. Uses the build in $CMT_BUILD (default: build/
# at the top of the tree; built with meson if missing; the gpu bundle's
# .gpu/build works too, without the CPU benchmark), nvcc from $CUDA_ROOT
# (default /usr/local/cuda) and $PYTHON (default python3) with PyTorch;
# ROUNDS (default 8) and TORCH_ROUNDS (default 3) set the repetitions.
#
# Every measured process runs pinned with `taskset -c` to one fixed set of
# CPUs (PIN_CPUS, default: the 4 highest-numbered CPUs this script may use,
# or all of them when it may use fewer than 8; PIN_CPUS=none: no pinning; no
# taskset: no pinning), so that the native and the shim runs of a round meet
# the same CPUs, caches and interrupt load. machine.txt says which.
#
# machine.txt's "cumemtrace:" line names the shim measured: the build id
# recorded in $CMT_BUILD/build-id.txt (git commit, "-dirty" when the tree had
# uncommitted changes) by scripts/gpu_bundle.sh or by this script when it
# builds; else the git HEAD of this tree, marked as such.
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
rounds="${ROUNDS:-8}"
torch_rounds="${TORCH_ROUNDS:-3}"
run_timeout="${RUN_TIMEOUT:-180}"
# shellcheck source=bench/gpu/lib.sh
. "$here/lib.sh"
gpu_bench_paths "$1"
results="$out/results.jsonl"
: >"$results"
mkdir -p "$out/traces" "$out/logs"
# The source a tree is at: commit, "-dirty" with uncommitted changes to
# tracked files; "unknown" outside git.
tree_id() {
  local rev
  rev="$(git -C "$root" rev-parse HEAD 2>/dev/null)" || { echo unknown; return; }
  [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && rev="$rev-dirty"
  echo "$rev"
}
if [ ! -f "$shim" ]; then
  echo "run_overhead_bench: no build in $build; building it (meson setup + compile)"
  (cd "$root" && { [ -f "$build/build.ninja" ] || meson setup "$build" -Dcuda-root="$cuda_root"; } &&
    meson compile -C "$build") >"$out/logs/build.log" 2>&1
  if [ ! -f "$shim" ]; then
    echo "run_overhead_bench: no shim at $shim and the build failed (see $out/logs/build.log): set CMT_BUILD" >&2
    exit 1
  fi
  tree_id >"$build/build-id.txt"
fi
# The CPUs every measured process is pinned to (see the top).
gpu_bench_pin run_overhead_bench
start=$SECONDS
part() { echo "== $* (at ${SECONDS}s)"; }

# result JSON-FIELDS COMMAND...: runs COMMAND, appends its last stdout line
# (a JSON object) with the fields added, to results.jsonl.
result() {
  local fields="$1"
  shift
  local log="$out/logs/run$((++run_count)).log" rc=0
  timeout -k 10 "$run_timeout" "${pin[@]}" "$@" >"$log.out" 2>"$log.err" || rc=$?
  local line
  line="$(tail -n 1 "$log.out")"
  if [ "$rc" -eq 0 ] && [ "${line:0:1}" = "{" ]; then
    printf '{%s, "result": %s}\n' "$fields" "$line" >>"$results"
  else
    [ "$rc" -eq 124 ] && echo "timed out after ${run_timeout}s" >>"$log.err"
    printf '{%s, "failed": %d, "log": "%s"}\n' "$fields" "$rc" "$log.err" >>"$results"
    echo "  failed (exit $rc): $* (see $log.err)"
  fi
}
# failed JSON-FIELDS WHY: a part that could not run at all.
failed() {
  printf '{%s, "failed": -1, "log": "%s"}\n' "$1" "$2" >>"$results"
  echo "  failed: $2"
}
run_count=0

part "machine"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm,persistence_mode --format=csv,noheader 2>&1
  lscpu 2>/dev/null | grep -E "^(Model name|CPU\(s\)|Thread|Socket|NUMA node\(s\))"
  echo "kernel: $(uname -r)"
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  # What CUMEMTRACE_CLOCK=auto needs for the TSC: an invariant TSC (the
  # kernel's constant_tsc and nonstop_tsc flags) and clocksource tsc.
  echo "tsc flags: $(grep -m1 -o -w -E 'constant_tsc|nonstop_tsc' /proc/cpuinfo 2>/dev/null | tr '\n' ' ')"
  "$cuda_root/bin/nvcc" --version 2>&1 | tail -n 1
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1
  if [ -s "$build/build-id.txt" ]; then
    echo "cumemtrace: $(head -n 1 "$build/build-id.txt") (build id of $build)"
  else
    echo "cumemtrace: $(tree_id) (git HEAD of $root: $build has no build-id.txt)"
  fi
  echo "shim: $shim, sha256 $(sha256sum "$shim" 2>/dev/null | cut -c1-16)"
  echo "pinned to CPUs: ${pin_cpus:-none}"
} >"$out/machine.txt"
cat "$out/machine.txt"

part "build"
nvcc="$cuda_root/bin/nvcc"
variants=() # the runtimes whose programs built
for variant in dynamic static; do
  flags=""
  [ "$variant" = dynamic ] && flags="-cudart shared"
  # shellcheck disable=SC2086
  if "$nvcc" -O2 -g $flags -o "$out/alloc_pairs_$variant" "$here/alloc_pairs.cu" -lcuda -ldl \
      >"$out/logs/nvcc_$variant.log" 2>&1 &&
    "$nvcc" -O2 -g $flags -o "$out/ctx_switch_$variant" "$here/ctx_switch.cu" -lcuda \
      >>"$out/logs/nvcc_$variant.log" 2>&1; then
    variants+=("$variant")
  else
    failed "\"part\": \"build\", \"variant\": \"$variant\"" "nvcc failed: $out/logs/nvcc_$variant.log"
  fi
done

# Shim configurations: sets envs to the environment of CONFIG, traces to TRACE.
shim_env() { # CONFIG TRACE
  envs=()
  [ "$1" = native ] && return
  envs=("LD_PRELOAD=$shim" CUMEMTRACE_QUIET=1 "CUMEMTRACE_OUTPUT=$2")
  case "$1" in
    "no stacks") envs+=(CUMEMTRACE_STACK_DEPTH=0) ;;
    "stacks, no cache") envs+=(CUMEMTRACE_STACK_CACHE=0) ;;
    "stacks, no device cache") envs+=(CUMEMTRACE_DEVICE_CACHE=0) ;;
    "no stacks, clock_gettime") envs+=(CUMEMTRACE_STACK_DEPTH=0 CUMEMTRACE_CLOCK=monotonic) ;;
  esac
}

part "allocation pairs: $rounds rounds"
for round in $(seq 1 "$rounds"); do
  for variant in "${variants[@]}"; do
    for api in async plain; do
      if [ "$api" = async ]; then
        configs=("native" "no stacks" "no stacks, clock_gettime" "stacks" "stacks, no cache"
          "stacks, no device cache")
      else
        configs=("native" "no stacks" "stacks")
      fi
      for config in "${configs[@]}"; do
        rm -f "$out"/traces/pairs*.bin
        shim_env "$config" "$out/traces/pairs.bin"
        result "\"part\": \"pairs\", \"variant\": \"$variant\", \"api\": \"$api\", \"config\": \"$config\", \"round\": $round" \
          env "${envs[@]}" "$out/alloc_pairs_$variant" pairs --api "$api"
        # The first round's trace with stacks: its size and stack depth.
        if [ "$round" = 1 ] && [ "$config" = stacks ] && [ -f "$out/traces/pairs.bin" ]; then
          "$python" "$here/trace_bytes.py" "$out/traces/pairs.bin" 2>>"$out/logs/trace_bytes.err" |
            sed "s/^{/{\"part\": \"pairs_trace\", \"variant\": \"$variant\", \"api\": \"$api\", /" >>"$results"
        fi
      done
    done
  done
done
rm -f "$out"/traces/pairs*.bin

part "native cost of each part of an event"
for variant in "${variants[@]}"; do
  result "\"part\": \"parts\", \"variant\": \"$variant\"" "$out/alloc_pairs_$variant" parts
done

part "check modes"
for variant in "${variants[@]}"; do
  for api in async plain; do
    result "\"part\": \"check\", \"variant\": \"$variant\", \"api\": \"$api\"" \
      env LD_PRELOAD="$shim" CUMEMTRACE_OUTPUT="$out/traces/check_%p.bin" CUMEMTRACE_STACK_CACHE=check \
      CUMEMTRACE_DEVICE_CACHE=check "$out/alloc_pairs_$variant" pairs --api "$api" --blocks 3
    cp "$out/logs/run$run_count.log.err" "$out/logs/check_${variant}_$api.txt"
  done
  result "\"part\": \"check\", \"variant\": \"$variant\", \"api\": \"contexts\"" \
    env LD_PRELOAD="$shim" CUMEMTRACE_OUTPUT="$out/traces/check_%p.bin" CUMEMTRACE_STACK_CACHE=check \
    CUMEMTRACE_DEVICE_CACHE=check "$out/ctx_switch_$variant"
  cp "$out/logs/run$run_count.log.err" "$out/logs/check_${variant}_contexts.txt"
done
rm -f "$out"/traces/check_*.bin

if "$python" -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  part "PyTorch training loop: $torch_rounds rounds per allocator"
  for alloc in caching no_caching; do
    alloc_env=(-u PYTORCH_NO_CUDA_MEMORY_CACHING) # any value, even 0, turns caching off
    steps=(--warmup 30 --steps 200)
    if [ "$alloc" = no_caching ]; then
      alloc_env=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
      # Each step waits for ~320 cudaMalloc/cudaFree (tens of ms): fewer steps.
      steps=(--warmup 10 --steps 100)
    fi
    for round in $(seq 1 "$torch_rounds"); do
      for config in native stacks; do
        trace="$out/traces/torch_${alloc}_$round.bin"
        rm -f "$trace"
        shim_env "$config" "$trace"
        result "\"part\": \"torch\", \"alloc\": \"$alloc\", \"config\": \"$config\", \"round\": $round" \
          env "${alloc_env[@]}" "${envs[@]}" "$python" "$here/torch_train.py" "${steps[@]}"
        if [ "$config" = stacks ] && [ -f "$trace" ]; then
          "$python" "$here/trace_bytes.py" "$trace" 2>>"$out/logs/trace_bytes.err" |
            sed "s/^{/{\"part\": \"torch_trace\", \"alloc\": \"$alloc\", \"round\": $round, /" >>"$results"
        fi
      done
    done
  done
  result "\"part\": \"check\", \"variant\": \"torch\", \"api\": \"no_caching\"" \
    env PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD="$shim" CUMEMTRACE_OUTPUT="$out/traces/check_%p.bin" \
    CUMEMTRACE_STACK_CACHE=check CUMEMTRACE_DEVICE_CACHE=check "$python" "$here/torch_train.py" --warmup 5 --steps 20
  cp "$out/logs/run$run_count.log.err" "$out/logs/check_torch.txt"
  rm -f "$out"/traces/check_*.bin
  # Keep one trace per allocator (the last round's), drop the rest.
  find "$out/traces" -name 'torch_*_[12].bin' -delete
else
  part "PyTorch: skipped ($python has no torch with CUDA)"
fi

if [ -f "$build/build.ninja" ] && [ ! -x "$build/bench/cpu/alloc_loop" ]; then
  meson compile -C "$build" bench-cpu-programs >"$out/logs/bench_build.log" 2>&1 ||
    echo "  building the CPU benchmark failed: see $out/logs/bench_build.log"
fi
if [ -x "$build/bench/cpu/alloc_loop" ] && [ -x "$build/bench/trace_stats" ]; then
  part "CPU benchmark on the simulated device"
  timeout -k 10 300 "${pin[@]}" "$python" "$root/bench/run_cpu_bench.py" --build "$build" --reps 5 \
    --json "$out/cpu_bench.json" \
    >"$out/cpu_bench.txt" 2>"$out/logs/cpu_bench.err" || {
    failed "\"part\": \"cpu\"" "cpu benchmark failed: $out/logs/cpu_bench.err"
    rm -f "$out/cpu_bench.txt"
  }
else
  part "CPU benchmark: skipped (no bench programs in $build: meson compile -C $build bench-cpu-programs)"
fi

part "summary (${SECONDS}s in all)"
"$python" "$here/summarize.py" "$out" | tee "$out/summary.txt"
if [ -f "$out/cpu_bench.txt" ]; then
  { echo; echo "CPU benchmark (bench/run_cpu_bench.py) on this machine"; cat "$out/cpu_bench.txt"; } |
    tee -a "$out/summary.txt"
fi
failures=$(grep -c '"failed"' "$results")
echo "run_overhead_bench: $((SECONDS - start))s, $failures failed runs; results in $out"
[ "$failures" -eq 0 ]
