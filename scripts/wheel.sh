#!/usr/bin/env bash
# Builds cumemtrace's Python wheel (docs/python.md, "The wheel"): meson-python
# over this tree laid out as -Dwheel=true says (everything inside the Python
# package cumemtrace/), then scripts/wheel_repair.py makes it run where the
# build dependencies are not installed: the libraries the command, the shim
# and the analysis library need beyond glibc (libunwind, elfutils' libdw and
# libelf, zlib, liblzma, libbz2; ncursesw and tinfo for `top`'s view) are copied into cumemtrace/lib/ under names
# of their own with their licences, their sonames and RPATHs rewritten with
# patchelf (as auditwheel does), and the wheel is tagged
# py3-none-manylinux_2_X_ARCH from the glibc symbol versions it uses.
#
#   scripts/wheel.sh                 build/wheel/cumemtrace-VERSION-py3-none-manylinux_2_X_ARCH.whl
#   scripts/wheel.sh -o DIR          the wheel in DIR instead
#   scripts/wheel.sh --no-install    install nothing; fail, naming it, when a tool is missing
#   scripts/wheel.sh --arch aarch64  cross-built for aarch64 on this x86-64 machine:
#                                    build/wheel-aarch64/cumemtrace-VERSION-py3-none-
#                                    manylinux_2_X_aarch64.whl, the arm64 libraries vendored
#                                    (scripts/cross/aarch64-linux-gnu.ini; the cross
#                                    toolchain from scripts/cross_setup.sh)
#   CUDA_ROOT=/opt/cuda scripts/wheel.sh    the CUDA headers' toolkit (default /usr/local/cuda)
#
# meson-python builds in a temporary directory of its own (.mesonpy-* here,
# removed after): given a build directory, Debian 12's 0.12 only reconfigures
# one it made before, and stops on a new one.
#
# No network: meson-python, patchelf and pip come from Debian's packages,
# the HTML report's JavaScript libraries from analyzer/render/html/node_modules
# (scripts/setup.sh installs them), nothing from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
out=""
install=1
arch="$(uname -m)"
while (($#)); do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    --arch) arch="${2:?wheel: --arch needs an architecture (aarch64)}"; shift 2 ;;
    --no-install) install=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "wheel: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

# The interpreter that has meson-python: Debian's (a pyenv python first on
# PATH does not see Debian's packages).
python=python3
"$python" -c 'import mesonpy' 2>/dev/null || python=/usr/bin/python3
missing=()
"$python" -c 'import mesonpy' 2>/dev/null || missing+=(python3-mesonpy)
command -v patchelf >/dev/null || missing+=(patchelf)
if ((${#missing[@]})); then
  if ((!install)); then
    echo "wheel: missing ${missing[*]} (scripts/wheel.sh without --no-install installs them)" >&2
    exit 1
  fi
  echo "wheel: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# This machine's wheel in build/wheel/ (scripts/gpu_bundle.sh takes what is
# there), another architecture's in build/wheel-ARCH/.
[ -n "$out" ] || { [ "$arch" = "$(uname -m)" ] && out=build/wheel || out="build/wheel-$arch"; }
# Another architecture: meson-python runs meson with the cross file, the
# repair finds the target's libraries in its multiarch directory.
setup_args=("-Dcuda-root=${CUDA_ROOT:-/usr/local/cuda}")
if [ "$arch" != "$(uname -m)" ]; then
  cross_file="$PWD/scripts/cross/$arch-linux-gnu.ini"
  if [ ! -f "$cross_file" ]; then
    echo "wheel: no cross file for $arch (scripts/cross/ has: $(ls scripts/cross))" >&2
    exit 2
  fi
  if ! cross_missing="$(scripts/cross_setup.sh "$arch" --check)"; then
    if ((!install)); then
      echo "wheel: missing for $arch:" $cross_missing "(scripts/cross_setup.sh $arch installs them)" >&2
      exit 1
    fi
    scripts/cross_setup.sh "$arch"
  fi
  setup_args+=("--cross-file=$cross_file")
fi
if [ ! -f analyzer/render/html/node_modules/.package-lock.json ]; then
  echo "wheel: analyzer/render/html/node_modules lacks the HTML report's JavaScript libraries: run scripts/setup.sh" >&2
  exit 1
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
raw="$(mktemp -d "${TMPDIR:-/tmp}/cumemtrace-wheel.XXXXXX")"
trap 'rm -rf "$raw"' EXIT
log="$out/build.log"
echo "wheel: meson-python (log: $log)"
if ! "$python" - "$raw" "${setup_args[@]}" >"$log" 2>&1 <<'PY'
import sys
import mesonpy
# PEP 517's build_wheel, as pip would call it, without pip's isolation (no
# network): the options come from pyproject.toml, CUDA's root and the cross
# file from here.
print(mesonpy.build_wheel(sys.argv[1], {"setup-args": sys.argv[2:]}))
PY
then
  tail -n 40 "$log" >&2
  echo "wheel: meson-python failed (whole log: $log)" >&2
  exit 1
fi
rm -f "$out"/cumemtrace-*_"$arch".whl
"$python" scripts/wheel_repair.py "$raw"/cumemtrace-*.whl "$out"
