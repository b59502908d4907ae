#!/bin/sh
# The shell recipe of docs/check.md, run for real by tests/e2e/test_recipes.py:
# every test binary given runs under `cumemtrace run --check`, each writing a
# JUnit report to $REPORT_DIR (default: reports); the loop goes on after a
# failure and exits 1 if any test binary failed its own checks or the
# memory check.
#
#   sh check_all.sh build/tests/test_*
set -u
reports=${REPORT_DIR:-reports}
mkdir -p "$reports"
status=0
for test in "$@"; do
  name=$(basename "$test")
  if ! cumemtrace run --check --format junit --report-file "$reports/$name.xml" -- "$test"; then
    echo "check_all: $name failed" >&2
    status=1
  fi
done
exit "$status"
