#!/bin/sh
# Generates inputs afresh and replays them through the fuzz target:
#   replay_generated.sh WRAPPER REPLAY GENERATOR [ARGS...]
# runs GENERATOR ARGS... DIR into a new directory DIR, then WRAPPER REPLAY DIR.
set -eu
wrapper="$1"
replay="$2"
shift 2
dir="$(mktemp -d "${TMPDIR:-/tmp}/cmt-fuzz-inputs.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
"$@" "$dir/inputs"
"$wrapper" "$replay" "$dir/inputs"
