#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a cudaMallocAsync+cudaFreeAsync pair's time goes, natively and under
# the shim (docs/performance.md, "Profile of the async pair"), with perf:
#
#   bench/gpu/profile_async_pair.sh OUTDIR
#
# Each configuration (native; shim disabled; recording without stacks;
# recording with stacks) runs alloc_pairs.cu (dynamic runtime) ROUNDS times,
# alternating, under `perf record` (cpu-clock, one sample every PERIOD_NS),
# which the program switches on in its timed blocks only (perf's control
# fifos): start-up and synchronisations are left out. The summary gives, for
# each configuration's fastest process (the H200's processes run in one of
# two speeds), the time per pair in each library and in the top functions:
# samples x period / pairs; the shim's own helper thread (cumemtrace-pop,
# page_populate.h) in rows of its own. Writes summary.txt, the samples per library and
# function of every process (samples-CONFIG-ROUND.csv), the shim's samples by
# function offset (shim-samples-CONFIG-ROUND.txt, for addr2line against the
# same build) and profile.tar.gz holding them all. PERF is the perf to run
# (default perf; scripts/gpu_bundle.sh with CMT_BUNDLE_PERF=1 carries one to
# .gpu/perf/perf); CMT_BUILD, CUDA_ROOT and PIN_CPUS as in
# run_overhead_bench.sh; ROUNDS (default 3), BLOCKS (timed blocks of 2,000
# pairs, default 400), PERIOD_NS (default 20000); API=plain profiles
# cudaMalloc+cudaFree pairs instead (blocks of 40 pairs). About a minute.
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
perf="${PERF:-perf}"
rounds="${ROUNDS:-3}"
blocks="${BLOCKS:-400}"
period="${PERIOD_NS:-20000}"
api="${API:-async}"
# shellcheck source=bench/gpu/lib.sh
. "$here/lib.sh"
gpu_bench_paths "$1"
gpu_bench_need_shim profile_async_pair
if ! "$perf" record -q -e cpu-clock -o "$out/perf-check.data" -- true 2>"$out/perf-check.log"; then
  echo "profile_async_pair: '$perf record' does not run here: $out/perf-check.log" >&2
  exit 1
fi
rm -f "$out/perf-check.data"
gpu_bench_pin profile_async_pair
gpu_bench_alloc_pairs profile_async_pair
trace="$out/profile-trace.bin"
configs=(native disabled nostacks stacks)
ctl="$out/perf-ctl.fifo"
ack="$out/perf-ack.fifo"
rm -f "$ctl" "$ack"
mkfifo "$ctl" "$ack"
for round in $(seq 1 "$rounds"); do
  for config in "${configs[@]}"; do
    base=("LD_PRELOAD=$shim" CUMEMTRACE_QUIET=1 "CUMEMTRACE_OUTPUT=$trace")
    case "$config" in
      native) envs=() ;;
      disabled) envs=("${base[@]}" CUMEMTRACE_DISABLE=1) ;;
      nostacks) envs=("${base[@]}" CUMEMTRACE_STACK_DEPTH=0) ;;
      stacks) envs=("${base[@]}") ;;
    esac
    name="$config-$round"
    data="$out/record-$name.data"
    env "${envs[@]}" CMT_PERF_CTL="$ctl" CMT_PERF_ACK="$ack" "${pin[@]}" \
      "$perf" record -q -D -1 --control "fifo:$ctl,$ack" -e cpu-clock -c "$period" -o "$data" -- \
      "$program" pairs --api "$api" --blocks "$blocks" 2>"$out/record-$name.log" | tail -n 1 >"$out/result-$name.json"
    rm -f "$trace"
    "$perf" report -i "$data" --stdio -F overhead,sample,comm,dso,sym --sort comm,dso,sym -t, --percent-limit 0 \
      2>/dev/null | grep -v '^#' | grep -v '^$' >"$out/samples-$name.csv"
    "$perf" script -i "$data" -F ip,sym,symoff,dso 2>/dev/null | grep libcumemtrace |
      awk '{print $2}' | sort | uniq -c | sort -rn >"$out/shim-samples-$name.txt"
    rm -f "$data"
  done
done
rm -f "$ctl" "$ack"
python3 "$here/profile_summary.py" "$out" "$period" | tee "$out/summary.txt"
(cd "$out" && tar -czf profile.tar.gz summary.txt samples-*.csv shim-samples-*.txt result-*.json)
