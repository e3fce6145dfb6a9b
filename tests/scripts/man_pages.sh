#!/usr/bin/env bash
# The manual pages (docs/man/*.scd, scdoc): each renders, and every option that
# cuzk, cuzkd, cuzk-top and cuzk-api list in their --help (the usage, above the exit
# codes) is in the program's page, so a new option without its page fails here. With
# man-db installed, each rendered page also formats without warnings.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
NEED_MAKE="make" need_built bin/cuzk bin/cuzkd bin/cuzk-top
need_tool scdoc "scdoc not installed (deploy/install-deps.sh installs it)"
use_tmp
fail() {
  echo "man_pages: FAIL: $*" >&2
  exit 1
}

for page in cuzk.1 cuzkd.8 cuzk-top.1 cuzkd.conf.5 cuzk-api.8; do
  scdoc <"docs/man/$page.scd" >"$tmp/$page" || fail "scdoc: docs/man/$page.scd"
  grep -q '^\.TH' "$tmp/$page" || fail "$page: no .TH header"
done
n=0
pairs=(cuzk:cuzk.1 cuzkd:cuzkd.8 cuzk-top:cuzk-top.1)
# cuzk-api is built where libmicrohttpd is (the Makefile leaves it out otherwise)
[ -x "$BUILD/bin/cuzk-api" ] && pairs+=(cuzk-api:cuzk-api.8)
for pair in "${pairs[@]}"; do
  bin="${pair%%:*}" page="${pair#*:}"
  opts="$("$BUILD/bin/$bin" --help | sed '/^exit codes/,$d' | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)"
  [ -n "$opts" ] || fail "$bin --help lists no option"
  for o in $opts; do
    # scdoc writes "\-\-name" or "--name" in roff; the source is what a person edits
    grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|$)" "docs/man/$page.scd" ||
      fail "$bin --help has $o, docs/man/$page.scd does not"
    n=$((n + 1))
  done
  echo "ok   $bin: $(echo "$opts" | wc -l) options of --help in $page"
done
# --version prints debian/changelog's version
want="$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)"
for bin in cuzk cuzkd cuzk-top; do
  got="$("$BUILD/bin/$bin" --version)"
  [ "$got" = "$bin $want" ] || fail "$bin --version: '$got', debian/changelog says $want"
done
echo "ok   cuzk, cuzkd, cuzk-top --version: $want (debian/changelog)"
if command -v man >/dev/null; then
  for page in cuzk.1 cuzkd.8 cuzk-top.1 cuzkd.conf.5 cuzk-api.8; do
    w="$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$tmp/$page" 2>&1 >/dev/null)" || true
    [ -z "$w" ] || fail "$page: man --warnings: $w"
  done
  echo "ok   every page formats without warnings (man --warnings)"
fi
echo "PASS: $n options documented, versions agree"
