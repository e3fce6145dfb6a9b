#!/usr/bin/env bash
# tests/scripts/floors.sh catches a client that stands on the daemon: in a copy of the
# tree, a tool that includes a supervisor header (by its own path, or cuzkd's public
# header of the control module) makes floors.sh fail, and so does cuzk-api (api/)
# including one; the unplanted copy passes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "floors_planted: FAIL: $*"
  exit 1
}

copy() { # a fresh copy of what floors.sh reads, in $tmp/$1
  local d="$tmp/$1" m
  mkdir -p "$d/tests"
  cp "$root/Makefile" "$d/"
  cp -r "$root/tests/scripts" "$d/"
  mv "$d/scripts" "$d/tests/scripts"
  # ($(API_MODULE) is api/, built where libmicrohttpd is: copied either way)
  # shellcheck disable=SC2016 # a make variable, $(NAME), taken out
  for m in $(sed -n 's/^MODULES[[:space:]]*:=[[:space:]]*//p' "$root/Makefile" | sed 's/\$([A-Z_]*)//g') api; do
    cp -r "$root/$m" "$d/"
  done
}
floors() { # dir: floors.sh's verdict on it (includes only: no libraries there)
  BUILD="$tmp/no-build" bash "$tmp/$1/tests/scripts/floors.sh" >"$tmp/$1.out" 2>&1
}

copy clean
floors clean || fail "the unplanted copy fails: $(grep FAIL "$tmp/clean.out")"
echo "ok: unplanted copy passes"

# FILE:LINE planted, and what the failure must name. A tool (tools/) or cuzk-api (api/)
# that stands on cuzkd (floors.sh's NEVER table), by its own path or a relative one;
# the ground floor importing anything; the fleet agent standing on cuzkd.
plants=(
  'tools/client.c:#include "supervisor/sup.h"'
  'tools/client.c:#include "supervisor/control.h"'
  'tools/client.c:#include "../supervisor/sup.h"'
  'api/http.c:#include "supervisor/control.h"'
  'base/os.c:#include "zk/field.h"'
  'fleet/fleet.c:#include "supervisor/sup.h"'
)
for plant in "${plants[@]}"; do
  file="${plant%%:*}" line="${plant#*:}" name="p$RANDOM"
  copy "$name"
  printf '%s\n' "$line" >>"$tmp/$name/$file"
  floors "$name" && fail "floors.sh passed with $line in $file"
  target="${line#*\"}"
  target="${target#../}"
  grep -q "$file.*${target%%/*}" "$tmp/$name.out" ||
    fail "floors.sh failed, but not on the planted line: $(grep FAIL "$tmp/$name.out")"
  echo "ok: $line in $file -> $(grep FAIL "$tmp/$name.out" | head -n 1)"
done
