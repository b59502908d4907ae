#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the user guide's GPU recipes for real and measures the side-by-side
# comparison (issue 22; docs/guide.md, docs/comparison.md):
#
#   samples/gpu/run_guide_validation.sh OUTDIR
#
#   a. OOM: train_mlp.py with a batch too large for the GPU (a real
#      torch.OutOfMemoryError), then `report` and `frag` of its trace; and an
#      OOM made by torch.cuda.set_per_process_memory_fraction (PyTorch refuses
#      before asking CUDA: what the trace shows then);
#   b. fragmentation: torch_varying_shapes.py under the default caching
#      allocator and expandable_segments:True, `frag` and the two reports
#      side by side;
#   c. the HTML report of a real train_mlp.py run (OUTDIR/report.html);
#   d. pytest gating (pytest_gate/: conftest.py), when the Python has pytest;
#   e. the comparison on the same programs: wall time bare, under
#      `cumemtrace run` and under `compute-sanitizer --tool memcheck
#      --leak-check full` (leak_and_peak.cu, async_loop.cu, oob_write.cu and
#      a small train_mlp.py), what each reports; PyTorch's
#      _record_memory_history + _dump_snapshot against cumemtrace on
#      train_mlp.py steps; whether nsys exists.
#
# Six files in OUTDIR: summary.txt (environment, every PASS/FAIL/NOTE line,
# the pytest runs), oom.txt, frag.txt, html.txt (the text report of the run
# report.html shows), report.html, comparison.txt. Scratch files (traces,
# binaries) go to a temporary directory removed at the end. Uses the build in
# $CMT_BUILD (scripts/gpu_bundle.sh's .gpu/build with LD_LIBRARY_PATH=.gpu/lib
# works), nvcc and compute-sanitizer from $CUDA_ROOT (default
# /usr/local/cuda), $PYTHON (default python3) with PyTorch. Every program
# runs under a time limit; the whole takes about 6 minutes, under 8 (parts
# that would pass 465 s are skipped and say so). GPU 0 must be idle: part a
# fills it. Exit status 0 when nothing failed.
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
cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
py="$(command -v "${PYTHON:-python3}" || echo "${PYTHON:-python3}")"
sanitizer="$cuda_root/bin/compute-sanitizer"
if [ ! -x "$cli" ]; then
  echo "run_guide_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export PYTHONUNBUFFERED=1 CMT_SHIM="$build/preload/libcumemtrace.so" CMT_CLI="$cli"
summary="$out/summary.txt"
: >"$summary"
status=0
say() { echo "$*" | tee -a "$summary"; }
pass_if() { # CONDITION-STATUS MESSAGE: PASS when 0, FAIL otherwise
  if [ "$1" -eq 0 ]; then say "PASS $2"; else say "FAIL $2"; status=1; fi
}
# Skips a part when it would end past 465 s of the script's run.
budget() { # SECONDS PART
  if [ $((SECONDS + $1)) -gt 465 ]; then
    say "NOTE $2: skipped, $SECONDS s used and it may take $1 s (the whole must stay under 480 s)"
    return 1
  fi
}
# Runs COMMAND with a limit and appends "LABEL WALL_S STATUS" to times.tsv.
timed() { # LABEL LIMIT_S COMMAND...
  local label=$1 lim=$2 t0 t1 rc
  shift 2
  t0=$(date +%s.%N)
  timeout -k 5 "$lim" "$@"
  rc=$?
  t1=$(date +%s.%N)
  echo "$label $(awk "BEGIN {printf \"%.3f\", $t1 - $t0}") $rc" >>"$scratch/times.tsv"
  return $rc
}
# The one trace of NAME in the scratch directory (NAME.<pid>.bin).
trace_of() { ls "$scratch/$1".*.bin 2>/dev/null | head -n 1; }

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,memory.total,memory.used --format=csv,noheader 2>&1
  "$cuda_root/bin/nvcc" --version 2>&1 | tail -n 1
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  "$sanitizer" --version 2>&1 | tail -n 1
  echo "cumemtrace: $(cat "$build/build-id.txt" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null)"
} | tee -a "$summary"

