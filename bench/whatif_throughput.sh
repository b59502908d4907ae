#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The what-if replay's speed (issue 28: 10 million tensor events in at most
# 5 s on one core): the allocator model alone per setting, then
# `cumemtrace whatif` (the recorded settings, one replay) and
# `cumemtrace whatif --compare` (seven) on a trace of the same requests, the
# analyzer kept to one thread.
#
#   bench/whatif_throughput.sh BUILD [EVENTS]
set -eu
build="$1"
events="${2:-10000000}"
dir="$build/bench-data"
mkdir -p "$dir"
"$build/bench/whatif_replay" "$events"
trace="$dir/whatif-$events.bin"
[ -f "$trace" ] || "$build/bench/whatif_replay" --write "$trace" "$events"
# wall time, and the CPU time the command used (user + system: on a shared
# machine, what one core spent; bash's time keyword)
TIMEFORMAT='%U %S'
for args in "" "--compare"; do
  start=$(date +%s.%N)
  cpu=$( { time CUMEMTRACE_ANALYZER_THREADS=1 "$build/analyzer/cumemtrace" whatif --no-symbols $args "$trace" \
      >/dev/null; } 2>&1 | tail -n 1)
  end=$(date +%s.%N)
  echo "cumemtrace whatif $args on $events tensor events, one thread: $(echo "$end - $start" | bc) s," \
    "cpu $(echo "$cpu" | awk '{print $1 + $2}') s"
done
