#!/usr/bin/env bash
# End to end: prove every fixture with cuzk and verify the proof with snarkjs.
#
# Fixtures: ours (the default set of tests/fixtures/make.sh, cached) and the four in
# tests/fixtures/snarkjs-groth16/. For each one:
#   * prove (cuzk prove-local ZKEY WTNS PROOF PUBLIC) and check that
#     `snarkjs groth16 verify` says OK;
#   * proof.json has the snarkjs shape (decimal strings, z = "1" / ["1","0"],
#     protocol "groth16", curve as in the verification key);
#   * public.json equals the witness values 1..nPublic (snarkjs wtns export json);
#   * prove the same witness again: the proofs differ (fresh r, s) and both verify;
#   * a tampered proof (pi_a[0] + 1) and a tampered public signal are rejected.
# bn128 and bls12381 fixtures alike: any failure on either is a failure.
#
# Environment:
#   BUILD        build dir (default build); the prover is $BUILD/bin/cuzk
#   PROVER_CMD   prover command, called as: $PROVER_CMD ZKEY WTNS PROOF PUBLIC
#                (default "$BUILD/bin/cuzk prove-local"; for instance
#                PROVER_CMD="$SNARKJS groth16 prove" checks this script itself)
#   PROVE_TIMEOUT  seconds allowed per proof (default 300)
#   E2E_FILTER   regex on "curve/name": run only matching fixtures
set -euo pipefail

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

prover_from_env
PROVE_TIMEOUT="${PROVE_TIMEOUT:-300}"

use_fixtures

use_tmp

# All checks of one fixture in one node process (snarkjs as a library: the same
# groth16.verify that the CLI calls; starting node once instead of five times
# saves most of the time). Prints one line per problem; exit 1 if any.
#   check.cjs SNARKJS_DIR VKEY WTNS PROOF1 PUBLIC1 [PROOF2 PUBLIC2]
cat >"$tmp/check.cjs" <<'JS'
const fs = require("fs");
const [snarkjsDir, vkF, wtnsF, p1F, pub1F, p2F, pub2F] = process.argv.slice(2);
const snarkjs = require(snarkjsDir);
const rd = (f) => JSON.parse(fs.readFileSync(f, "utf8"));
const errs = [];
const dec = (s) => typeof s === "string" && /^(0|[1-9][0-9]*)$/.test(s);
function shape(p, vk, what) {
  if (p.protocol !== "groth16") errs.push(`${what}: protocol is ${JSON.stringify(p.protocol)}, not "groth16"`);
  if (p.curve !== vk.curve) errs.push(`${what}: curve is ${JSON.stringify(p.curve)}, the key says ${JSON.stringify(vk.curve)}`);
  for (const n of ["pi_a", "pi_c"]) {
    const a = p[n];
    if (!Array.isArray(a) || a.length !== 3 || !a.every(dec)) errs.push(`${what}: ${n} is not 3 decimal strings (no leading zeros)`);
    else if (a[2] !== "1") errs.push(`${what}: ${n}[2] is ${a[2]}, not "1"`);
  }
  const b = p.pi_b;
  if (!Array.isArray(b) || b.length !== 3 || !b.every((e) => Array.isArray(e) && e.length === 2 && e.every(dec)))
    errs.push(`${what}: pi_b is not 3 pairs of decimal strings`);
  else if (b[2][0] !== "1" || b[2][1] !== "0") errs.push(`${what}: pi_b[2] is ${JSON.stringify(b[2])}, not ["1","0"]`);
}
const samePub = (a, b) => Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
  a.every((x, i) => typeof x === "string" && x === b[i]);
