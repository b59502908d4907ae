#!/bin/sh
# SPDX-License-Identifier: MIT
# The cost of an NVTX push/pop pair: bare (no NVTX tool: the calls are
# no-ops), and with the shim as the NVTX tool recording every range
# (docs/performance.md, "Phases").
#   bench/nvtx_cost.sh BUILD_DIR [PAIRS]
set -eu
build=${1:?usage: nvtx_cost.sh BUILD_DIR [PAIRS]}
pairs=${2:-300000}
shim="$build/preload/libcumemtrace.so"
bench="$build/bench/bench_nvtx_cost"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== without a tool"
env -u NVTX_INJECTION64_PATH "$bench" "$pairs"
echo "== under the shim (LD_PRELOAD, NVTX_INJECTION64_PATH), recording"
LD_PRELOAD="$shim" NVTX_INJECTION64_PATH="$shim" CUMEMTRACE_QUIET=1 CUMEMTRACE_OUTPUT="$out/t.%p.bin" "$bench" "$pairs"
ls -l "$out"/*.bin | awk '{print "  trace: " $5 " bytes"}'
