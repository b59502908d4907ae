#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of the report in PyTorch's language (issue 14,
# docs/report.md "Sites named by user code", "Peak by holder", "Held by an
# allocator at exit"):
#
#   samples/gpu/run_python_validation.sh OUTDIR
#
#   1. train_mlp.py (a 12-block MLP) and train_hf.py (GPT-2 built from a
#      config, random weights) under `cumemtrace run`, nothing else set:
#      - default caching allocator: PyTorch's own peak in the report equals
#        torch.cuda.max_memory_reserved() to the byte, what PyTorch holds at
#        exit equals memory_reserved() and no cached segment is a leak;
#      - PYTORCH_NO_CUDA_MEMORY_CACHING=1: the largest sites at the peak are
#        named by the script's lines (python_check.py);
#      the first 40 lines of each report land in OUTDIR/*.head.txt.
#   2. step times of train_mlp.py with and without the profiler, both
#      allocator settings, ROUNDS (default 2) interleaved rounds: the issue's
#      targets are 1.01x (caching) and 1.03x (no caching).
#
# Uses the build in $CMT_BUILD (default build/; scripts/gpu_bundle.sh's
# .gpu/build with LD_LIBRARY_PATH=.gpu/lib works) and $PYTHON (default
# python3) with PyTorch and transformers. summary.txt has PASS/FAIL/NOTE
# lines; exit status 0 when none failed. Every run is time-limited (240 s).
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
rounds="${ROUNDS:-2}"
summary="$out/summary.txt"
: >"$summary"
status=0
if [ ! -x "$cli" ]; then
  echo "run_python_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1

# traced NAME SCRIPT [ENV=VALUE...] [-- ARGS]: runs SCRIPT under the profiler
# into OUTDIR/NAME.bin, its JSON line into NAME.json, the reports beside.
traced() {
  local name=$1 script=$2
  shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  rm -f "$out/$name".*.bin
  env "${envs[@]}" timeout -k 10 240 "$cli" run -o "$out/$name.%p.bin" -- "$py" "$script" "$@" \
    >"$out/$name.json" 2>"$out/$name.stderr"
  local rc=$?
  mv "$out/$name".*.bin "$out/$name.bin" 2>/dev/null
  if [ $rc -ne 0 ] || [ ! -f "$out/$name.bin" ]; then
    echo "FAIL $name: the traced run exited with $rc (see $name.stderr)" | tee -a "$summary"
    status=1
    return 1
  fi
  "$cli" report --chart-width 0 "$out/$name.bin" >"$out/$name.report.txt" 2>&1
  head -n 40 "$out/$name.report.txt" >"$out/$name.head.txt"
  "$cli" report --json "$out/$name.bin" >"$out/$name.report.json" 2>>"$out/$name.stderr"
  "$cli" check "$out/$name.bin" >"$out/$name.check.txt" 2>&1
  echo "NOTE $name: check exited with $? ($(tail -n 1 "$out/$name.check.txt"))" >>"$summary"
}

check() { # MODE SCRIPT NAME
  "$py" "$here/python_check.py" "$1" "$2" "$out/$3.json" "$out/$3.report.json" >"$out/$3.check-figures.txt" 2>&1 ||
    status=1
  cat "$out/$3.check-figures.txt" >>"$summary"
}

mlp="$here/train_mlp.py"
hf="$here/train_hf.py"
traced mlp_cached "$mlp" && check cached "$mlp" mlp_cached
traced mlp_nocache "$mlp" PYTORCH_NO_CUDA_MEMORY_CACHING=1 && check nocache "$mlp" mlp_nocache
traced mlp_expandable "$mlp" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True && check cached "$mlp" mlp_expandable
if "$py" -c 'import transformers' 2>/dev/null; then
  traced hf_cached "$hf" && check cached "$hf" hf_cached
  traced hf_nocache "$hf" PYTORCH_NO_CUDA_MEMORY_CACHING=1 && check nocache "$hf" hf_nocache
else
  echo "SKIP train_hf.py: no transformers" >>"$summary"
fi

# Step times: native and profiled runs alternate, so drift hits both.
for r in $(seq 1 "$rounds"); do
  for setting in cached nocache; do
    envs=()
    [ $setting = nocache ] && envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
    env "${envs[@]}" timeout -k 10 240 "$py" "$mlp" --steps 40 >"$out/time.$setting.native.$r.json" 2>/dev/null
    env "${envs[@]}" timeout -k 10 240 "$cli" run -o "$out/time.$setting.%p.bin" -- "$py" "$mlp" --steps 40 \
      >"$out/time.$setting.profiled.$r.json" 2>/dev/null
    rm -f "$out"/time.$setting.*.bin
  done
done
"$py" - "$out" "$rounds" >>"$summary" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
for setting, target in (("cached", 1.01), ("nocache", 1.03)):
    def med(kind):
        v = []
        for r in range(1, rounds + 1):
            try:
                v.append(json.loads(open(f"{out}/time.{setting}.{kind}.{r}.json").read().splitlines()[-1])["median_step_ms"])
            except (OSError, ValueError, IndexError, KeyError):
                pass
        return v
    n, p = med("native"), med("profiled")
    if not n or not p:
        print(f"FAIL step time {setting}: runs missing")
        continue
    ratio = statistics.median(p) / statistics.median(n)
    print(f"NOTE step time {setting}: native {['%.2f' % x for x in n]} ms, profiled {['%.2f' % x for x in p]} ms, "
          f"ratio of medians {ratio:.3f} (target {target})")
EOF
cat "$summary"
exit $status
