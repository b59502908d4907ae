# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced by the GPU benchmarks (run_overhead_bench.sh, async_pair_ablation.sh):
# what both need the same way. Expects $root (the top of the tree).
# shellcheck disable=SC2154,SC2034 # root comes from the caller, pin goes back to it

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