# --- a. OOM in a PyTorch job ---------------------------------------------------
{
  echo "== a. train_mlp.py --batch 400000 (a batch too large for the GPU), unmodified, under cumemtrace run"
  echo "\$ cumemtrace run -o oom.%p.bin -- python train_mlp.py --batch 400000 --warmup 1 --steps 1"
} >"$out/oom.txt"
timed oom_run 150 "$cli" run -o "$scratch/oom.%p.bin" -- "$py" "$here/train_mlp.py" --batch 400000 --warmup 1 \
  --steps 1 >"$scratch/oom.stdout" 2>"$scratch/oom.stderr"
rc=$?
{
  echo "exit status $rc; the last lines of stderr:"
  tail -n 4 "$scratch/oom.stderr" | cut -c 1-400
} >>"$out/oom.txt"
grep -q 'OutOfMemoryError' "$scratch/oom.stderr"
pass_if $? "a: train_mlp.py --batch 400000 died with torch.OutOfMemoryError (exit status $rc)"
trace="$(trace_of oom)"
if [ -n "$trace" ]; then
  {
    echo
    echo "\$ cumemtrace report oom.<pid>.bin"
    timeout 120 "$cli" report --chart-width 0 "$trace" 2>&1 | head -n 90
    echo
    echo "\$ cumemtrace frag oom.<pid>.bin"
    timeout 120 "$cli" frag "$trace" 2>&1 | head -n 70
  } >>"$out/oom.txt"
  timeout 120 "$cli" report --json "$trace" >"$scratch/oom.json" 2>/dev/null
  "$py" - "$scratch/oom.json" >>"$scratch/oom.check" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
GiB = 1 << 30
failed = r.get("failed", [])
print(f"NOTE a: failed allocations {r.get('failed_count')}; groups: " + "; ".join(
    f"{f['api']} of {f['size'] / GiB:.2f} GiB x{f['count']} verdict {f['verdict']}" for f in failed[:4]))
cases = r.get("oom", {}).get("cases", [])
for c in cases[:2]:
    fig = c["figures"]
    print(f"NOTE a: case {c['api']} {c['size'] / GiB:.2f} GiB: {c['verdict']} ({c['rule']}), live {fig['live'] / GiB:.2f} GiB, "
          f"free {fig['free'] / GiB if fig['free'] is not None else -1:.2f} GiB, released after {c['after']['released_bytes'] / GiB:.2f} GiB, "
          f"retried {c['after']['retried']}, allocator '{c['allocator']}'")
    print(f"NOTE a: explanation: {c['explanation']}")
    print(f"NOTE a: what to try: {c['what_to_try']}")
ok = bool(failed) and bool(cases) and cases[0]["verdict"] not in (None, "unknown", "not-out-of-memory")
print(("PASS" if ok else "FAIL") + f" a: the report has the failed allocation and a verdict "
      f"({cases[0]['verdict'] + ' ' + cases[0]['rule'] if cases else 'no case'})")
EOF
  cat "$scratch/oom.check" | tee -a "$summary"
  grep -q '^FAIL' "$scratch/oom.check" && status=1
else
  say "FAIL a: no trace of the OOM run"
  status=1
fi
# The same recipe when the limit is PyTorch's own fraction: no CUDA call fails.
cat >"$scratch/fraction.py" <<'EOF'
import torch
torch.cuda.set_per_process_memory_fraction(0.05)  # about 7 GiB of an H200
keep = []
try:
    while True:
        keep.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError as e:
    print(f"fraction.py: OutOfMemoryError after {len(keep)} x 256 MiB: {str(e).splitlines()[0][:160]}")
    raise
EOF
timed oom_fraction 120 "$cli" run -o "$scratch/fraction.%p.bin" -- "$py" "$scratch/fraction.py" \
  >"$scratch/fraction.stdout" 2>"$scratch/fraction.stderr"
