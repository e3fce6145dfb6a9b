# shellcheck shell=bash
# Source me (bench/inputjson.sh, bench/backlog.sh): the circom C++ witness binary +
# rapidsnark column, the pipeline proving servers use today (witness binary through
# a .wtns file, then rapidsnark's prover). Nothing of it is in this repository or
# built by it: it runs only when both are present, and the bench says why not
# otherwise.
#   RAPIDSNARK            path of an iden3/rapidsnark `prover` binary built outside
#                         this repository
#   NLOHMANN_JSON_INCLUDE a directory holding nlohmann/json.hpp, which circom's C++
#                         main.cpp includes; unset: the compiler's own include path
#                         (Debian: nlohmann-json3-dev)
# Also needs g++, nasm and libgmp-dev (as cuzk build-witness). Needs BUILD and tmp.
#
# native_init: NATIVE=1 when all of it is there, else NATIVE=0 and NATIVE_WHY says
#   what is missing.
# native_witness_bin FIXTURE: circom's witness binary of FIXTURE (its circuit_cpp/
#   built with its own Makefile), cached in $BUILD/witness-bin/ on the sources' hash;
#   prints its path.
# native_prove BIN ZKEY INPUT PROOF PUBLIC: witness binary BIN (INPUT -> a .wtns in
#   $tmp), then rapidsnark's prover.
native_init() {
  local t
  NATIVE=0 NATIVE_WHY=""
  NATIVE_CFLAGS="-std=c++11 -O3 -I.${NLOHMANN_JSON_INCLUDE:+ -I$NLOHMANN_JSON_INCLUDE}"
  if [ -z "${RAPIDSNARK:-}" ]; then
    NATIVE_WHY="RAPIDSNARK is not set (the path of a rapidsnark prover built outside this repository)"
  elif [ ! -x "$RAPIDSNARK" ]; then
    NATIVE_WHY="RAPIDSNARK=$RAPIDSNARK is not an executable"
  fi
  for t in g++ nasm; do
    [ -n "$NATIVE_WHY" ] || command -v "$t" >/dev/null || NATIVE_WHY="$t is not installed"
  done
  # shellcheck disable=SC2086 # the flags are words
  if [ -z "$NATIVE_WHY" ] &&
    ! echo '#include <nlohmann/json.hpp>' | g++ $NATIVE_CFLAGS -x c++ -fsyntax-only - >/dev/null 2>&1; then
    NATIVE_WHY="nlohmann/json.hpp not found (install nlohmann-json3-dev, or set NLOHMANN_JSON_INCLUDE)"
  fi
  # shellcheck disable=SC2034 # for the bench that sources this
  [ -n "$NATIVE_WHY" ] || NATIVE=1
}

native_witness_bin() { # fixture dir
  local d="$1" out stamp
  out="$BUILD/witness-bin/$(basename "$(dirname "$d")")-$(basename "$d")"
  stamp="$(cat "$d/circuit_cpp"/*.cpp "$d/circuit_cpp/circuit.dat" | sha256sum | cut -d' ' -f1) $NATIVE_CFLAGS"
  if [ ! -x "$out/circuit" ] || [ "$(cat "$out/stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$out" && mkdir -p "$out" && cp -r "$d/circuit_cpp/." "$out/"
    make -s -C "$out" CFLAGS="$NATIVE_CFLAGS" circuit >"$out/build.log" 2>&1 ||
      {
        echo "bench: circom's witness binary of $d did not build: $(tail -3 "$out/build.log")" >&2
        return 1
      }
    echo "$stamp" >"$out/stamp"
  fi
  echo "$out/circuit"
}

native_prove() { # bin zkey input proof public
  # shellcheck disable=SC2154 # tmp: the bench's
  "$1" "$3" "$tmp/native.wtns" >"$tmp/native.log" 2>&1 &&
    "$RAPIDSNARK" "$2" "$tmp/native.wtns" "$4" "$5" >>"$tmp/native.log" 2>&1 ||
    {
      echo "bench: witness binary + rapidsnark on $3: $(tail -3 "$tmp/native.log")" >&2
      return 1
    }
}
