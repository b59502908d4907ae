#!/usr/bin/env bash
# What building cumemtrace for another architecture than this machine's
# needs (scripts/wheel.sh --arch ARCH; docs/install.md, "The aarch64
# wheel"), on an x86-64 Debian 12: Debian's cross compiler and binutils,
# the target's -dev packages of the libraries the build links (multiarch:
# LIBRARY-dev:arm64, beside the amd64 ones), and qemu-user-static, which
# runs the target's programs here (tests/wheel/test_wheel_cross.py).
#
#   scripts/cross_setup.sh aarch64           install what is missing (root or sudo;
#                                            adds the arm64 architecture to dpkg)
#   scripts/cross_setup.sh aarch64 --check   install nothing: print what is missing,
#                                            one package a line; exit 1 if anything is
#
# Only aarch64 is known (the shim's dlsym entry stub is written for x86-64
# and aarch64). Nothing is ever removed.
set -euo pipefail
arch="${1:-}"
mode="${2:-install}"
case "$arch" in
  aarch64) deb_arch=arm64; triplet=aarch64-linux-gnu ;;
  *) echo "cross_setup: unknown architecture '$arch' (known: aarch64)" >&2; exit 2 ;;
esac
case "$mode" in
  install | --check) ;;
  *) echo "cross_setup: unknown argument $mode (--check or nothing)" >&2; exit 2 ;;
esac

# The build: the C and C++ compilers (the PyTorch bridge is C++) and
# binutils (the wheel's repair strips with the target's strip); libunwind,
# elfutils' libdw and libelf, ncursesw (`top`), and the -dev packages
# libdw.pc names (zlib, liblzma, libbz2, libzstd). The test: qemu.
packages=("gcc-$triplet" "g++-$triplet" "binutils-$triplet"
  "libunwind-dev:$deb_arch" "libdw-dev:$deb_arch" "libelf-dev:$deb_arch" "libncurses-dev:$deb_arch"
  "zlib1g-dev:$deb_arch" "liblzma-dev:$deb_arch" "libbz2-dev:$deb_arch" "libzstd-dev:$deb_arch"
  qemu-user-static)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$mode" = --check ]; then
  ((${#missing[@]})) || exit 0
  printf '%s\n' "${missing[@]}"
  exit 1
fi
((${#missing[@]})) || exit 0
echo "cross_setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
dpkg --print-foreign-architectures | grep -qx "$deb_arch" || $sudo dpkg --add-architecture "$deb_arch"
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
