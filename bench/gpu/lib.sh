# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced by the GPU benchmarks (run_overhead_bench.sh, async_pair_ablation.sh,
# profile_async_pair.sh, profile_torch.sh): what they need the same way.
# Expects $here (bench/gpu) and $root (the top of the tree).
# shellcheck disable=SC2154,SC2034 # here and root come from the caller; the variables set go back to it

# The GPU bundle (scripts/gpu_bundle.sh) carries libunwind and elfutils.
if [ -d "$root/.gpu/lib" ]; then
  export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# gpu_bench_pin NAME: the CPUs every measured process is pinned to. Sets
# pin_cpus (a taskset list, empty when unpinned) and pin (the command prefix:
# taskset -c LIST, or nothing). PIN_CPUS chooses; default: the 4
# highest-numbered CPUs this script may use, or all of them when it may use
# fewer than 8; none: no pinning; no taskset: no pinning. NAME prefixes the
# warning when the CPUs cannot be used.
gpu_bench_pin() {
  pin=()
  pin_cpus="${PIN_CPUS-}"
  if [ "$pin_cpus" = none ] || ! command -v taskset >/dev/null 2>&1; then
    pin_cpus=""
    return
  fi
  if [ -z "$pin_cpus" ]; then
    # The CPUs this script may run on, from its own affinity list ("0-3,8").
    local allowed r c
    local -a cpus=() ranges=()
    allowed="$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//')"
    IFS=, read -r -a ranges <<<"$allowed"
    for r in "${ranges[@]}"; do
      if [[ "$r" =~ ^([0-9]+)-([0-9]+)$ ]]; then
        for ((c = BASH_REMATCH[1]; c <= BASH_REMATCH[2]; c++)); do cpus+=("$c"); done
      elif [[ "$r" =~ ^[0-9]+$ ]]; then
        cpus+=("$r")
      fi
    done
    if [ "${#cpus[@]}" -ge 8 ]; then
      pin_cpus="$(IFS=,; echo "${cpus[*]: -4}")"
    elif [ "${#cpus[@]}" -gt 0 ]; then
      pin_cpus="$(IFS=,; echo "${cpus[*]}")"
    fi
  fi
  if [ -n "$pin_cpus" ] && taskset -c "$pin_cpus" true 2>/dev/null; then
    pin=(taskset -c "$pin_cpus")
  else
    echo "$1: cannot pin to CPUs '$pin_cpus'; running unpinned" >&2
    pin_cpus=""
  fi
}

# gpu_bench_paths OUTDIR: out (OUTDIR, created, absolute), build
# ($CMT_BUILD, default build/ at the top), cuda_root ($CUDA_ROOT, default
# /usr/local/cuda) and shim (the build's libcumemtrace.so).
gpu_bench_paths() {
  out="$(mkdir -p "$1" && cd "$1" && pwd)"
  build="${CMT_BUILD:-$root/build}"
  cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
  shim="$build/preload/libcumemtrace.so"
}

# gpu_bench_need_shim NAME: exits with a message when the build has no shim.
gpu_bench_need_shim() {
  if [ ! -f "$shim" ]; then
    echo "$1: no shim at $shim: set CMT_BUILD" >&2
    exit 1
  fi
}

# gpu_bench_alloc_pairs NAME: builds alloc_pairs.cu with the dynamic runtime
# into $out/alloc_pairs_dynamic (program; nvcc's output in $out/nvcc.log);
# exits with a message when nvcc fails.
gpu_bench_alloc_pairs() {
  program="$out/alloc_pairs_dynamic"
  if ! "$cuda_root/bin/nvcc" -O2 -g -cudart shared -o "$program" "$here/alloc_pairs.cu" -lcuda -ldl \
    >"$out/nvcc.log" 2>&1; then
    echo "$1: nvcc failed: $out/nvcc.log" >&2
    exit 1
  fi
}
