#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of `cumemtrace check` / `cumemtrace run --check`
# (docs/check.md, "Validation on a GPU"). Run on the GPU machine from a copy
# of the built tree:
#
#   samples/gpu/run_check_validation.sh OUTDIR
#
# It builds samples/leak_and_peak.cu and samples/clean_run.cu with
# `nvcc -g -O1 -cudart shared`, runs each under compute-sanitizer
# --leak-check full and under `cumemtrace run --check`, and compares:
#   1. leak_and_peak fails the check (status 1) with the bytes and the number
#      of allocations compute-sanitizer reports leaked (the sample's source
#      says 301989888 bytes = 288 MiB in 5 allocations);
#   2. clean_run passes the check (status 0) and compute-sanitizer reports 0
#      bytes leaked;
#   3. budgets on the GPU: leak_and_peak peaks at 480 MiB on device 0, so
#      --max-peak 480MiB passes and 479MiB fails; clean_run peaks at 512 MiB;
#   4. the JSON, JUnit and SARIF reports of the failing run parse.
# Everything goes to OUTDIR: logs, traces, reports, and summary.txt with one
# PASS/FAIL line per comparison. Exit status 0 when every comparison passed.
#
# Environment: CMT_BUILD (default: build/ of this tree), CUDA_ROOT (default
# /usr/local/cuda), PYTHON (default python3).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${CMT_BUILD:-$root/build}
cli=$build/analyzer/cumemtrace
cuda=${CUDA_ROOT:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
py=${PYTHON:-python3}
sanitizer=$(command -v compute-sanitizer || echo "$cuda/bin/compute-sanitizer")
summary=$out/summary.txt
failures=0
: >"$summary"

say() { echo "$*" | tee -a "$summary"; }
verdict() { # verdict NAME CONDITION-STATUS DETAIL
  if [ "$2" -eq 0 ]; then say "PASS $1: $3"; else say "FAIL $1: $3"; failures=$((failures + 1)); fi
}

for tool in "$cli" "$nvcc" "$sanitizer"; do
  if [ ! -x "$tool" ]; then
    echo "run_check_validation: $tool not found (set CMT_BUILD or CUDA_ROOT)" >&2
    exit 2
  fi
done

{
  echo "date: $(date -u)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  "$nvcc" --version | tail -n 2
  "$sanitizer" --version | head -n 2
  "$cli" version
} >"$out/environment.txt" 2>&1

mkdir -p "$out/bin" "$out/traces"
for sample in leak_and_peak clean_run; do
  if ! "$nvcc" -g -O1 -cudart shared -o "$out/bin/$sample" "$root/samples/$sample.cu" >"$out/build.$sample.log" 2>&1; then
    say "FAIL build $sample: see build.$sample.log"
    exit 1
  fi
done

# compute-sanitizer's "LEAK SUMMARY: N bytes leaked in M allocations", as "N M".
leak_summary() {
  sed -n 's/.*LEAK SUMMARY: \([0-9]*\) bytes leaked in \([0-9]*\) allocations.*/\1 \2/p' "$1" | tail -n 1
}

# The check's leaked bytes and allocations, as "N M", from its JSON report.
check_leaks() {
  "$py" -c 'import json,sys; t=json.load(open(sys.argv[1]))["traces"]; print(sum(x["leaks"]["bytes"] for x in t), sum(x["leaks"]["count"] for x in t))' "$1"
}

# ---- leak_and_peak: must fail with compute-sanitizer's bytes -----------------
"$sanitizer" --leak-check full --log-file "$out/leak_and_peak.sanitizer.txt" "$out/bin/leak_and_peak" \
  >"$out/leak_and_peak.sanitizer.stdout" 2>&1
CMT_SAMPLE_DEVICE_RESET=1 "$sanitizer" --leak-check full --log-file "$out/leak_and_peak.reset.sanitizer.txt" \
  "$out/bin/leak_and_peak" >"$out/leak_and_peak.reset.sanitizer.stdout" 2>&1
san=$(leak_summary "$out/leak_and_peak.sanitizer.txt")
san_reset=$(leak_summary "$out/leak_and_peak.reset.sanitizer.txt")
say "info compute-sanitizer on leak_and_peak: '${san:-no LEAK SUMMARY}'; with cudaDeviceReset at the end: '${san_reset:-no LEAK SUMMARY}'"
# compute-sanitizer reports leaks when the context is destroyed; the run with
# cudaDeviceReset is the reference when the plain run reported none.
ref=$san
if [ -z "$ref" ] || [ "${ref%% *}" = "0" ]; then ref=$san_reset; fi

"$cli" run -o "$out/traces/leak_and_peak.%p.bin" --check --keep-traces --format json \
  --report-file "$out/leak_and_peak.check.json" -- "$out/bin/leak_and_peak" \
  >"$out/leak_and_peak.stdout" 2>"$out/leak_and_peak.check.stderr"
status=$?
verdict "leak_and_peak fails the check" $([ "$status" -eq 1 ]; echo $?) "run --check exit status $status (expected 1)"
ours=$(check_leaks "$out/leak_and_peak.check.json" 2>/dev/null)
verdict "leak_and_peak leaks as compute-sanitizer says" $([ -n "$ref" ] && [ "$ours" = "$ref" ]; echo $?) \
  "cumemtrace: '$ours', compute-sanitizer: '$ref' (bytes allocations; the source says 301989888 5)"
verdict "leak_and_peak leaks as its source says" $([ "$ours" = "301989888 5" ]; echo $?) "cumemtrace: '$ours'"
trace=$(ls "$out"/traces/leak_and_peak.*.bin 2>/dev/null | head -n 1)
"$cli" check "$trace" >"$out/leak_and_peak.check.txt" 2>&1
"$cli" report "$trace" >"$out/leak_and_peak.report.txt" 2>&1
# The reset variant must leak the same: the program never freed those buffers.
"$cli" run -o "$out/traces/leak_and_peak_reset.%p.bin" --check --format json \
  --report-file "$out/leak_and_peak.reset.check.json" -- env CMT_SAMPLE_DEVICE_RESET=1 "$out/bin/leak_and_peak" \
  >/dev/null 2>"$out/leak_and_peak.reset.check.stderr"
ours_reset=$(check_leaks "$out/leak_and_peak.reset.check.json" 2>/dev/null)
verdict "leak_and_peak with cudaDeviceReset leaks the same" $([ "$ours_reset" = "301989888 5" ]; echo $?) \
  "cumemtrace: '$ours_reset'"

# ---- budgets on the GPU ---------------------------------------------------------
"$cli" check --max-leak-bytes 288MiB --max-peak 480MiB "$trace" >"$out/budget.480.txt" 2>&1
s480=$?
"$cli" check --max-leak-bytes 288MiB --max-peak 479MiB "$trace" >"$out/budget.479.txt" 2>&1
s479=$?
"$cli" check --max-leak-bytes 287MiB "$trace" >"$out/budget.leak287.txt" 2>&1
s287=$?
verdict "budgets" $([ "$s480" -eq 0 ] && [ "$s479" -eq 1 ] && [ "$s287" -eq 1 ]; echo $?) \
  "--max-peak 480MiB: $s480 (expected 0), 479MiB: $s479 (expected 1), --max-leak-bytes 287MiB: $s287 (expected 1)"

# ---- formats ---------------------------------------------------------------
"$cli" check --format junit "$trace" >"$out/leak_and_peak.junit.xml" 2>/dev/null
"$cli" check --format sarif --source-root "$root" "$trace" >"$out/leak_and_peak.sarif" 2>/dev/null
"$py" - "$out/leak_and_peak.junit.xml" "$out/leak_and_peak.sarif" >"$out/formats.txt" 2>&1 <<'PY'
import json, sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
assert len(suite.findall("testcase")) == 1 and suite.get("failures") == "1", "junit"
run = json.load(open(sys.argv[2]))["runs"][0]
locs = [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"].get("region", {}).get("startLine")) for r in run["results"]]
print(locs)
assert len(locs) == 2 and all(u == "samples/leak_and_peak.cu" for _, u, _ in locs), locs
PY
verdict "reports parse (JUnit: 1 failing test case; SARIF: 2 results in samples/leak_and_peak.cu)" $? \
  "see formats.txt"

# ---- clean_run: must pass ------------------------------------------------------
"$sanitizer" --leak-check full --log-file "$out/clean_run.sanitizer.txt" "$out/bin/clean_run" \
  >"$out/clean_run.sanitizer.stdout" 2>&1
CMT_SAMPLE_DEVICE_RESET=1 "$sanitizer" --leak-check full --log-file "$out/clean_run.reset.sanitizer.txt" \
  "$out/bin/clean_run" >/dev/null 2>&1
san_clean=$(leak_summary "$out/clean_run.sanitizer.txt")
san_clean_reset=$(leak_summary "$out/clean_run.reset.sanitizer.txt")
"$cli" run -o "$out/traces/clean_run.%p.bin" --check --keep-traces --max-peak 512MiB --format json \
  --report-file "$out/clean_run.check.json" -- "$out/bin/clean_run" >"$out/clean_run.stdout" 2>"$out/clean_run.check.stderr"
status=$?
verdict "clean_run passes the check" $([ "$status" -eq 0 ]; echo $?) "run --check exit status $status (expected 0)"
verdict "compute-sanitizer finds clean_run clean" \
  $([ "${san_clean:-0 0}" = "0 0" ] && [ "${san_clean_reset:-0 0}" = "0 0" ]; echo $?) \
  "compute-sanitizer: '${san_clean:-no LEAK SUMMARY}', with reset: '${san_clean_reset:-no LEAK SUMMARY}'"
ctrace=$(ls "$out"/traces/clean_run.*.bin 2>/dev/null | head -n 1)
"$cli" check --max-peak 511MiB "$ctrace" >"$out/clean_run.budget511.txt" 2>&1
verdict "clean_run peaks at 512 MiB" $([ $? -eq 1 ]; echo $?) "--max-peak 511MiB fails, 512MiB passes"
"$cli" report "$ctrace" >"$out/clean_run.report.txt" 2>&1

# ---- informational: nvcc's default static cudart ---------------------------
# Without -cudart shared the allocations reach the driver only through
# cuGetProcAddress: cumemtrace sees them once the driver-API hooks (issue 3)
# are in the build. Recorded for the record, not judged.
if "$nvcc" -g -O1 -o "$out/bin/leak_and_peak_static" "$root/samples/leak_and_peak.cu" >/dev/null 2>&1; then
  "$cli" run -o "$out/traces/leak_and_peak_static.%p.bin" --check --keep-traces --format json \
    --report-file "$out/leak_and_peak_static.check.json" -- "$out/bin/leak_and_peak_static" \
    >/dev/null 2>"$out/leak_and_peak_static.check.stderr"
  say "info static cudart: run --check exit status $?, leaks '$(check_leaks "$out/leak_and_peak_static.check.json" 2>/dev/null || echo "no trace")' (needs the driver-API hooks to see anything)"
fi

say "validation: $failures failed comparisons; files in $out"
[ "$failures" -eq 0 ]
