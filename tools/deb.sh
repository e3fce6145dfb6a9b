#!/usr/bin/env bash
# make deb: build the Debian package from a copy of the source (the files git tracks
# or would track, less tests/, which the package build does not run: never build
# outputs or fixture caches) in $BUILD/deb/src, with
# dpkg-buildpackage -b -us -uc; the .deb files land in $BUILD/deb/. A build whose
# source is unchanged since the last one (same file list and contents) is reused.
# --lint: run lintian on the result (0 errors and 0 warnings wanted; the overrides
# in debian/*.lintian-overrides say why each is one). DEB_PROFILES: build profiles
# (pkg.cuzk.cuda: the CUDA package). Environment: BUILD (default build).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
out="$BUILD/deb"
mkdir -p "$out"
# One build at a time (two tests may ask for the package at once).
exec 9>"$out/.lock"
flock 9

version="$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)"
profiles="${DEB_PROFILES:-}"
if [ "${1:-}" = --lint ]; then
  shopt -s nullglob
  debs=("$out"/*_"$version"_amd64.deb)
  [ ${#debs[@]} -gt 0 ] || {
    echo "deb.sh: no package of $version in $out: run make deb" >&2
    exit 1
  }
  # --fail-on warning: a warning is a failure; info and pedantic tags are shown.
  lintian --fail-on error,warning --display-info "$out"/cuzk*_"$version"_amd64.changes
  echo "lintian: 0 errors, 0 warnings (${debs[*]##*/})"
  exit 0
fi

# The source's identity: every file's name and content hash, and the profiles.
files() { git ls-files -co --exclude-standard -z | grep -zv '^tests/'; }
sum="$({
  files | sort -z | xargs -0 sha256sum
  echo "$profiles"
} | sha256sum | cut -c1-16)"
if [ -f "$out/.source" ] && [ "$(cat "$out/.source")" = "$sum" ] && ls "$out"/cuzk*_"$version"_amd64.deb >/dev/null 2>&1; then
  echo "deb.sh: $out has the package of this source ($sum): reused"
  ls -l "$out"/*.deb
  exit 0
fi
rm -rf "$out/src" "$out"/*.deb "$out"/*.ddeb "$out"/*.changes "$out"/*.buildinfo "$out/.source"
mkdir -p "$out/src"
files | tar -c --null -T - | tar -x -C "$out/src"
t0=$(date +%s)
(
  cd "$out/src"
  # The package's build is its own: nothing of this checkout's make (its BUILD dir,
  # a CUDA or DESTDIR choice, the jobserver of an outer make) may leak into it.
  unset BUILD CUDA PREFIX DESTDIR SYSCONFDIR MAKEFLAGS MFLAGS MAKELEVEL CFLAGS LDFLAGS CPPFLAGS
  DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=$(nproc)}" \
    dpkg-buildpackage -b -us -uc ${profiles:+-P"$profiles"}
) >"$out/build.log" 2>&1 || {
  tail -n 40 "$out/build.log"
  echo "deb.sh: dpkg-buildpackage failed (log $out/build.log)" >&2
  exit 1
}
echo "$sum" >"$out/.source"
echo "deb.sh: built in $(($(date +%s) - t0)) s:"
ls -l "$out"/*.deb
