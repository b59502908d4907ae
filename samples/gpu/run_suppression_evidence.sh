#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Records the traces that justify (or refute) each entry of the default
# suppression list of `cumemtrace check` (analyzer/check/default.supp; docs/check.md,
# "The default suppressions"). Run on the GPU machine from a copy of the
# built tree:
#
#   samples/gpu/run_suppression_evidence.sh OUTDIR
#
# Programs, each of which frees everything it owns:
#   context_only         the CUDA context and one kernel (samples/gpu/context_only.cu)
#   cublas_once          cublasCreate, one SGEMM, cublasDestroy (cublas_once.cu)
#   cublas_no_destroy    the same without cublasDestroy: a user's bug, to see
#                        what a libcublas suppression would also hide
#   cudnn_once           cudnnCreate, one convolution, cudnnDestroy (cudnn_once.cu;
#                        only where cuDNN's headers are found)
#   torch_cached         PyTorch matmul + linear + conv2d, tensors dropped (torch_once.py)
#   torch_nocache        the same with PYTORCH_NO_CUDA_MEMORY_CACHING=1
# For each: the trace(s), `check --no-default-suppressions` (JSON), `check
# --print-suppressions` with the default list (text and JSON), `report
# --full-stacks` (JSON), and for the C++ programs compute-sanitizer
# --leak-check full. OUTDIR/evidence.txt sums it up: per program what was
# still allocated at exit, in which modules, and which default entries
# matched it.
#
# cuBLAS and cuDNN link the CUDA runtime statically: their allocations reach
# the driver through cuGetProcAddress and are seen only by a build with the
# driver-API hooks (issue 3). evidence.txt says which hooks the build had
# (whether any cu* driver allocation was recorded).
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
here=$root/samples/gpu
mkdir -p "$out/bin" "$out/traces"
log=$out/run.log
: >"$log"

{
  echo "date: $(date -u)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  "$nvcc" --version | tail -n 2
  "$cli" version
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
} >"$out/environment.txt"

programs=()
build_cu() { # build_cu NAME SOURCE EXTRA-FLAGS...
  local name=$1 src=$2
  shift 2
  if "$nvcc" -g -O1 -cudart shared -o "$out/bin/$name" "$src" "$@" >"$out/build.$name.log" 2>&1; then
    return 0
  fi
  echo "evidence: could not build $name (build.$name.log)" | tee -a "$log"
  return 1
}

build_cu context_only "$here/context_only.cu" && programs+=(context_only)
if build_cu cublas_once "$here/cublas_once.cu" -lcublas; then
  programs+=(cublas_once cublas_no_destroy)
fi
# cuDNN's headers: the toolkit, the system, or the wheel PyTorch installs.
cudnn_dir=$("$py" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
cudnn_flags=()
for inc in "$cuda/include" /usr/include "${cudnn_dir:+$cudnn_dir/include}"; do
  if [ -n "$inc" ] && [ -f "$inc/cudnn.h" ]; then
    cudnn_flags=(-I"$inc")
    [ -n "$cudnn_dir" ] && [ -d "$cudnn_dir/lib" ] &&
      cudnn_flags+=(-L"$cudnn_dir/lib" -Xlinker -rpath="$cudnn_dir/lib")
    break
  fi
done
if [ ${#cudnn_flags[@]} -gt 0 ]; then
  lib=-lcudnn
  [ -n "$cudnn_dir" ] && ls "$cudnn_dir"/lib/libcudnn.so.* >/dev/null 2>&1 && [ ! -e "$cudnn_dir/lib/libcudnn.so" ] &&
    lib=-l:$(basename "$(ls "$cudnn_dir"/lib/libcudnn.so.[0-9]* | head -n 1)")
  build_cu cudnn_once "$here/cudnn_once.cu" "${cudnn_flags[@]}" "$lib" && programs+=(cudnn_once)
else
  echo "evidence: no cudnn.h found; cudnn_once skipped (torch_* still use cuDNN)" | tee -a "$log"
fi
if "$py" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  programs+=(torch_cached torch_nocache)
else
  echo "evidence: PyTorch with CUDA not available; torch_* skipped" | tee -a "$log"
fi

command_of() {
  case $1 in
    cublas_no_destroy) echo "$out/bin/cublas_once --no-destroy" ;;
    torch_cached) echo "$py $here/torch_once.py" ;;
    torch_nocache) echo "env PYTORCH_NO_CUDA_MEMORY_CACHING=1 $py $here/torch_once.py" ;;
    *) echo "$out/bin/$1" ;;
  esac
}

