#!/usr/bin/env bash
# Packs a built tree for a GPU machine that lacks the build dependencies:
# the CLI, the shim and the shared libraries they need that such a machine may
# not have (libunwind, elfutils, ncurses for `top`), into .gpu/ (ignored by git). On the GPU
# machine: export LD_LIBRARY_PATH=$PWD/.gpu/lib CMT_BUILD=$PWD/.gpu/build; then
# .gpu/build/analyzer/cumemtrace or the samples/gpu/run_*.sh scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib/cumemtrace .gpu/build/analyzer .gpu/build/preload
cp "$build/analyzer/cumemtrace" .gpu/bin/
cp "$build/preload/libcumemtrace.so" .gpu/lib/cumemtrace/
# The PyTorch bridge lives beside the shim, which finds it there.
cp "$build/preload/libcumemtrace_torch.so" .gpu/lib/cumemtrace/
# Where .gpu/bin/cumemtrace looks for them, as installed
# (bin/../lib/<triplet>/cumemtrace/): `run` from the bundle's bin/ works.
triplet="$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
mkdir -p ".gpu/lib/$triplet/cumemtrace"
cp .gpu/lib/cumemtrace/libcumemtrace.so .gpu/lib/cumemtrace/libcumemtrace_torch.so ".gpu/lib/$triplet/cumemtrace/"
# The layout of a build tree, for scripts that take CMT_BUILD.
cp "$build/analyzer/cumemtrace" .gpu/build/analyzer/
cp "$build/preload/libcumemtrace.so" .gpu/build/preload/
cp "$build/preload/libcumemtrace_torch.so" .gpu/build/preload/
for lib in libunwind.so.8 libdw.so.1 libelf.so.1 liblzma.so.5 libbz2.so.1.0 libzstd.so.1 libncursesw.so.6 libtinfo.so.6; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !p {p = $NF} END {print p}')
  [ -n "$path" ] && cp -L "$path" .gpu/lib/
done
# The CPU benchmark's programs and the analyzer benchmark's generator, when
# built (bench/run_cpu_bench.py --build .gpu/build and bench/analyzer_throughput.py
# --gen .gpu/build/bench/bench_gen_trace run from the bundle; the programs'
# libraries are found through LD_LIBRARY_PATH=.gpu/build/bench/cpu there).
for f in bench/cpu/alloc_loop bench/cpu/alloc_loop_null bench/cpu/libcmt_null_cudart.so bench/trace_stats \
  bench/bench_gen_trace bench/bench_record_cost bench/bench_clock_cost bench/bench_nvtx_cost; do
  if [ -e "$build/$f" ]; then
    mkdir -p ".gpu/build/$(dirname "$f")"
    cp -L "$build/$f" ".gpu/build/$f"
  fi
done
if [ -d "$build/tests/sim" ]; then
  mkdir -p .gpu/build/tests/sim
  find "$build/tests/sim" -maxdepth 1 \( -type f -o -type l \) -name 'lib*.so*' -exec cp -P {} .gpu/build/tests/sim/ \;
fi
# The Python wheel, when scripts/wheel.sh built one: what
# samples/gpu/run_pytest_validation.sh installs with pip on the GPU machine.
if ls build/wheel/cumemtrace-*.whl >/dev/null 2>&1; then
  mkdir -p .gpu/wheel
  cp build/wheel/cumemtrace-*.whl .gpu/wheel/
fi
# Which source the bundled shim is: bench/gpu/run_overhead_bench.sh prints it
# (the commit, "-dirty" when tracked files had uncommitted changes; the build
# is assumed to be of the tree as it is now).
rev="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
if [ "$rev" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  rev="$rev-dirty"
fi
echo "$rev" >.gpu/build/build-id.txt
# With CMT_BUNDLE_PERF=1, this machine's perf with every library it loads,
# glibc and its loader included, for GPU machines without perf
# (bench/gpu/profile_async_pair.sh: PERF=$PWD/.gpu/perf/perf). Started through
# the carried loader, it does not depend on the other machine's glibc; the
# programs it starts use their own. About 33 MB.
if [ "${CMT_BUNDLE_PERF:-0}" = 1 ]; then
  perf_bin="$(readlink -f "$(command -v perf)")"
  mkdir -p .gpu/perf/lib
  cp -L "$perf_bin" .gpu/perf/perf.bin
  ldd "$perf_bin" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
    cp -L "$lib" .gpu/perf/lib/
  done
  cat >.gpu/perf/perf <<'WRAPPER'
#!/bin/sh
here="$(dirname "$(readlink -f "$0")")"
exec "$here/lib/ld-linux-x86-64.so.2" --library-path "$here/lib" "$here/perf.bin" "$@"
WRAPPER
  chmod +x .gpu/perf/perf
fi
# `cumemtrace run` finds the shim by CUMEMTRACE_SHIM.
echo "bundle: $(du -sh .gpu | cut -f1) in .gpu/"
