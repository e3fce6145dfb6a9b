#!/usr/bin/env bash
# prove-local's durability: by default the outputs are published by temp file and
# rename with no sync (rapidsnark's behaviour); with --sync both files are
# fdatasync'd before either is renamed and their directory fsync'd once after the
# renames (once for each directory when they differ). The system calls are counted
# and ordered with strace; every proof is verified by snarkjs and no temp file is
# left behind.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_tool strace "strace not installed"
need_cuzk
use_fixtures
use_tmp
fail() {
  echo "prove_local_sync: FAIL: $*" >&2
  exit 1
}
d="$FIXTURES/bn128/mulchain-10"
strace -f -o "$tmp/probe" true 2>/dev/null || {
  echo "SKIP: strace cannot trace here"
  exit 77
}

# prove OUT_PROOF OUT_PUBLIC [OPTION]: strace's log of the sync and rename calls in $tmp/log
prove() {
  strace -f -qq -o "$tmp/log" -e trace=fsync,fdatasync,rename,renameat,renameat2 \
    "$CUZK" prove-local "${@:3}" "$d/circuit_final.zkey" "$d/witness.wtns" "$1" "$2"
  "$SNARKJS" groth16 verify "$d/verification_key.json" "$2" "$1" | grep -q OK || fail "snarkjs rejects $1"
}
count() { grep -c "^[0-9]* *$1(" "$tmp/log" || true; }
# the calls in order, one word a line (fdatasync, fsync, rename)
order() { sed -n 's/^[0-9]* *\(fdatasync\|fsync\|rename\)[a-z0-9]*(.*/\1/p' "$tmp/log" | tr '\n' ' '; }
no_temps() {
  local f
  for f in "$@"; do
    if compgen -G "$f/*.tmp.*" >/dev/null; then fail "a temp file is left in $f"; fi
  done
}

prove "$tmp/p.json" "$tmp/pub.json"
[ "$(count fsync)$(count fdatasync)" = 00 ] || fail "default: $(order)(expected no sync)"
[ "$(order)" = "rename rename " ] || fail "default: $(order)(expected two renames)"
echo "ok   default: no sync, two renames"

rm -f "$tmp/p.json" "$tmp/pub.json"
prove "$tmp/p.json" "$tmp/pub.json" --sync
[ "$(order)" = "fdatasync fdatasync rename rename fsync " ] ||
  fail "--sync: $(order)(expected fdatasync fdatasync rename rename fsync)"
echo "ok   --sync: fdatasync x2, renames, one directory fsync"

mkdir "$tmp/a" "$tmp/b"
prove "$tmp/a/p.json" "$tmp/b/pub.json" --sync
[ "$(order)" = "fdatasync fdatasync rename rename fsync fsync " ] ||
  fail "--sync, two directories: $(order)(expected an fsync of each directory)"
echo "ok   --sync, two directories: each directory fsync'd"
no_temps "$tmp" "$tmp/a" "$tmp/b"
echo "prove_local_sync: all checks passed"