for name in "${programs[@]}"; do
  read -r -a cmd <<<"$(command_of "$name")"
  echo "== $name: ${cmd[*]}" >>"$log"
  "$cli" run -o "$out/traces/$name.%p.bin" --check --keep-traces --no-default-suppressions --check-incomplete \
    --format json --report-file "$out/$name.nodefault.json" -- "${cmd[@]}" >>"$log" 2>&1
  echo "   run --check --no-default-suppressions: status $?" >>"$log"
  traces=("$out"/traces/"$name".*.bin)
  if [ ! -e "${traces[0]}" ]; then
    echo "   no trace written" >>"$log"
    continue
  fi
  "$cli" check --print-suppressions --check-incomplete "${traces[@]}" >"$out/$name.default.txt" 2>&1
  echo "   check with the default list: status $?" >>"$log"
  "$cli" check --print-suppressions --check-incomplete --format json "${traces[@]}" >"$out/$name.default.json" 2>/dev/null
  i=0
  for t in "${traces[@]}"; do
    "$cli" report --json --full-stacks --max-frames 0 "$t" >"$out/$name.report.$i.json" 2>>"$log"
    "$cli" report --full-stacks --max-frames 0 "$t" >"$out/$name.report.$i.txt" 2>>"$log"
    i=$((i + 1))
  done
  case $name in
    context_only | cublas_once | cublas_no_destroy | cudnn_once)
      "$sanitizer" --leak-check full --log-file "$out/$name.sanitizer.txt" "${cmd[@]}" >/dev/null 2>&1 ;;
  esac
done

"$py" - "$out" "${programs[@]}" >"$out/evidence.txt" 2>&1 <<'PY'
import glob, json, os, re, sys

out, programs = sys.argv[1], sys.argv[2:]
print("Allocations still live at exit, per program (no default suppressions), and the default")
print("entries that matched them. Stacks are complete in <program>.report.<n>.txt.\n")
for name in programs:
    print(f"== {name}")
    nodefault = os.path.join(out, f"{name}.nodefault.json")
    if os.path.exists(nodefault):
        prog = json.load(open(nodefault)).get("program", {})
        status = prog.get("exit_status")
        print(f"   program exit status: {status if status is not None else 'signal ' + str(prog.get('signal'))}"
              + ("" if status == 0 else "  <- the program failed: this is no evidence"))
    reports = sorted(glob.glob(os.path.join(out, f"{name}.report.*.json")))
    if not reports:
        print("   no trace (see run.log)\n")
        continue
    for path in reports:
        rep = json.load(open(path))
        apis = rep["events_by_api"]
        driver = sum(v for k, v in apis.items() if k.startswith("cu") and not k.startswith("cuda"))
        print(f"   {os.path.basename(path)}: events {apis}; driver-API events: {driver}"
              + ("" if driver else " (a build without the driver-API hooks sees nothing inside cuBLAS/cuDNN)"))
        leaks = rep["leaks"]
        print(f"   live at exit: {leaks['bytes']} B in {leaks['count']} allocations")
        for s in leaks["sites"]:
            mods = []
            for f in s["frames"]:
                m = os.path.basename(f["module"] or "")
                if m and m not in mods:
                    mods.append(m)
            funcs = [f["function"] or "?" for f in s["frames"][:8]]
            print(f"     {s['bytes']} B in {s['count']} ({s['api']}, {s['kind']})")
            print(f"       modules: {' '.join(mods)}")
            print(f"       frames:  {' <- '.join(funcs)}")
    default = os.path.join(out, f"{name}.default.json")
    if os.path.exists(default):
        doc = json.load(open(default))
        used = [(s["pattern"], s["allocations"], s["bytes"]) for s in doc["suppressions"] if s["default"]]
        print("   default entries: " + ", ".join(f"leak:{p} matched {a} allocations ({b} B)" for p, a, b in used))
        print(f"   check with the default list: {doc['status']}")
    san = os.path.join(out, f"{name}.sanitizer.txt")
    if os.path.exists(san):
        m = re.findall(r"LEAK SUMMARY: (\d+) bytes leaked in (\d+) allocations", open(san).read())
        print(f"   compute-sanitizer --leak-check full: {m[-1][0] + ' B in ' + m[-1][1] if m else 'no LEAK SUMMARY'}")
    print()
PY
cat "$out/evidence.txt"
echo "evidence: files in $out"
