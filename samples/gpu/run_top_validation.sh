#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cumemtrace top` on a real GPU (issue 29): a PyTorch training run watched
# live, with `top --once --format json` snapshots at known steps compared to
# what PyTorch says at the same steps, and the step time with and without
# the live view following the run.
#
#   samples/gpu/run_top_validation.sh OUTDIR [--dry]
#
# 1. snapshots: samples/gpu/top_train.py (an MLP of 4 blocks of width 4096,
#    batch 4096, 64 MiB kept per step) under `cumemtrace run`, for the
#    default allocator and expandable_segments:True. At steps 1, 5, 10 and
#    19 the script writes what torch.cuda.memory_reserved() and
#    memory_allocated() say and waits (a file handshake) while this script
#    takes `top --once --format json` of the trace directory; then
#    top_check.py compare: PyTorch's reserve in the snapshot (its block
#    layer's segments) equal to memory_reserved(), its tensors to
#    memory_allocated(), the step to K. OUTDIR/snapshots-CONF/ keeps both
#    sides; OUTDIR/compare-CONF.txt the table.
# 2. step time: the same training (30 steps, no handshake) traced, three
#    rounds alternating without and with `cumemtrace top` following the
#    trace directory in a pseudo-terminal (top_check.py viewed); each run's
#    per-step seconds in OUTDIR/steps/, the medians (step 0 aside) and the
#    view's CPU in OUTDIR/step-times.txt.
#
# --dry: the same path on the simulated device of a build (no GPU, no
# PyTorch: top_train.py --dry allocates through the simulated runtime with
# ctypes and compares live bytes with what it holds): checks the script
# itself on a machine without a GPU.
#
# Environment, as the other samples/gpu/*.sh: CMT_BUILD (default build/;
# the bundle's .gpu/build with LD_LIBRARY_PATH=$PWD/.gpu/lib), PYTHON
# (default python3; /opt/torch/.venv/bin/python on the GPU machine).
# Exit status: 0 when every snapshot matched, 1 when one did not, 2 on a
# usage error or a missing tool.
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR [--dry]" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
dry=0
[ "${2:-}" = "--dry" ] && dry=1
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
py="${PYTHON:-python3}"
train="$here/top_train.py"
check="$here/top_check.py"
if [ ! -x "$cli" ]; then
  echo "run_top_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1 CUMEMTRACE_QUIET=1
dry_args=()
if [ $dry = 1 ]; then
  if [ ! -e "$build/tests/sim/libcudart.so" ]; then
    echo "run_top_validation: --dry needs the simulated device ($build/tests/sim)" >&2
    exit 2
  fi
  export LD_LIBRARY_PATH="$build/tests/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  dry_args=(--dry)
  py="${PYTHON:-python3}"
else
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
  "$py" -c 'import torch; print(torch.__version__, torch.version.cuda)' >"$out/versions.txt" 2>&1
fi
steps=1,5,10,19
status=0

# snapshots CONF: one run with the handshake, a snapshot per step of $steps.
snapshots() {
  local conf="$1" name="${1:-default}"
  name="${name//[:,]/_}"
  local hs="$out/handshake-$name" traces="$out/traces-$name" snaps="$out/snapshots-$name"
  rm -rf "$hs" "$traces" "$snaps"
  mkdir -p "$hs" "$traces" "$snaps"
  PYTORCH_CUDA_ALLOC_CONF="$conf" "$cli" run -o "$traces/train.%p.bin" -- \
    "$py" "$train" "$out/train-$name.json" --steps 20 --leak --handshake "$hs" --snap "$steps" "${dry_args[@]}" \
    >"$out/train-$name.out" 2>"$out/train-$name.err" &
  local pid=$! k waited
  for k in ${steps//,/ }; do
    waited=0
    while [ ! -e "$hs/step-$k.json" ]; do
      if ! kill -0 $pid 2>/dev/null; then
        echo "run_top_validation: the run ended before step $k (see $out/train-$name.err)" >&2
        wait $pid
        return 1
      fi
      sleep 0.05
      waited=$((waited + 1))
      if [ $waited -gt 6000 ]; then
        echo "run_top_validation: no step $k within 300 s" >&2
        kill $pid
        return 1
      fi
    done
    cp "$hs/step-$k.json" "$snaps/pytorch-$k.json"
    "$cli" top --once --format json --sites 5 "$traces" >"$snaps/snap-$k.json" 2>"$snaps/snap-$k.err"
    touch "$hs/step-$k.done"
  done
  wait $pid
  local rc=$?
  echo "training ($name) exited with $rc" >"$out/compare-$name.txt"
  "$py" "$check" compare "$hs" "$snaps" "$steps" "${dry_args[@]}" >>"$out/compare-$name.txt" 2>&1
  local c=$?
  cat "$out/compare-$name.txt"
  [ $rc = 0 ] && [ $c = 0 ]
}

echo "== snapshots against PyTorch's figures"
snapshots "" || status=1
if [ $dry = 0 ]; then
  snapshots "expandable_segments:True" || status=1
fi

echo "== step time without and with the live view"
mkdir -p "$out/steps"
: >"$out/step-times.txt"
for round in 1 2 3; do
  for mode in alone viewed; do
    d="$out/steps/traces-$mode-$round"
    rm -rf "$d"
    mkdir -p "$d"
    cmd=("$cli" run -o "$d/train.%p.bin" -- "$py" "$train" "$out/steps/$mode-$round.json" --steps 30 "${dry_args[@]}")
    if [ $mode = alone ]; then
      "${cmd[@]}" >"$out/steps/$mode-$round.out" 2>&1 || status=1
    else
      "$py" "$check" viewed "$cli" "$d" -- "${cmd[@]}" >"$out/steps/$mode-$round.view.json" 2>"$out/steps/$mode-$round.err" ||
        status=1
    fi
    rm -rf "$d"
  done
done
"$py" - "$out" >>"$out/step-times.txt" <<'EOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
for mode in ("alone", "viewed"):
    meds = []
    for f in sorted(glob.glob(os.path.join(out, "steps", f"{mode}-*.json"))):
        if f.endswith(".view.json"):
            continue
        per = [s["seconds"] for s in json.load(open(f))["per_step"][1:]]
        meds.append(statistics.median(per))
    views = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, "steps", f"{mode}-*.view.json")))]
    cpu = "" if not views else ", view CPU %s s over %s s" % (
        [round(v["viewer_cpu_s"], 2) for v in views], [round(v["viewer_wall_s"], 1) for v in views])
    print(f"{mode}: median step seconds per run {[round(m, 5) for m in meds]}{cpu}")
EOF
cat "$out/step-times.txt"
exit $status
