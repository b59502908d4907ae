#!/usr/bin/env bash
# Builds the libFuzzer trace target with clang (ASan + UBSan + libFuzzer) and
# runs it on the committed corpus. docs/fuzzing.md explains the figures and
# what to do with a crash.
#
#   scripts/fuzz.sh [SECONDS [JOBS]] [-- LIBFUZZER OPTIONS...]
#
# SECONDS defaults to 600, JOBS to 1. New inputs go to build-fuzz/corpus-new
# (the committed corpus is only read); crashes, leaks, timeouts and inputs
# over the memory limits to build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600
jobs=1
if [ $# -gt 0 ] && [ "$1" != "--" ]; then seconds="$1"; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then jobs="$1"; shift; fi
[ "${1:-}" = "--" ] && shift

if ! command -v clang >/dev/null; then
  echo "fuzz: clang not found: install clang (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
if [ ! -f "$(clang -print-runtime-dir)/libclang_rt.fuzzer-x86_64.a" ]; then
  echo "fuzz: clang has no libFuzzer runtime: install it (Debian 12: apt-get install libclang-rt-14-dev)" >&2
  exit 2
fi

build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized >/dev/null
fi
meson compile -C "$build" tests/fuzz/fuzz_trace >/dev/null
mkdir -p "$build/corpus-new" "$build/artifacts"

# Leak detection stays on: the analyzer must free what it allocates for any
# input. UBSan reports stop the run like crashes.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
args=(
  -dict=tests/fuzz/trace.dict
  -max_len=65536
  -timeout=10
  -rss_limit_mb=512
  -malloc_limit_mb=256
  -max_total_time="$seconds"
  -print_final_stats=1
  -artifact_prefix="$build/artifacts/"
)
if [ "$jobs" -gt 1 ]; then
  args+=(-jobs="$jobs" -workers="$jobs")
fi
exec "$build/tests/fuzz/fuzz_trace" "${args[@]}" "$@" "$build/corpus-new" tests/fuzz/corpus