rc=$?
trace="$(trace_of fraction)"
{
  echo
  echo "== a2. the same with torch.cuda.set_per_process_memory_fraction(0.05): PyTorch refuses before calling CUDA"
  echo "exit status $rc; $(cat "$scratch/fraction.stdout")"
  if [ -n "$trace" ]; then
    echo "\$ cumemtrace report fraction.<pid>.bin (first 40 lines)"
    timeout 120 "$cli" report --chart-width 0 "$trace" 2>&1 | head -n 40
  fi
} >>"$out/oom.txt"
if [ -n "$trace" ]; then
  timeout 120 "$cli" report --json "$trace" >"$scratch/fraction.json" 2>/dev/null
  "$py" - "$scratch/fraction.json" <<'EOF2' 2>&1 | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
held = sum(h["bytes"] for h in r.get("held_at_exit", []))
print(f"NOTE a2: fraction limit: failed allocations in the trace {r.get('failed_count')} "
      f"(PyTorch raised without a failed CUDA call); held by PyTorch at exit {held / 2**30:.2f} GiB")
EOF2
fi

# --- b. fragmentation and the allocator setting --------------------------------
{
  echo "== b. torch_varying_shapes.py: default caching allocator, then expandable_segments:True"
  timeout 330 "$py" "$here/torch_varying_shapes.py" check "$scratch" 2>&1
  echo "check exit status $?"
} >"$scratch/frag.check"
grep -E '^(PASS|FAIL|NOTE) ' "$scratch/frag.check" | sed 's/^\(PASS\|FAIL\|NOTE\) */\1 b: /' | tee -a "$summary"
grep -q '^FAIL' "$scratch/frag.check" && status=1
{
  cat "$scratch/frag.check"
  for s in default expandable_segments; do
    echo
    echo "\$ cumemtrace frag torch_shapes_$s.bin (first 60 lines)"
    head -n 60 "$scratch/torch_shapes_$s.frag.txt" 2>&1
  done
  a="$(ls "$scratch"/torch_shapes_default.*.bin 2>/dev/null | tail -n 1)"
  b="$(ls "$scratch"/torch_shapes_expandable_segments.*.bin 2>/dev/null | tail -n 1)"
  if [ -n "$a" ] && [ -n "$b" ]; then
    echo
    echo "\$ cumemtrace report torch_shapes_default.bin torch_shapes_expandable_segments.bin (first 120 lines)"
    timeout 120 "$cli" report --chart-width 0 "$a" "$b" 2>&1 | head -n 120
  fi
} >"$out/frag.txt"
rm -f "$scratch"/torch_shapes_*

# --- c. the HTML report of a real run ---------------------------------------------
timed html_run 150 "$cli" run -o "$scratch/html.%p.bin" -- "$py" "$here/train_mlp.py" --blocks 6 --warmup 2 --steps 8 \
  >"$scratch/html.stdout" 2>"$scratch/html.stderr"
trace="$(trace_of html)"
if [ -n "$trace" ]; then
  timeout 120 "$cli" report --format html -o "$out/report.html" "$trace" 2>"$scratch/html.err"
  rc=$?
  {
    echo "== c. train_mlp.py --blocks 6 --warmup 2 --steps 8 under cumemtrace run; the text report of the trace report.html shows"
    echo "train_mlp.py: $(tail -n 1 "$scratch/html.stdout")"
    echo "\$ cumemtrace report --format html -o report.html html.<pid>.bin   (exit status $rc, $(stat -c %s "$out/report.html" 2>/dev/null) bytes)"
    echo "\$ cumemtrace report html.<pid>.bin"
    timeout 120 "$cli" report --chart-width 0 "$trace" 2>&1 | head -n 120
  } >"$out/html.txt"
  [ $rc -eq 0 ] && [ -s "$out/report.html" ] && grep -q '<html' "$out/report.html"
  pass_if $? "c: report.html written from a real run ($(stat -c %s "$out/report.html" 2>/dev/null) bytes, trace $(stat -c %s "$trace") bytes)"
else
  say "FAIL c: no trace of the train_mlp.py run"
  status=1
fi

