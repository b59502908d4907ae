#!/usr/bin/env bash
# Builds cumemtrace's Debian packages (debian/, docs/install.md) with
# `dpkg-buildpackage -b -us -uc` in a copy of this tree, so the tree stays
# as it was; the packages and the build's log land in build/deb/.
#
#   scripts/package.sh               install what is missing (apt-get), build
#   scripts/package.sh -o DIR        the packages in DIR instead
#   scripts/package.sh --lintian     then check them with lintian: fails on
#                                    an error or a warning
#   scripts/package.sh --no-install  install nothing, fail if something is
#                                    missing (the test suite's way)
#   scripts/package.sh --deps        only install what is missing, build
#                                    nothing (scripts/test.sh, with --lintian)
#   CUDA_ROOT=/opt/cuda scripts/package.sh    the CUDA headers' toolkit
#                                    (default /usr/local/cuda)
#
# The HTML report's JavaScript libraries are embedded at build time and the
# build does not reach the network: `npm ci` runs here first when
# analyzer/render/html/node_modules is missing or stale, and the copy gets
# the libraries that the page embeds (debian/README.source).
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
out=build/deb
install=1
lintian=0
deps_only=0
while (($#)); do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    --lintian) lintian=1; shift ;;
    --no-install) install=0; shift ;;
    --deps) deps_only=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "package: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

apt_install() {
  if ((!install)); then
    echo "package: missing $* (scripts/package.sh without --no-install installs them)" >&2
    exit 1
  fi
  echo "package: installing $*"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

tools=(build-essential dpkg-dev debhelper)
((lintian)) && tools+=(lintian)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) && apt_install "${missing[@]}"

# debian/control's Build-Depends that are not installed, by name: the first
# of each set of alternatives, without version or architecture.
unmet="$(dpkg-checkbuilddeps 2>&1 >/dev/null | sed -n 's/.*Unmet build dependencies: //p')" || true
if [ -n "$unmet" ]; then
  read -r -a names <<<"$(sed -E 's/\([^)]*\)//g; s/\|[^,]*//g; s/:[a-z]+//g; s/,/ /g' <<<"$unmet")"
  apt_install "${names[@]}"
fi

html_dir=analyzer/render/html
# Whether node_modules holds each package the page embeds at the version
# package-lock.json pins. By content, not by file times: a checkout or merge
# gives package-lock.json a new time without changing what it pins.
js_libraries_installed() {
  python3 - "$html_dir" $(python3 "$html_dir/embed_html.py" --packages) <<'PY'
import json, os, sys
d, names = sys.argv[1], sys.argv[2:]
pinned = json.load(open(os.path.join(d, "package-lock.json")))["packages"]
for n in names:
    try:
        have = json.load(open(os.path.join(d, "node_modules", n, "package.json")))["version"]
    except (OSError, ValueError, KeyError):
        sys.exit(1)
    if have != pinned.get("node_modules/" + n, {}).get("version"):
        sys.exit(1)
PY
}
if ! js_libraries_installed; then
  if ((!install)); then
    # npm ci empties node_modules before it fetches: never start it where
    # the network may be missing (the suite's offline build) or unasked.
    echo "package: $html_dir/node_modules lacks the pinned JavaScript libraries: run scripts/setup.sh (npm ci there), or scripts/package.sh without --no-install" >&2
    exit 1
  fi
  command -v npm >/dev/null || apt_install nodejs npm
  echo "package: installing the HTML report's JavaScript libraries (npm ci)"
  (cd "$html_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

((deps_only)) && exit 0

version="$(dpkg-parsechangelog -SVersion)"
work="$(mktemp -d "${TMPDIR:-/tmp}/cumemtrace-deb.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tree="$work/cumemtrace-$version"
mkdir "$tree"
# The tree as it is (tracked files and new ones, not what .gitignore names),
# or, outside a git checkout, everything but build directories.
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$src" ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$tree"
else
  tar --exclude='./build*' --exclude=node_modules --exclude=./.git -cf - . | tar -xf - -C "$tree"
fi
mkdir "$tree/$html_dir/node_modules"
cp -p "$html_dir/node_modules/.package-lock.json" "$tree/$html_dir/node_modules/"
for p in $(python3 "$html_dir/embed_html.py" --packages); do
  cp -a "$html_dir/node_modules/$p" "$tree/$html_dir/node_modules/"
done

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/cumemtrace*_*.deb "$out"/cumemtrace_*.buildinfo "$out"/cumemtrace_*.changes
echo "package: dpkg-buildpackage -b -us -uc in $tree (log: $out/build.log)"
if ! (cd "$tree" && dpkg-buildpackage -b -us -uc -J"${CMT_PACKAGE_JOBS:-$(nproc)}") >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log" >&2
  echo "package: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
  exit 1
fi
mv "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out/"
ls "$out"/*.deb
if ((lintian)); then
  echo "package: lintian"
  lintian --fail-on error,warning --display-info "$out"/cumemtrace_"${version}"_*.changes
fi
