#!/usr/bin/env bash
# Sets up cumemtrace and runs every test: the suite on the simulated CUDA
# device (with the Debian packages built and tested, suite `package`, and
# the Python wheel, suite `wheel`), its
# shim and CLI tests again under valgrind, then everything under
# AddressSanitizer+UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
CMT_SETUP_EXTRA="clang valgrind ${CMT_SETUP_EXTRA:-}" scripts/setup.sh
# The packaging tools (dpkg-dev, debhelper, lintian), and the package test
# must run: without them it fails instead of skipping.
scripts/package.sh --deps --lintian
export CMT_PACKAGE_REQUIRED=1
# The wheel's tools come with setup.sh: its test must run too.
export CMT_WHEEL_REQUIRED=1

jobs="$(nproc)"
echo "test: default build"
meson test -C build --print-errorlogs --num-processes "$jobs"

echo "test: under valgrind (memcheck)"
meson test -C build --print-errorlogs --num-processes "$jobs" --setup valgrind --suite unit --suite e2e --suite fuzz

echo "test: ASan+UBSan build"
if [ ! -f build-asan/build.ninja ]; then
  meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
    -Dcuda-root="${CUDA_ROOT:-/usr/local/cuda}" >/dev/null
fi
meson compile -C build-asan >/dev/null
meson test -C build-asan --print-errorlogs --num-processes "$jobs" --setup asan
echo "test: all passed"
