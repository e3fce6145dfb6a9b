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
