#!/usr/bin/env bash
# Installs what building and testing cumemtrace needs on Debian/Ubuntu, then
# configures and builds it in build/. Safe to run again: it only installs
# what is missing and only reconfigures when needed.
#
#   scripts/setup.sh            build dependencies and the build itself
#   CMT_SETUP_EXTRA="clang"     also install extra packages (tests use clang
#                               for the fuzz target and valgrind for a setup)
# The Debian packaging tools are installed only when asked, by
# scripts/package.sh (scripts/test.sh asks: `package.sh --deps --lintian`).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config gcc g++ python3 libunwind-dev libdw-dev libelf-dev binutils
  libncurses-dev  # ncursesw: `cumemtrace top`'s live view
  tmux            # the live view's tests drive it in a tmux pane
  cmake   # cmake: the ctest recipe of docs/check.md is tried by the tests
  man-db  # man: the install tests render the man pages (man --warnings -l)
  python3-pytest python3-venv    # the pytest plugin's tests, the wheel's virtual environment
  python3-mesonpy patchelf)      # scripts/wheel.sh (the wheel is built and tested by the suite)
read -r -a extra <<<"${CMT_SETUP_EXTRA:-}"
packages+=("${extra[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The HTML report embeds JavaScript libraries from npm at build time and its
# test drives Debian's headless Chromium (docs/html.md). Judged by command,
# not package: a node from elsewhere (with its own npm) serves as well.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v chromium >/dev/null || missing+=(chromium)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The libraries, exactly as package-lock.json pins them; again only when the
# lock changed since the last install.
html_dir=analyzer/render/html
if [ ! -f "$html_dir/node_modules/.package-lock.json" ] ||
  [ "$html_dir/package-lock.json" -nt "$html_dir/node_modules/.package-lock.json" ]; then
  echo "setup: installing the HTML report's JavaScript libraries (npm ci)"
  (cd "$html_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "setup: warning: no CUDA Toolkit headers in $cuda_root (set CUDA_ROOT); only the analyzer will be built" >&2
fi

if [ ! -f build/build.ninja ]; then
  meson setup build -Dcuda-root="$cuda_root" >/dev/null
fi
meson compile -C build >/dev/null
echo "setup: built build/analyzer/cumemtrace and build/preload/libcumemtrace.so"
