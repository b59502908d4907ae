#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the tests that fork, kill, crash, send signals, race threads or time
# the clock (meson suite `racy`) many times in a row beside two busy loops,
# and stops at the first failure with its log (docs/testing.md).
#
#   scripts/stress.sh [--build DIR] [--runs N] [--setup NAME] [--jobs J] [--no-load] [TEST...]
#
#   --build DIR    the meson build directory (default: build; build-asan with --setup asan)
#   --runs N       rounds (default 50): each round runs every test once
#   --setup NAME   a meson test setup (asan, valgrind), as `meson test --setup`
#   --jobs J       tests run at once within a round (default 1)
#   --no-load      without the two busy loops
#   TEST...        these tests instead of the suite `racy` (meson test names)
#
# Exit status: 0 when every round passed, 1 at the first failure (its log is
# printed and kept in DIR/meson-logs/stress-FAILED.txt), 2 on a usage error.
# The busy loops are ended on every exit, by their process ids.
set -u

build=
runs=50
setup=
jobs=1
load=1
usage() {
    sed -n '6,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
    --setup) [ $# -ge 2 ] || usage; setup=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
    --no-load) load=0; shift ;;
    -h | --help) usage ;;
    --) shift; break ;;
    -*) echo "stress.sh: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
case "$runs" in '' | *[!0-9]*) echo "stress.sh: --runs wants a number, not '$runs'" >&2; exit 2 ;; esac
case "$jobs" in '' | *[!0-9]* | 0) echo "stress.sh: --jobs wants a positive number, not '$jobs'" >&2; exit 2 ;; esac
if [ -z "$build" ]; then
    build=build
    if [ "$setup" = asan ]; then build="build-asan"; fi
fi
if [ ! -f "$build/build.ninja" ]; then
    echo "stress.sh: $build is not a configured meson build directory (--build DIR)" >&2
    exit 2
fi

set -- "$@"
if [ $# -eq 0 ]; then
    selection="--suite racy"
    what="the suite racy"
else
    selection="$*"
    what="$*"
fi
setup_arg=
[ -n "$setup" ] && setup_arg="--setup $setup"

# Build first, once: a round must not rebuild (nor count a build as a run).
meson compile -C "$build" >/dev/null || { echo "stress.sh: the build failed" >&2; exit 2; }
# shellcheck disable=SC2086 # selection is a word list
if ! list=$(meson test -C "$build" --no-rebuild --list $selection 2>/dev/null); then
    list=
fi
count=$(printf '%s\n' "$list" | grep -c ' / ')
if [ "$count" -eq 0 ]; then
    echo "stress.sh: no test matches $what in $build" >&2
    exit 2
fi

busy=
running=
stop_load() {
    for pid in $running $busy; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    running=
    busy=
}
trap 'stop_load' EXIT
trap 'stop_load; exit 130' INT
trap 'stop_load; exit 143' TERM
if [ "$load" -eq 1 ]; then
    for _ in 1 2; do
        sh -c 'while :; do :; done' &
        busy="$busy $!"
    done
fi

echo "stress.sh: $count tests ($what), $runs rounds, setup ${setup:-default}, $jobs at once," \
    "$([ "$load" -eq 1 ] && echo "two busy loops beside them" || echo "no load")"
start=$(date +%s)
round=1
while [ "$round" -le "$runs" ]; do
    # In the background, waited for: a trapped signal interrupts the wait
    # (not a foreground command), so INT and TERM end the round at once.
    # shellcheck disable=SC2086 # selection and setup_arg are word lists
    meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$jobs" --logbase stress \
        $setup_arg $selection >"$build/meson-logs/stress-round.txt" 2>&1 &
    running=$!
    wait "$running"
    status=$?
    running=
    if [ "$status" -ne 0 ]; then
        cp "$build/meson-logs/stress-round.txt" "$build/meson-logs/stress-FAILED.txt"
        cat "$build/meson-logs/stress-round.txt"
        echo "stress.sh: round $round of $runs FAILED after $(($(date +%s) - start)) s" \
            "(log: $build/meson-logs/stress-FAILED.txt, $build/meson-logs/stress.txt)"
        exit 1
    fi
    echo "stress.sh: round $round of $runs passed ($(($(date +%s) - start)) s)"
    round=$((round + 1))
done
echo "stress.sh: all $runs rounds of $count tests passed in $(($(date +%s) - start)) s"
