# shellcheck shell=bash
# bench/lib.sh — the preamble every bench script shares. Source it first:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh" NAME
# NAME (the script's, for messages: "bench/NAME: ...") goes into BENCH_NAME. Sets ROOT
# (the checkout, also the working directory), BUILD (absolute; default build) and CUZK
# ($BUILD/bin/cuzk), the fixture variables of tests/fixtures/env.sh (FIXTURES,
# SNARKJS, MAKE_FIXTURES...; it only sets variables), and bench_need.
# shellcheck disable=SC2034  # for the scripts' own messages
BENCH_NAME="${1:?bench/lib.sh: pass the script name}"
# shellcheck source=../tests/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/common.sh" # ROOT (the cwd), BUILD, need_built
# shellcheck disable=SC2034  # read by the scripts that source this
CUZK="$BUILD/bin/cuzk"
# shellcheck source=../tests/fixtures/env.sh
. "$ROOT/tests/fixtures/env.sh"

# bench_need PATH... (relative to BUILD: bin/cuzk, bench/stats_dump): stops the script
# with a note when one is not built.
bench_need() { NEED_MAKE="make all bench" need_built "$@"; }

# bench_rapidsnark WHAT: RAPIDSNARK, the path of an iden3/rapidsnark `prover` built
# outside this tree, or empty; emptied, with a note that WHAT is left out, when it is
# set but not an executable.
bench_rapidsnark() {
  RAPIDSNARK="${RAPIDSNARK:-}"
  if [ -n "$RAPIDSNARK" ] && [ ! -x "$RAPIDSNARK" ]; then
    echo "bench/$BENCH_NAME: RAPIDSNARK=$RAPIDSNARK is not an executable; $1 left out" >&2
    RAPIDSNARK=""
  fi
}

# bench_fixture CURVE K|NAME: 0 when FIXTURES/CURVE/mulchain-K (or FIXTURES/CURVE/NAME,
# a real-shaped circuit such as merkle-13: make.sh --real) is there, else what
# tests/fixtures/make.sh --curve CURVE --size K (--only NAME) returns (its output in
# $BENCH_FXLOG, default /dev/null). A fixture whose files are all there is used as it
# is: make.sh builds one fixture at a time under a lock, and a long build elsewhere
# (circom at 2^18: minutes; a mulchain_gen fixture at 2^22: about 5 minutes on 2 CPUs)
# must not hold the bench.
bench_fixture() {
  local f name="mulchain-$2" how=(--size "$2")
  case "$2" in *-*) name="$2" how=(--only "$2") ;; esac
  for f in circuit_final.zkey witness.wtns verification_key.json info.txt; do
    [ -s "$FIXTURES/$1/$name/$f" ] || {
      bash "$MAKE_FIXTURES" -q --curve "$1" "${how[@]}" >"${BENCH_FXLOG:-/dev/null}" 2>&1
      return
    }
  done
}
