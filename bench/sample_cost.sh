#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cost of device sampling: bench/sample_cost natively and under the shim
# with sampling at exit and start only (CUMEMTRACE_SAMPLE_MS=0), the default
# (100 ms) and every millisecond (1), and how many samples each trace holds.
#
#   bench/sample_cost.sh SAMPLE_COST_BINARY SHIM CLI [PAIRS [KEEPDIR]]
#
# KEEPDIR: where to keep `cumemtrace frag` of each traced run
# (sample_cost.msN.frag.txt); the traces themselves are removed.
# For the simulated device run it with LD_LIBRARY_PATH pointing at the
# simulator (meson benchmark does); on a GPU, as samples/gpu/run_frag_validation.sh does.
set -euo pipefail
bin=$1 shim=$2 cli=$3 pairs=${4:-200000} keep=${5:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "== native"
"$bin" "$pairs"
for ms in 0 100 1; do
  echo "== under the shim, CUMEMTRACE_SAMPLE_MS=$ms"
  LD_PRELOAD="$shim" CUMEMTRACE_QUIET=1 CUMEMTRACE_SAMPLE_MS=$ms CUMEMTRACE_OUTPUT="$dir/t$ms.%p.bin" "$bin" "$pairs"
  if [ -n "$keep" ]; then
    "$cli" frag --no-symbols "$dir"/t$ms.*.bin >"$keep/sample_cost.ms$ms.frag.txt"
  fi
  "$cli" frag --json --no-symbols "$dir"/t$ms.*.bin | python3 -c '
import json, sys
r = json.load(sys.stdin)
n = sum(d["samples"] for d in r["device_samples"])
print(f"samples in the trace: {n}")'
done