# --- d. pytest gating ---------------------------------------------------------------
if "$py" -c 'import pytest' 2>/dev/null; then
  mkdir -p "$scratch/pytest"
  {
    echo "== d. pytest $("$py" -c 'import pytest; print(pytest.__version__)')"
    echo "\$ python -m pytest -q samples/gpu/pytest_gate"
  } >>"$summary"
  (cd "$scratch/pytest" && timeout 120 "$py" -m pytest -q -p no:cacheprovider "$here/pytest_gate") >>"$summary" 2>&1
  plain=$?
  echo "\$ CUMEMTRACE_GATE=1 python -m pytest -q samples/gpu/pytest_gate" >>"$summary"
  (cd "$scratch/pytest" && CUMEMTRACE_GATE=1 CUMEMTRACE="$cli" timeout 120 "$py" -m pytest -q -p no:cacheprovider \
    "$here/pytest_gate") >"$scratch/pytest.gated" 2>&1
  gated=$?
  cut -c 1-300 "$scratch/pytest.gated" | head -n 60 >>"$summary"
  [ $plain -eq 0 ]
  pass_if $? "d: plain pytest passes both tests (exit status $plain)"
  [ $gated -eq 1 ] && grep -q 'test_device.py' "$scratch/pytest.gated"
  pass_if $? "d: gated session exits 1 and names test_device.py (exit status $gated)"
else
  say "NOTE d: $py has no pytest: the pytest recipe was not run"
fi

# --- e. the comparison ----------------------------------------------------------------
cmp="$out/comparison.txt"
: >"$cmp"
for p in leak_and_peak:../leak_and_peak.cu async_loop:async_loop.cu oob_write:oob_write.cu; do
  name=${p%%:*}
  # shellcheck disable=SC2086 # CMT_NVCC_FLAGS: extra flags (the simulated device: "-cudart shared -L<sim dir>")
  if ! "$cuda_root/bin/nvcc" -g -O1 -lineinfo ${CMT_NVCC_FLAGS:-} -o "$scratch/$name" "$here/${p#*:}" >"$scratch/$name.nvcc" 2>&1; then
    say "FAIL e: nvcc could not build ${p#*:}: $(head -c 300 "$scratch/$name.nvcc")"
    status=1
  fi
done
# One program, three ways, REPS interleaved rounds; the last run's outputs kept.
compare() { # NAME REPS SAN_REPS LIMIT COMMAND...
  local name=$1 reps=$2 sreps=$3 lim=$4 r
  shift 4
  for r in $(seq 1 "$reps"); do
    timed "$name bare" "$lim" "$@" >"$scratch/$name.bare.out" 2>&1
    rm -f "$scratch/$name".*.bin
    timed "$name cumemtrace" "$lim" "$cli" run -o "$scratch/$name.%p.bin" -- "$@" >"$scratch/$name.cmt.out" 2>&1
    if [ "$r" -le "$sreps" ]; then
      timed "$name compute-sanitizer" "$lim" "$sanitizer" --tool memcheck --leak-check full \
        --log-file "$scratch/$name.san.log" "$@" >"$scratch/$name.san.out" 2>&1
    fi
  done
  local t
  t="$(trace_of "$name")"
  [ -n "$t" ] && timed "$name report" 120 "$cli" report --json "$t" >"$scratch/$name.report.json" 2>/dev/null
  [ -n "$t" ] && stat -c %s "$t" >"$scratch/$name.trace_bytes"
  return 0
}
export CMT_SAMPLE_DEVICE_RESET=1 # compute-sanitizer reports leaks when the context is destroyed
[ -x "$scratch/leak_and_peak" ] && budget 60 "e leak_and_peak" && compare leak_and_peak 3 3 60 "$scratch/leak_and_peak"
[ -x "$scratch/async_loop" ] && budget 120 "e async_loop" && compare async_loop 3 2 90 "$scratch/async_loop" 10000
[ -x "$scratch/oob_write" ] && budget 30 "e oob_write" && compare oob_write 3 3 30 "$scratch/oob_write"
unset CMT_SAMPLE_DEVICE_RESET

