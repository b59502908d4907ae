#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the shim's time goes on cudaMallocAsync+cudaFreeAsync pairs
# (docs/performance.md, "GPU figures"): the same program (alloc_pairs.cu,
# dynamic runtime) natively and under the shim switched on step by step,
# each configuration in its own process, ROUNDS rounds alternating:
#
#   native               no shim
#   disabled             shim loaded, CUMEMTRACE_DISABLE=1: interposition only
#   no stacks            recording, CUMEMTRACE_STACK_DEPTH=0
#   no stacks, no sampler  the same with CUMEMTRACE_SAMPLE_MS=0
#   no stacks, shm       the same with the trace on /dev/shm
#   no stacks, populate inline / off   the trace's pages made writable by the
#                        recording thread / not ahead at all (CUMEMTRACE_POPULATE;
#                        the default is the shim's helper thread)
#   stacks               recording with stacks (default depth)
#
#   bench/gpu/async_pair_ablation.sh OUTDIR
#
# On the H200 a process's pairs run in one of two speeds (about 650-800 and
# 1,100-1,500 ns per pair, whatever the configuration, decided per process),
# so the summary gives, besides the median ratio to the native process of the
# same round, each configuration's fastest process: a comparison within the
# fast mode. Two tables: by each process's median block, and by its mean over
# all blocks, which includes what happens once per many pairs (chunk claims,
# the trace file's page faults). About a minute with the defaults. Uses $CMT_BUILD (default
# build/; the GPU bundle's .gpu/build works), nvcc from $CUDA_ROOT (default
# /usr/local/cuda), ROUNDS (default 16), BLOCKS (timed blocks of 2,000 pairs
# per process, default 15) and PIN_CPUS (as run_overhead_bench.sh: default
# the 4 highest-numbered CPUs this script may use, or all of them when it
# may use fewer than 8; none: no pinning).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds="${ROUNDS:-16}"
blocks="${BLOCKS:-15}"
# shellcheck source=bench/gpu/lib.sh
. "$here/lib.sh"
gpu_bench_paths "$1"
gpu_bench_need_shim async_pair_ablation
gpu_bench_pin async_pair_ablation
gpu_bench_alloc_pairs async_pair_ablation
results="$out/ablation.jsonl"
: >"$results"
trace="$out/ablation-trace.bin"
shm_trace="/dev/shm/cumemtrace-ablation-$$.bin"
configs=("native" "disabled" "no stacks" "no stacks, no sampler" "no stacks, shm" "no stacks, populate inline"
  "no stacks, populate off" "stacks")
for round in $(seq 1 "$rounds"); do
  for config in "${configs[@]}"; do
    base=("LD_PRELOAD=$shim" CUMEMTRACE_QUIET=1 "CUMEMTRACE_OUTPUT=$trace")
    case "$config" in
      native) envs=() ;;
      disabled) envs=("${base[@]}" CUMEMTRACE_DISABLE=1) ;;
      "no stacks") envs=("${base[@]}" CUMEMTRACE_STACK_DEPTH=0) ;;
      "no stacks, no sampler") envs=("${base[@]}" CUMEMTRACE_STACK_DEPTH=0 CUMEMTRACE_SAMPLE_MS=0) ;;
      "no stacks, shm") envs=("LD_PRELOAD=$shim" CUMEMTRACE_QUIET=1 "CUMEMTRACE_OUTPUT=$shm_trace"
        CUMEMTRACE_STACK_DEPTH=0) ;;
      "no stacks, populate inline") envs=("${base[@]}" CUMEMTRACE_STACK_DEPTH=0 CUMEMTRACE_POPULATE=inline) ;;
      "no stacks, populate off") envs=("${base[@]}" CUMEMTRACE_STACK_DEPTH=0 CUMEMTRACE_POPULATE=off) ;;
      stacks) envs=("${base[@]}") ;;
    esac
    line="$(env "${envs[@]}" "${pin[@]}" timeout 120 "$program" pairs --api async --blocks "$blocks" | tail -n 1)"
    if [ "${line:0:1}" = "{" ]; then
      printf '{"round": %d, "config": "%s", "result": %s}\n' "$round" "$config" "$line" >>"$results"
    else
      printf '{"round": %d, "config": "%s", "failed": 1}\n' "$round" "$config" >>"$results"
    fi
    rm -f "$trace" "$shm_trace"
  done
done
python3 - "$results" <<'EOF' | tee "$out/summary.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
order = []
def table(figure, what):
    by = {}
    for r in rows:
        if r["config"] not in order:
            order.append(r["config"])
        if "result" in r and figure in r["result"]:
            by.setdefault(r["config"], {})[r["round"]] = r["result"][figure]
    native = by.get("native", {})
    if not native:
        return
    print(f"cudaMallocAsync+cudaFreeAsync pairs, dynamic runtime; ns per pair per process ({what})")
    print(f"{'configuration':24} {'median':>8} {'fastest':>8} {'ratio':>7} {'q1..q3':>13} "
          f"{'fastest - native fastest':>25}")
    fast_native = min(native.values())
    for c in order:
        v = by.get(c, {})
        if not v:
            print(f"{c:24} failed")
            continue
        ratios = sorted(v[k] / native[k] for k in v if k in native)
        q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
        fast = min(v.values())
        print(f"{c:24} {statistics.median(v.values()):8.0f} {fast:8.0f} {statistics.median(ratios):7.3f} "
              f"{q(0.25):6.3f}..{q(0.75):.3f} {fast - fast_native:+25.0f}")
table("median_ns_per_pair", "its median block")
# The median block hides what happens once per many pairs (a chunk claim, the
# trace's page faults); the mean over all blocks includes it.
table("mean_ns_per_pair", "its mean over all blocks")
failed = sum(1 for r in rows if "failed" in r)
print(f"{len(rows)} processes, {failed} failed")
EOF
