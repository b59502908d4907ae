#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU traces for the pictures of issue 17 (docs/html.md): PyTorch
# training under `cumemtrace run`, then the one-file HTML report, the
# Perfetto JSON and the folded stacks of each, for a person to look at
# (screenshots are taken off the GPU machine, in headless Chromium).
#
#   samples/gpu/run_html_validation.sh OUTDIR
#
#   mlp_cached    train_mlp.py, PyTorch's default caching allocator
#   mlp_nocache   train_mlp.py with PYTORCH_NO_CUDA_MEMORY_CACHING=1: one
#                 cudaMalloc per tensor, the script's lines at the peak
#   phases        torch_phases.py: NVTX ranges and steps drawn as bands
#
# For each NAME: NAME.bin, NAME.html (report --format html), NAME.perfetto.json
# (export --format perfetto), NAME.folded (export --format folded), NAME.head.txt
# (the text report's first 40 lines) and figures in summary.txt (FAIL lines
# when a step failed; exit status 0 when none did). Uses the build in
# $CMT_BUILD (default build/; scripts/gpu_bundle.sh's .gpu/build with
# LD_LIBRARY_PATH=.gpu/lib works) and $PYTHON (default python3) with PyTorch.
# Each traced run is limited to 90 s.
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
summary="$out/summary.txt"
: >"$summary"
status=0
if [ ! -x "$cli" ]; then
  echo "run_html_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1

# traced NAME SCRIPT [ENV=VALUE...] [-- ARGS]
traced() {
  local name=$1 script=$2
  shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  rm -f "$out/$name".*.bin
  env "${envs[@]}" timeout -k 10 90 "$cli" run -o "$out/$name.%p.bin" -- "$py" "$script" "$@" \
    >"$out/$name.stdout" 2>"$out/$name.stderr"
  local rc=$?
  mv "$out/$name".*.bin "$out/$name.bin" 2>/dev/null
  if [ $rc -ne 0 ] || [ ! -f "$out/$name.bin" ]; then
    echo "FAIL $name: the traced run exited with $rc (see $name.stderr)" | tee -a "$summary"
    status=1
    return 1
  fi
  local t0 t1
  t0=$(date +%s.%N)
  if ! "$cli" report --format html -o "$out/$name.html" "$out/$name.bin" 2>>"$out/$name.stderr"; then
    echo "FAIL $name: report --format html" | tee -a "$summary"
    status=1
  fi
  t1=$(date +%s.%N)
  "$cli" export --format perfetto -o "$out/$name.perfetto.json" "$out/$name.bin" 2>>"$out/$name.stderr" ||
    { echo "FAIL $name: export --format perfetto" | tee -a "$summary"; status=1; }
  "$cli" export --format folded "$out/$name.bin" >"$out/$name.folded" 2>>"$out/$name.stderr" ||
    { echo "FAIL $name: export --format folded" | tee -a "$summary"; status=1; }
  "$cli" report --chart-width 0 "$out/$name.bin" 2>&1 | head -n 40 >"$out/$name.head.txt"
  "$cli" report --json "$out/$name.bin" >"$out/$name.report.json" 2>>"$out/$name.stderr"
  "$py" - "$out" "$name" "$t0" "$t1" >>"$summary" <<'PYEOF'
import json, os, sys
out, name, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
r = json.load(open(f"{out}/{name}.report.json"))
peaks = sum(a["peak_bytes"] for k in ("devices", "managed", "pinned_host") for a in r[k])
folded = sum(int(l.rpartition(" ")[2]) for l in open(f"{out}/{name}.folded") if l.strip())
ev = json.load(open(f"{out}/{name}.perfetto.json"))["traceEvents"]
print(f"NOTE {name}: {r['events']} events, device peaks {[d['peak_bytes'] for d in r['devices']]}, "
      f"html {os.path.getsize(f'{out}/{name}.html')} B in {t1 - t0:.2f} s, perfetto {len(ev)} events, "
      f"{os.path.getsize(f'{out}/{name}.perfetto.json')} B")
print(("PASS" if folded == peaks else "FAIL") + f" {name}: folded peak stacks sum to {folded}, the accounts' peaks to {peaks}")
PYEOF
}

mlp="$here/train_mlp.py"
traced mlp_cached "$mlp" -- --steps 20
traced mlp_nocache "$mlp" PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- --steps 20
traced phases "$here/torch_phases.py"
grep -q '^FAIL' "$summary" && status=1
cat "$summary"
exit $status
