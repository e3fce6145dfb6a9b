#!/usr/bin/env bash
# libFuzzer harnesses for the zkey and wtns readers, the control protocol and cuzk-api's
# HTTP side (fuzz_api.c: requests through libmicrohttpd to the handlers, bodies, the
# tokens file).
#   tests/fuzz/run.sh [SECONDS]   build (clang, -fsanitize=fuzzer,address,undefined) into
#                                 $BUILD/fuzz/ and run each target SECONDS (default 30)
# fuzz_control also runs each parsed submit and preload through the descriptor path
# (control_submit_check) with one descriptor of each kind. Seeds: the fixtures' zkeys and witnesses, tests/fuzz/seeds/control/*; then every input
# in tests/fuzz/regress/<target>/ (crashes found earlier, kept as regression tests) is
# replayed first. A new crash is written to $BUILD/fuzz/crash-<target>-*: copy it into
# tests/fuzz/regress/<target>/ once fixed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
. tests/fixtures/env.sh
SECS="${1:-${FUZZ_SECONDS:-30}}"
BUILD="${BUILD:-build}"
out="$BUILD/fuzz"
mkdir -p "$out"
CC="${FUZZ_CC:-clang}"
command -v "$CC" >/dev/null || {
  echo "SKIP: $CC not found (apt-get install clang to run the fuzzers)"
  exit 77
}
# Instrumented: the parsers. The arithmetic they call (field, curve) comes from the
# normal build's libraries (make first), uninstrumented: it parses nothing.
srcs=(zk/zkey.c zk/wtns.c zk/binfile.c base/error.c supervisor/control.c supervisor/submit_check.c
  supervisor/copies.c supervisor/input_bounds.c supervisor/wgen_trust.c supervisor/peer_acl.c
  supervisor/circuit_decl.c proto/protocol.c)
for l in zk shm base; do
  [ -f "$BUILD/lib/libcuzk_$l.a" ] || {
    echo "FAIL: $BUILD/lib/libcuzk_$l.a missing (run make)"
    exit 1
  }
done
# pkg-config's answers are words: split into arrays
read -r -a pc_cflags <<<"$(pkg-config --cflags jansson)"
read -r -a pc_libs <<<"$(pkg-config --libs liburing numa hwloc jansson)"
flags=(-g -O1 "-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=undefined
  -I. -Itests/fuzz -D_GNU_SOURCE -std=gnu17 -march=x86-64-v3 -pthread
  "${pc_cflags[@]}")
libs=("$BUILD/lib/libcuzk_zk.a" "$BUILD/lib/libcuzk_shm.a" "$BUILD/lib/libcuzk_base.a"
  "${pc_libs[@]}" -lgmp -lm -lrt -pthread)
targets=(zkey wtns control)
# cuzk-api's parsers (fuzz_api.c), where libmicrohttpd and libcurl are installed (as the build)
# (queue mode, off here, links the fleet's store functions: libpq is loaded at run time)
# (every api/ file but its main(), so that a new file of cuzk-api needs no edit here)
api_srcs=(proto/ctl_client.c)
for f in api/*.c; do [ "$f" = api/main.c ] || api_srcs+=("$f"); done
api_libs=()
if pkg-config --exists libmicrohttpd libcurl; then
  targets+=(api)
  read -r -a pc_cflags <<<"$(pkg-config --cflags libpq)"
  # libcurl and sqlite3: the callbacks' deliveries (api/callback.c)
  read -r -a pc_libs <<<"$(pkg-config --libs libmicrohttpd libcrypto libcurl sqlite3)"
  api_libs=("${pc_cflags[@]}" "$BUILD/lib/libcuzk_store.a" "$BUILD/lib/libcuzk_zk.a"
    "${pc_libs[@]}" -ldl)
else
  echo "note: no libmicrohttpd or libcurl: fuzz_api is left out"
fi
for t in "${targets[@]}"; do
  extra=()
  [ "$t" = api ] && extra=("${api_srcs[@]}" "${api_libs[@]}")
  if [ ! -x "$out/fuzz_$t" ] || [ -n "$(find tests/fuzz tests/unit/helper_body_ranges.h "${srcs[@]}" api base proto store supervisor zk shm "$BUILD/lib" -newer "$out/fuzz_$t" \( -name '*.[ch]' -o -name '*.a' \) | head -1)" ]; then
    echo "building $out/fuzz_$t"
    "$CC" "${flags[@]}" -o "$out/fuzz_$t" "tests/fuzz/fuzz_$t.c" "${srcs[@]}" "${extra[@]}" "${libs[@]}"
  fi
done
fx="$REF_FIXTURES"
declare -A seeds=([zkey]=circuit_final.zkey [wtns]=witness.wtns)
rc=0
for t in "${targets[@]}"; do
  corpus="$out/corpus-$t"
  mkdir -p "$corpus"
  if [ "$t" = control ] || [ "$t" = api ]; then
    cp "tests/fuzz/seeds/$t"/* "$corpus/"
  else for d in "$fx"/*/; do cp "$d/${seeds[$t]}" "$corpus/$(basename "$d").$t"; done; fi
  if [ -d "tests/fuzz/regress/$t" ] && ls "tests/fuzz/regress/$t"/* >/dev/null 2>&1; then
    "$out/fuzz_$t" "tests/fuzz/regress/$t"/* >"$out/regress-$t.log" 2>&1 ||
      {
        echo "FAIL: fuzz_$t regression inputs crash (log $out/regress-$t.log)"
        rc=1
        continue
      }
  fi
  FUZZ_ZKEY="$fx/bn128/circuit_final.zkey" "$out/fuzz_$t" -max_total_time="$SECS" -max_len=16384 \
    -artifact_prefix="$out/crash-$t-" -print_final_stats=1 "$corpus" >"$out/fuzz-$t.log" 2>&1 ||
    {
      echo "FAIL: fuzz_$t found a crash: $(find "$out" -maxdepth 1 -name "crash-$t-*" | head -n 1) (log $out/fuzz-$t.log)"
      rc=1
      continue
    }
  echo "ok: fuzz_$t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/fuzz-$t.log" | awk '{print $2}') executions in $SECS s, no crash"
done
exit $rc
