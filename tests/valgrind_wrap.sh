#!/bin/sh
# Runs a test program directly, or under valgrind's memcheck when the test
# setup 'valgrind' is active (CMT_VALGRIND=1). Any memory error or leak of the
# program's own fails the test.
if [ "${CMT_VALGRIND:-0}" = 1 ]; then
  exec valgrind --quiet --suppressions="$(dirname "$0")/valgrind.supp" --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect "$@"
fi
exec "$@"
