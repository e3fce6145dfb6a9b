#!/usr/bin/env bash
# Each binary names only the shared libraries it calls (every one named is loaded and
# relocated at each start, whether used or not): no binary names libpq (the fleet
# queue loads it on first use, store/pq_dl.c), `cuzk` names none of cuzkd's (sqlite,
# hwloc, liburing) nor cuzk-top's (ncurses), cuzk-top alone names ncurses and cuzk-api
# alone libmicrohttpd (and of cuzkd's only sqlite: its callbacks' deliveries). Then,
# where a user namespace can hide libpq.so.5 (a bind mount of an empty file over it,
# the library really absent to the process), a --queue command fails with exit 10 and
# the message naming the package, and prove-local on a missing file still runs (exit 3).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_tool readelf "readelf not installed (binutils)"
need_cuzk
NEED_MAKE="make" need_built bin/cuzkd bin/cuzk-top bin/cuzk-synth bin/cuzk-gpuworker bin/cuzk-finalizer
fail() {
  echo "lean_link: FAIL: $*" >&2
  exit 1
}

needed() { readelf -d "$BUILD/bin/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
for b in cuzk cuzkd cuzk-top cuzk-synth cuzk-gpuworker cuzk-finalizer; do
  libs="$(needed "$b" | tr '\n' ' ')"
  echo "ok   $b: $libs"
  case " $libs" in *" libpq.so"*) fail "$b names libpq: store/pq_dl.c loads it, link without -lpq" ;; esac
  if [ "$b" != cuzk-top ]; then
    case " $libs" in *" libncurses"* | *" libtinfo"*) fail "$b names ncurses: only cuzk-top draws with it" ;; esac
  fi
done
for l in libsqlite3 libhwloc liburing; do
  needed cuzk | grep -q "^$l\." && fail "cuzk names $l, which only cuzkd calls"
done
needed cuzk-top | grep -q '^libncursesw\.' || fail "cuzk-top does not name libncursesw (this test's own check is stale)"
# libmicrohttpd (and through it GnuTLS) is cuzk-api's alone
for b in cuzk cuzkd cuzk-top cuzk-synth cuzk-gpuworker cuzk-finalizer; do
  needed "$b" | grep -q '^libmicrohttpd\.' && fail "$b names libmicrohttpd, which only cuzk-api calls"
done
if [ -x "$BUILD/bin/cuzk-api" ]; then
  echo "ok   cuzk-api: $(needed cuzk-api | tr '\n' ' ')"
  needed cuzk-api | grep -q '^libmicrohttpd\.' || fail "cuzk-api does not name libmicrohttpd (this test's own check is stale)"
  needed cuzk-api | grep -q '^libsqlite3\.' || fail "cuzk-api does not name libsqlite3 (its callbacks' file; this test's own check is stale)"
  for l in libhwloc liburing libncursesw; do
    needed cuzk-api | grep -q "^$l\." && fail "cuzk-api names $l, which it never calls"
  done
fi
echo "ok   no binary names libpq; cuzk names no library of cuzkd's or cuzk-top's"

lp="$(ldconfig -p 2>/dev/null | awk '!p && $1 == "libpq.so.5" && /x86-64/ { p = $NF } END { print p }')"
if [ -z "$lp" ]; then
  echo "note: libpq.so.5 is not installed: the fleet queue's message is what the next check sees anyway"
fi
use_tmp
: >"$tmp/empty"
hide="${lp:+mount --bind $tmp/empty $lp && }"
if ! unshare -rm sh -c "${hide}true" 2>/dev/null; then
  echo "note: no user and mount namespace here (unshare -rm): the missing-libpq run is not checked"
  exit 0
fi
set +e
unshare -rm sh -c "${hide}exec \"\$0\" status --queue postgresql://localhost/cuzk 1" "$CUZK" >"$tmp/out" 2>&1
rc=$?
unshare -rm sh -c "${hide}exec \"\$0\" prove-local $tmp/none.zkey $tmp/none.wtns $tmp/p.json $tmp/q.json" "$CUZK" >"$tmp/pl" 2>&1
rc_pl=$?
set -e
[ "$rc" = 10 ] || fail "cuzk status --queue without libpq exited $rc, not 10: $(cat "$tmp/out")"
grep -q 'the fleet queue needs libpq (install libpq5)' "$tmp/out" || fail "no message naming libpq5: $(cat "$tmp/out")"
echo "ok   without libpq: --queue exits 10, \"$(head -c 120 "$tmp/out")\""
[ "$rc_pl" = 3 ] || fail "prove-local on a missing file without libpq exited $rc_pl, not 3: $(cat "$tmp/pl")"
echo "ok   without libpq: prove-local runs (a missing zkey: exit 3)"