# PyTorch's memory history against cumemtrace on the same training steps.
snapshot() { # ROUND
  timed "train_mlp bare" 120 "$py" "$here/train_mlp.py" --steps 30 >"$scratch/mlp.bare.$1.json" 2>"$scratch/mlp.err"
  rm -f "$scratch"/mlp.*.bin
  timed "train_mlp cumemtrace" 120 "$cli" run -o "$scratch/mlp.%p.bin" -- "$py" "$here/train_mlp.py" --steps 30 \
    >"$scratch/mlp.cmt.$1.json" 2>>"$scratch/mlp.err"
  timed "train_mlp torch-snapshot" 120 "$py" "$here/torch_snapshot.py" "$scratch/mlp.snapshot.pickle" \
    "$here/train_mlp.py" --steps 30 >"$scratch/mlp.snap.$1.json" 2>>"$scratch/mlp.err"
}
if budget 100 "e train_mlp snapshot"; then
  snapshot 1
  budget 60 "e train_mlp snapshot round 2" && snapshot 2
  t="$(trace_of mlp)"
  [ -n "$t" ] && timed "train_mlp report" 120 "$cli" report --json "$t" >"$scratch/train_mlp.report.json" 2>/dev/null
  [ -n "$t" ] && stat -c %s "$t" >"$scratch/train_mlp.trace_bytes"
fi

# A small PyTorch job under compute-sanitizer, as long as the time left allows.
left=$((465 - SECONDS - 25))
small=(--blocks 2 --width 1024 --batch 1024 --warmup 1 --steps 3)
if [ $left -ge 60 ]; then
  export CMT_SAMPLE_DEVICE_RESET=1
  compare torch_small 1 1 "$left" "$py" "$here/train_mlp.py" "${small[@]}"
  unset CMT_SAMPLE_DEVICE_RESET
else
  say "NOTE e torch_small: skipped, $SECONDS s used"
fi

# Nsight Systems: measured only when it is there.
nsys="$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)"
if [ -n "$nsys" ] && [ -x "$scratch/leak_and_peak" ] && budget 40 "e nsys"; then
  CMT_SAMPLE_DEVICE_RESET=1 timed "leak_and_peak nsys" 60 "$nsys" profile --cuda-memory-usage=true --force-overwrite=true \
    -o "$scratch/nsys_lp" "$scratch/leak_and_peak" >"$scratch/nsys.out" 2>&1
  echo "nsys: $nsys ($("$nsys" --version 2>&1 | head -n 1)); profile exit $?; $(tail -n 3 "$scratch/nsys.out" | tr '\n' ' ')" >"$scratch/nsys.txt"
else
  echo "nsys: not found on this machine (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-systems): not measured" >"$scratch/nsys.txt"
fi

"$py" - "$scratch" >"$cmp" <<'EOF'
import glob, json, os, re, statistics, sys
d = sys.argv[1]
MiB = 1 << 20
times = {}
for line in open(os.path.join(d, "times.tsv")):
    label, wall, rc = line.rsplit(" ", 2)
    times.setdefault(label, []).append((float(wall), int(rc)))

def med(label):
    v = times.get(label)
    return (statistics.median(w for w, _ in v), [rc for _, rc in v], len(v)) if v else None

def sanitizer_findings(name):
    try:
        log = open(os.path.join(d, f"{name}.san.log")).read()
    except OSError:
        return "no log"
    leaks = [int(x.replace(",", "")) for x in re.findall(r"Leaked ([\d,]+) bytes", log)]
    errs = re.findall(r"ERROR SUMMARY: (\d+) error", log)
    invalid = len(re.findall(r"Invalid __global__ (?:write|read)", log))
    return (f"{len(leaks)} leaks, {sum(leaks) / MiB:.1f} MiB; {invalid} invalid accesses; "
            f"error summary {errs[-1] if errs else '?'}")

def cmt_findings(name):
    try:
        r = json.load(open(os.path.join(d, f"{name}.report.json")))
    except (OSError, ValueError):
        return "no report"
    lk = r.get("leaks", {})
    held = sum(h["bytes"] for h in r.get("held_at_exit", []))
    tb = open(os.path.join(d, f"{name}.trace_bytes")).read().strip()
    return (f"{lk.get('count')} leaks, {lk.get('bytes', 0) / MiB:.1f} MiB; held by a caching allocator at exit "
            f"{held / MiB:.1f} MiB; failed {r.get('failed_count')}; trace {int(tb) / 1024:.0f} KiB")

