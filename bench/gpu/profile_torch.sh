#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shim's own time in a PyTorch training loop (docs/performance.md,
# "Profile of the async pair"), with perf, where comparing step times cannot
# resolve it (on the H200, a process's median step time varies by 20% from
# one process to the next):
#
#   bench/gpu/profile_torch.sh OUTDIR
#
# torch_train.py runs under the shim (stacks on, the default) and `perf
# record` (cpu-clock, one sample every PERIOD_NS), ROUNDS times each with the
# caching allocator and with PYTORCH_NO_CUDA_MEMORY_CACHING=1. The samples in
# libcumemtrace.so, over the steps the process ran (warm-up and start-up
# included, so an upper bound), give the shim's ns per step; over the
# process's median step time, its share. The kernel's work on the trace file
# is not in that figure (its page faults: about 3 us per 4 KiB written, so
# about 15 ns per event at 19 bytes per event). Writes summary.txt and per-run
# samples. PERF, CMT_BUILD, PIN_CPUS as profile_async_pair.sh; PYTHON (default
# python3) with PyTorch; ROUNDS (default 3); PERIOD_NS (default 50000).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
perf="${PERF:-perf}"
python="${PYTHON:-python3}"
rounds="${ROUNDS:-3}"
period="${PERIOD_NS:-50000}"
# shellcheck source=bench/gpu/lib.sh
. "$here/lib.sh"
gpu_bench_paths "$1"
gpu_bench_need_shim profile_torch
gpu_bench_pin profile_torch
trace="$out/profile-torch-trace.bin"
for round in $(seq 1 "$rounds"); do
  for alloc in caching no_caching; do
    alloc_env=()
    [ "$alloc" = no_caching ] && alloc_env=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
    name="$alloc-$round"
    data="$out/record-$name.data"
    env "${alloc_env[@]}" "LD_PRELOAD=$shim" CUMEMTRACE_QUIET=1 "CUMEMTRACE_OUTPUT=$trace" "${pin[@]}" \
      "$perf" record -q -e cpu-clock -c "$period" -o "$data" -- \
      "$python" "$here/torch_train.py" 2>"$out/record-$name.log" | tail -n 1 >"$out/result-$name.json"
    rm -f "$trace"
    "$perf" report -i "$data" --stdio -F overhead,sample,dso --sort dso -t, --percent-limit 0 \
      2>/dev/null | grep -v '^#' | grep -v '^$' >"$out/samples-$name.csv"
    rm -f "$data"
  done
done
python3 - "$out" "$period" <<'EOF' | tee "$out/summary.txt"
import csv, glob, json, os, sys
out, period = sys.argv[1], int(sys.argv[2])
print("torch_train.py under the shim (stacks on): the shim's own samples per step")
print(f"{'allocator':11} {'round':>5} {'steps':>6} {'median step ms':>15} {'shim us/step':>13} {'share':>8}")
for path in sorted(glob.glob(os.path.join(out, "result-*.json"))):
    name = os.path.basename(path)[len("result-"):-len(".json")]
    alloc, rnd = name.rsplit("-", 1)
    try:
        r = json.load(open(path))
    except ValueError:
        print(f"{alloc:11} {rnd:>5} failed")
        continue
    shim = 0
    for row in csv.reader(open(os.path.join(out, f"samples-{name}.csv"))):
        if len(row) >= 3 and "libcumemtrace" in row[2]:
            shim += int(row[1].strip())
    us = shim * period / 1000 / r["steps_total"]
    print(f"{alloc:11} {rnd:>5} {r['steps_total']:>6} {r['median_step_ms']:>15.3f} {us:>13.2f} "
          f"{us / 1000 / r['median_step_ms']:>8.4%}")
EOF