const show = (x) => JSON.stringify(x).slice(0, 300);
const bump = (s) => (BigInt(s) + 1n).toString();
async function verify(vk, pub, proof) {
  try { return await snarkjs.groth16.verify(vk, pub, proof); } catch (e) { return false; }
}
(async () => {
  const vk = rd(vkF);
  const w = await snarkjs.wtns.exportJson(wtnsF);
  const expected = w.slice(1, 1 + vk.nPublic).map((x) => x.toString());
  const p1 = rd(p1F), pub1 = rd(pub1F);
  shape(p1, vk, "proof.json");
  if (!samePub(pub1, expected)) errs.push(`public.json is ${show(pub1)}, the witness says ${show(expected)}`);
  if (!(await verify(vk, pub1, p1))) errs.push("snarkjs rejects the proof");
  if (p2F) {
    const p2 = rd(p2F), pub2 = rd(pub2F);
    shape(p2, vk, "second proof.json");
    if (!samePub(pub2, expected)) errs.push(`the second public.json is ${show(pub2)}, the witness says ${show(expected)}`);
    if (!(await verify(vk, pub2, p2))) errs.push("snarkjs rejects the second proof");
    const k = (p) => JSON.stringify([p.pi_a, p.pi_b, p.pi_c]);
    if (k(p1) === k(p2)) errs.push("two proofs of the same witness are identical (r, s not random?)");
  }
  // Tampering must be caught (this checks the check).
  if (Array.isArray(p1.pi_a) && dec(p1.pi_a[0])) {
    const bad = JSON.parse(JSON.stringify(p1)); bad.pi_a[0] = bump(bad.pi_a[0]);
    if (await verify(vk, pub1, bad)) errs.push("snarkjs accepts a tampered proof (pi_a[0] + 1)");
  }
  if (expected.length > 0) {
    const badPub = expected.slice(); badPub[0] = bump(badPub[0]);
    if (await verify(vk, badPub, p1)) errs.push("snarkjs accepts the proof with a tampered public signal");
  }
  for (const e of errs) console.log(e);
  process.exit(errs.length ? 1 : 0);
})().catch((e) => { console.log(`check failed: ${e && e.stack || e}`); process.exit(1); });
JS

# The snarkjs CLI itself, as a user would run it: exit 0 and "OK".
cli_verify() { # vkey public proof
  local out rc=0
  out="$("$SNARKJS" groth16 verify "$1" "$2" "$3" 2>&1)" || rc=$?
  [ $rc -eq 0 ] && grep -q "OK" <<<"$out"
}

prove() { # zkey wtns proof public -> the prover's exit code; stderr in $tmp/prove.err
  local rc=0
  (cd "$tmp" && timeout "$PROVE_TIMEOUT" "${PROVER[@]}" "$1" "$2" "$3" "$4") >"$tmp/prove.out" 2>"$tmp/prove.err" || rc=$?
  return $rc
}

fixtures=()
while IFS= read -r d; do
  [ -f "$d/.stamp" ] || {
    echo "FAIL: fixture $d was not built" >&2
    exit 1
  }
  fixtures+=("$d")
done < <(bash "$ROOT/tests/fixtures/make.sh" --list)
for d in "$REF_FIXTURES"/*/; do
  [ -f "$d/circuit_final.zkey" ] && fixtures+=("${d%/}")
done
if [ ${#fixtures[@]} -eq 0 ]; then
  echo "FAIL: no fixtures found" >&2
  exit 1
fi

pass=0
fail=0
failed=()
for d in "${fixtures[@]}"; do
  case "$d" in
    "$FIXTURES"/*) label="${d#"$FIXTURES"/}" ;;
    *) label="reference/${d##*/}" ;;
  esac
  if [ -n "${E2E_FILTER:-}" ] && ! [[ "$label" =~ $E2E_FILTER ]]; then continue; fi
  zkey="$d/circuit_final.zkey"
  wtns="$d/witness.wtns"
  vkey="$d/verification_key.json"
  curve="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).curve)' "$vkey")"
  w="$tmp/$(echo "$label" | tr / _)"
  mkdir -p "$w"
  errs=()
  t0=$(date +%s.%N)

  rc=0
  prove "$zkey" "$wtns" "$w/proof1.json" "$w/public1.json" || rc=$?
  if [ $rc -ne 0 ]; then
    errs+=("prove failed with exit $rc: $(head -c 500 "$tmp/prove.err")")
  else
    cli_verify "$vkey" "$w/public1.json" "$w/proof1.json" || errs+=("snarkjs groth16 verify (CLI) does not say OK")
    rc=0
    prove "$zkey" "$wtns" "$w/proof2.json" "$w/public2.json" || rc=$?
    second=("$w/proof2.json" "$w/public2.json")
    if [ $rc -ne 0 ]; then
      errs+=("second prove failed with exit $rc: $(head -c 500 "$tmp/prove.err")")
      second=()
    fi
    out="$(node "$tmp/check.cjs" "$FIXTURES/node/node_modules/snarkjs" "$vkey" "$wtns" \
      "$w/proof1.json" "$w/public1.json" "${second[@]}" 2>&1)" || {
      while IFS= read -r line; do errs+=("$line"); done <<<"$out"
    }
  fi

  secs="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')"
  if [ ${#errs[@]} -eq 0 ]; then
    echo "ok    $label ($curve, ${secs}s)"
    pass=$((pass + 1))
  else
    echo "FAIL  $label ($curve):"
    printf '        %s\n' "${errs[@]}"
    fail=$((fail + 1))
    failed+=("$label")
  fi
done

echo
[ $fail -eq 0 ] || echo "failed fixtures: ${failed[*]}"
echo "e2e_prove_verify: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
