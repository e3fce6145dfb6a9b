#!/usr/bin/env bash
# `cuzk witness` (and so prove-local --witness-gen and the synth, which share
# synth/wgen.c) on bad input: each case exits with its documented code, one line on
# stderr naming the input file and, where there is one, the signal, and no .wtns:
#   4  invalid JSON, a duplicate name, not an object, a value that is not a field
#      element (p itself, a fraction, a boolean, hex without digits, "12ab"), a file
#      that is not a generator
#   7  a missing signal (named from circom's .sym), an unknown signal, an array one
#      value short or long
#   8  a circom assert that fails inside the generator: circom's template and line
#   3  an input file that does not exist
# The assert case compiles a three-line circuit with circom --c (seconds).
# Environment: BUILD (default build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/wgen.sh
. "$HERE/../lib/wgen.sh"
wgen_script_init

bad() { # gen code json words...
  local gen="$1" code="$2" json="$3" rc=0 w
  shift 3
  printf '%s' "$json" >"$tmp/in.json"
  rm -f "$tmp/out.wtns"
  "$CUZK" witness --witness-gen "$gen" "$tmp/in.json" "$tmp/out.wtns" 2>"$tmp/err" || rc=$?
  [ $rc -eq "$code" ] || {
    echo "FAIL: $json: exit $rc, expected $code: $(cat "$tmp/err")"
    exit 1
  }
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || {
    echo "FAIL: $json: not one line: $(cat "$tmp/err")"
    exit 1
  }
  for w in "in.json" "$@"; do
    grep -qF -- "$w" "$tmp/err" || {
      echo "FAIL: $json: message lacks '$w': $(cat "$tmp/err")"
      exit 1
    }
  done
  [ ! -e "$tmp/out.wtns" ] || {
    echo "FAIL: $json: a .wtns was written"
    exit 1
  }
  echo "ok   exit $code: $(cat "$tmp/err")"
}

M="$(wgen_for "$FIXTURES/bn128/mulchain-10")"
P="$(wgen_for "$FIXTURES/bn128/manypub")"
R=21888242871839275222246405745257275088548364400416034343698204186575808495617
bad "$M" 4 '{"x": "7", "k": ' "not valid JSON"
bad "$M" 4 '{"x": "7", "k": "1", "k": "2"}' "not valid JSON" "duplicate"
bad "$M" 4 '["7", "1"]' "JSON object"
bad "$M" 4 "{\"x\": \"7\", \"k\": \"$R\"}" "signal k" "not below"
bad "$M" 4 '{"x": 1.5, "k": "1"}' "signal x" "fractional"
bad "$M" 4 '{"x": true, "k": "1"}' "signal x" "boolean"
bad "$M" 4 '{"x": "0x", "k": "1"}' "signal x" "not a field element"
bad "$M" 4 '{"x": "7", "k": "12ab"}' "signal k" "not a field element"
bad "$M" 7 '{"x": "7"}' "not given: k"
bad "$M" 7 '{"x": "7", "k": "1", "y": "2"}' "signal y" "not an input"
bad "$P" 7 '{"in": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19], "secret": 3}' "signal in" "19 values" "expects 20"
bad "$P" 7 '{"in": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21], "secret": 3}' "signal in" "21 values"
bad "$P" 7 '{"in": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20], "secret": [3, 4]}' "signal secret" "2 values"

# Not a generator.
echo "not an ELF" >"$tmp/fake.wgen"
fails_with() { # what, code, message pattern, generator, input.json
  local rc=0
  "$CUZK" witness --witness-gen "$4" "$5" "$tmp/o.wtns" 2>"$tmp/err" || rc=$?
  [ $rc -eq "$2" ] && grep -q "$3" "$tmp/err" || {
    echo "FAIL: $1: exit $rc: $(cat "$tmp/err")"
    exit 1
  }
  echo "ok   exit $2: $(cat "$tmp/err")"
}
fails_with "fake generator" 4 "not a witness generator" "$tmp/fake.wgen" "$FIXTURES/bn128/mulchain-10/input.json"
fails_with "missing input" 3 "none.json" "$M" "$tmp/none.json"

# A circom assert that fails inside the generated code.
mkdir -p "$tmp/a"
cp "$ROOT/tests/fixtures/circuits/small_assert.circom" "$tmp/a/assert.circom"
# circom2 runs under WASI and sees only the current directory: relative paths
(cd "$tmp/a" && "$CIRCOM" assert.circom --c --sym --prime bn128 -o . >"$tmp/circom.log" 2>&1) ||
  {
    echo "FAIL: circom: $(tail -5 "$tmp/circom.log")"
    exit 1
  }
"$CUZK" build-witness --prime bn128 "$tmp/a/assert_cpp" "$tmp/a.wgen" >/dev/null
printf '{"x": "3"}' >"$tmp/good.json"
"$CUZK" witness --witness-gen "$tmp/a.wgen" "$tmp/good.json" "$tmp/good.wtns" || {
  echo "FAIL: x = 3 passes the assert"
  exit 1
}
bad "$tmp/a.wgen" 8 '{"x": "12"}' "Failed assert in template" "Small" "line 2"
echo "PASS: 15 bad inputs, each with its exit code and a message naming the file and signal"
