#!/usr/bin/env bash
# Sets up cumemtrace and runs every test: the suite on the simulated CUDA
# device (with the Debian packages built and tested, suite `package`, and
# the Python wheel, suite `wheel`; with CMT_CROSS=aarch64 also the aarch64
# wheel, cross-built and run under qemu), its
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
# The aarch64 wheel (suite `wheel`, test wheel_aarch64): only when asked,
# CMT_CROSS=aarch64: its cross toolchain and qemu are installed and the
# test must run (a few minutes more); otherwise it skips without them.
if [ -n "${CMT_CROSS:-}" ]; then
  scripts/cross_setup.sh "$CMT_CROSS"
  export CMT_CROSS_REQUIRED=1
fi

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