print("Wall time per run (median of the runs, seconds), exit statuses, and what each tool reported.")
print("compute-sanitizer: --tool memcheck --leak-check full; cumemtrace: `cumemtrace run` (trace written at exit),")
print("its `report --json` time listed apart. CMT_SAMPLE_DEVICE_RESET=1 in every run of the C++ programs and")
print("torch_small: they end with cudaDeviceReset(), when compute-sanitizer reports leaks.\n")
for name in ("leak_and_peak", "async_loop", "oob_write", "torch_small"):
    base = med(f"{name} bare")
    if not base:
        print(f"== {name}: not run\n")
        continue
    print(f"== {name}")
    for tool in ("bare", "cumemtrace", "compute-sanitizer", "report", "nsys"):
        m = med(f"{name} {tool}")
        if not m:
            continue
        ratio = f"{m[0] / base[0]:.2f}x bare" if tool != "report" else "(analysis)"
        print(f"  {tool:18} {m[0]:8.3f} s  {ratio:12} runs {m[2]} exit {m[1]}")
    print(f"  cumemtrace finds:        {cmt_findings(name)}")
    print(f"  compute-sanitizer finds: {sanitizer_findings(name)}")
    out = os.path.join(d, f"{name}.bare.out")
    if os.path.exists(out):
        print(f"  program says:            {open(out).read().strip()[-200:]}")
    print()

print("== train_mlp.py (12 blocks, width 2048, batch 4096, 30 steps): step times")
rows = {}
for kind in ("bare", "cmt", "snap"):
    rows[kind] = []
    for f in sorted(glob.glob(os.path.join(d, f"mlp.{kind}.*.json"))):
        try:
            rows[kind].append(json.loads([l for l in open(f).read().splitlines() if "median_step_ms" in l][-1]))
        except (IndexError, ValueError):
            pass
base = statistics.median(r["median_step_ms"] for r in rows["bare"]) if rows["bare"] else None
for kind, label in (("bare", "bare"), ("cmt", "cumemtrace"), ("snap", "torch-snapshot")):
    v = [r["median_step_ms"] for r in rows[kind]]
    wall = med(f"train_mlp {label}")
    if not v:
        print(f"  {label:16} no runs")
        continue
    m = statistics.median(v)
    print(f"  {label:16} median step {m:7.3f} ms {'(%+.2f%%)' % (100 * (m / base - 1)) if base else '':10} "
          f"per round {['%.3f' % x for x in v]}, process wall {wall[0] if wall else 0:.2f} s")
snaps = []
for f in sorted(glob.glob(os.path.join(d, "mlp.snap.*.json"))):
    lines = [l for l in open(f).read().splitlines() if "snapshot_bytes" in l]
    if lines:
        snaps.append(json.loads(lines[-1]))
if snaps:
    s = snaps[-1]
    print(f"  torch snapshot: {s['snapshot_bytes'] / MiB:.1f} MiB pickle, dump {s['dump_s']:.2f} s, {s['segments']} segments, "
          f"{s['blocks']} blocks, {s['trace_entries']} trace entries, {s['active_blocks_with_frames']} live blocks with stacks")
print(f"  cumemtrace: {cmt_findings('train_mlp')}")
rm = med("train_mlp report")
if rm:
    print(f"  cumemtrace report --json: {rm[0]:.2f} s")
print()
def leaks(name):
    try:
        lk = json.load(open(os.path.join(d, f"{name}.report.json"))).get("leaks", {})
        return lk.get("count"), lk.get("bytes")
    except (OSError, ValueError):
        return None, None
for name, want in (("leak_and_peak", (5, 288 * MiB)), ("async_loop", (2, 2 * MiB)), ("oob_write", (0, 0))):
    if med(f"{name} bare"):
        got = leaks(name)
        print(f"{'PASS' if got == want else 'FAIL'} e: cumemtrace on {name}: {got[0]} leaks of {got[1]} B "
              f"(the program leaks {want[0]}, {want[1]} B)")
print("== Nsight Systems")
print("  " + open(os.path.join(d, "nsys.txt")).read().strip())
EOF
cat "$cmp"
grep -E '^(PASS|FAIL|NOTE) ' "$cmp" >>"$summary"
grep -q "^FAIL" "$cmp" && status=1
say "NOTE total: ${SECONDS} s"
exit $status
