#!/usr/bin/env bash
# `cuzk build-witness` + `cuzk witness` against `snarkjs wtns calculate`, byte for byte:
#   - every fixture of tests/fixtures/make.sh (bn128 and bls12381): the generator built
#     from the fixture's circuit_cpp/ (circom --c), run on its input.json, must write
#     exactly the fixture's witness.wtns (snarkjs wtns calculate, circom's wasm);
#   - on bn128/mulchain-10 and bls12381/manypub, inputs written in the other forms
#     circom accepts: negative decimal, hex string, JSON number, nested arrays;
#   - the generator exports only cuzk's ABI and has no text relocations;
#   - `cuzk prove-local --witness-gen` proves every fixture from its input.json, and
#     snarkjs groth16 verify accepts each proof;
#   - a generator for the other curve, or for another circuit, is refused against the
#     zkey (exit 7) before the input is read.
# Environment: BUILD (default build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/wgen.sh
. "$HERE/../lib/wgen.sh"
wgen_script_init

n=0
while IFS= read -r d; do
  label="$(echo "${d#"$FIXTURES"/}" | tr / _)"
  g="$(wgen_for "$d")"
  "$CUZK" witness --witness-gen "$g" "$d/input.json" "$tmp/$label.wtns" ||
    {
      echo "FAIL: cuzk witness on $d/input.json exited $?"
      exit 1
    }
  cmp "$tmp/$label.wtns" "$d/witness.wtns" ||
    {
      echo "FAIL: $label: cuzk witness differs from snarkjs wtns calculate"
      exit 1
    }
  echo "ok   $label: witness byte-identical to snarkjs ($(stat -c %s "$d/witness.wtns") bytes)"
  n=$((n + 1))
done < <(bash "$ROOT/tests/fixtures/make.sh" --list)

# Other spellings of the values, against snarkjs on the same input.
other() { # fixture-dir label json
  local d="$1" label="$2" json="$3"
  echo "$json" >"$tmp/$label.json"
  "$SNARKJS" wtns calculate "$d/circuit_js/circuit.wasm" "$tmp/$label.json" "$tmp/$label.snarkjs.wtns" >/dev/null
  "$CUZK" witness --witness-gen "$(wgen_for "$d")" "$tmp/$label.json" "$tmp/$label.cuzk.wtns" ||
    {
      echo "FAIL: cuzk witness on $label ($json) exited $?"
      exit 1
    }
  cmp "$tmp/$label.cuzk.wtns" "$tmp/$label.snarkjs.wtns" ||
    {
      echo "FAIL: $label ($json): cuzk witness differs from snarkjs"
      exit 1
    }
  echo "ok   $label: $json"
}
other "$FIXTURES/bn128/mulchain-10" neg_hex '{"x": "-5", "k": "0x1f2E"}'
other "$FIXTURES/bn128/mulchain-10" number '{"x": 12345678901, "k": -1}'
other "$FIXTURES/bls12381/manypub" nested \
  '{"in": [[1, 2, 3, 4, 5], [6, 7, 8, 9, "10"], ["0x0b", 12, 13, 14, 15], [16, 17, 18, 19, "-20"]], "secret": "3"}'

# Only cuzk's ABI is exported; no text relocations (fr.asm linked as PIC).
g="$(wgen_for "$FIXTURES/bn128/poseidon")"
exported="$(nm -D --defined-only "$g" | awk '{print $3}' | sort | tr '\n' ' ')"
[ "$exported" = "cuzk_wgen_abi cuzk_wgen_describe cuzk_wgen_fingerprint cuzk_wgen_free cuzk_wgen_get cuzk_wgen_new cuzk_wgen_run cuzk_wgen_set " ] ||
  {
    echo "FAIL: $g exports more than cuzk's ABI: $exported"
    exit 1
  }
if readelf -d "$g" | grep -q TEXTREL; then
  echo "FAIL: $g has text relocations"
  exit 1
fi
echo "ok   generator exports only cuzk_wgen_*, no TEXTREL"

# prove-local from input.json; snarkjs verifies.
while IFS= read -r d; do
  label="$(echo "${d#"$FIXTURES"/}" | tr / _)"
  "$CUZK" prove-local --witness-gen "$(wgen_for "$d")" "$d/circuit_final.zkey" "$d/input.json" \
    "$tmp/$label.proof.json" "$tmp/$label.public.json" ||
    {
      echo "FAIL: cuzk prove-local --witness-gen on $d exited $?"
      exit 1
    }
  out="$("$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/$label.public.json" "$tmp/$label.proof.json" 2>&1)" ||
    {
      echo "FAIL: snarkjs refuses the proof of $label: $out"
      exit 1
    }
  case "$out" in *OK*) ;; *)
    echo "FAIL: snarkjs on $label: $out"
    exit 1
    ;;
  esac
  echo "ok   $label: prove-local from input.json, snarkjs OK"
done < <(bash "$ROOT/tests/fixtures/make.sh" --list)

# A generator that does not belong to the zkey: exit 7, the reason, no proof.
mismatch() { # label gen-fixture zkey-fixture word
  local label="$1" gd="$FIXTURES/$2" zd="$FIXTURES/$3" word="$4" rc=0
  "$CUZK" prove-local --witness-gen "$(wgen_for "$gd")" "$zd/circuit_final.zkey" "$zd/input.json" \
    "$tmp/mm.proof.json" "$tmp/mm.public.json" 2>"$tmp/mm.err" || rc=$?
  [ $rc -eq 7 ] || {
    echo "FAIL: $label: exit $rc, expected 7: $(cat "$tmp/mm.err")"
    exit 1
  }
  grep -q "$word" "$tmp/mm.err" || {
    echo "FAIL: $label: message lacks '$word': $(cat "$tmp/mm.err")"
    exit 1
  }
  [ ! -e "$tmp/mm.proof.json" ] || {
    echo "FAIL: $label: a proof was written"
    exit 1
  }
  echo "ok   $label: exit 7: $(cat "$tmp/mm.err")"
}
mismatch other_curve bls12381/mulchain-10 bn128/mulchain-10 "another curve"
mismatch other_circuit bn128/mulchain-10 bn128/justabove "another circuit"
echo "PASS: $n fixtures byte-identical to snarkjs and proved from input.json, 3 other input spellings, 2 mismatches"
