#!/usr/bin/env bash
# `cuzk test-setup CIRCUIT.r1cs OUT.zkey` (the INSECURE test-only setup), checked from
# outside with snarkjs:
#   * on bn128 mulchain-10 as a user would: `snarkjs zkey export verificationkey`,
#     `snarkjs groth16 prove` + `snarkjs groth16 verify` (CLI) say OK, and a proof by
#     `cuzk prove-local` under the new key is verified by the snarkjs CLI too;
#   * on bn128 {mulchain-10, manypub (30 public signals), poseidon} and bls12381
#     {mulchain-10, manypub}, in one node process (snarkjs as a library: the same
#     functions its CLI calls): the key's structure equals that of the snarkjs-made
#     fixture key for the same r1cs (section sizes, the groth16 header numbers, and
#     the coefficient section byte for byte, which snarkjs derives independently);
#     snarkjs's proof and cuzk's proof both verify; a tampered public signal is
#     rejected; a proof under the ceremony key is rejected by the new key (they
#     share no toxic waste); and two runs give different keys (fresh randomness);
#   * the loud INSECURE warning on stderr and in --help;
#   * bad inputs: missing r1cs (exit 3), not an r1cs (4), truncated r1cs (5), an
#     output that cannot be written (9, nothing left behind), wrong usage (2).
#
# Environment: BUILD (default build).
set -euo pipefail

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cuzk

use_fixtures

use_tmp
fails=0

# ---- the CLI path, as a user runs it (bn128 mulchain-10) --------------------------
F="$FIXTURES/bn128/mulchain-10"
w="$tmp/cli"
mkdir -p "$w"
if "$CUZK" test-setup "$F/circuit.r1cs" "$w/k.zkey" 2>"$w/setup.err"; then
  grep -q "INSECURE" "$w/setup.err" || bad "test-setup did not print the INSECURE warning: $(head -c 300 "$w/setup.err")"
  "$SNARKJS" zkey export verificationkey "$w/k.zkey" "$w/vk.json" >/dev/null 2>&1 || bad "snarkjs zkey export verificationkey failed"
  out="$("$SNARKJS" groth16 prove "$w/k.zkey" "$F/witness.wtns" "$w/sp.json" "$w/spub.json" 2>&1)" ||
    bad "snarkjs groth16 prove failed: $(head -c 300 <<<"$out")"
  out="$("$SNARKJS" groth16 verify "$w/vk.json" "$w/spub.json" "$w/sp.json" 2>&1)" || true
  if grep -q "OK" <<<"$out"; then
    ok "bn128/mulchain-10: snarkjs groth16 prove + verify (CLI) under the new key"
  else
    bad "snarkjs groth16 verify rejects snarkjs's own proof under the new key: $(head -c 300 <<<"$out")"
  fi
  if "$CUZK" prove-local "$w/k.zkey" "$F/witness.wtns" "$w/cp.json" "$w/cpub.json" 2>"$w/prove.err"; then
    out="$("$SNARKJS" groth16 verify "$w/vk.json" "$w/cpub.json" "$w/cp.json" 2>&1)" || true
    if grep -q "OK" <<<"$out"; then
      ok "bn128/mulchain-10: cuzk prove-local, snarkjs groth16 verify (CLI)"
    else
      bad "snarkjs groth16 verify rejects cuzk's proof under the new key: $(head -c 300 <<<"$out")"
    fi
  else
    bad "cuzk prove-local under the new key failed: $(head -c 300 "$w/prove.err")"
  fi
else
  bad "cuzk test-setup on $F/circuit.r1cs failed: $(head -c 500 "$w/setup.err")"
fi
"$CUZK" test-setup --help | grep -q "INSECURE" || bad "test-setup --help does not say INSECURE"

# ---- library checks over several circuits -----------------------------------------
cat >"$tmp/check.cjs" <<'JS'
// check.cjs SNARKJS_DIR then groups of: LABEL REF_ZKEY NEW_ZKEY NEW_ZKEY2 WTNS CUZK_PROOF CUZK_PUBLIC REF_PROOF REF_PUBLIC
const fs = require("fs");
const args = process.argv.slice(2);
const snarkjs = require(args.shift());
const errs = [];
function sections(file) {
  const b = fs.readFileSync(file);
  if (b.toString("latin1", 0, 4) !== "zkey") throw new Error(`${file}: not a zkey`);
  const n = b.readUInt32LE(8), s = {};
  let off = 12;
  for (let i = 0; i < n; i++) {
    const id = b.readUInt32LE(off), size = Number(b.readBigUInt64LE(off + 4));
    off += 12;
    if (s[id]) throw new Error(`${file}: section ${id} twice`);
    s[id] = b.subarray(off, off + size);
    off += size;
  }
  return { b, s };
}
// Header numbers: everything in section 2 before the points.
function hdrNumbers(s2) {
  const n8q = s2.readUInt32LE(0), n8r = s2.readUInt32LE(4 + n8q);
  return s2.subarray(0, 8 + n8q + n8r + 12);
}
const bump = (x) => (BigInt(x) + 1n).toString();
async function verify(vk, pub, proof) {
  try { return await snarkjs.groth16.verify(vk, pub, proof); } catch (e) { return false; }
}
(async () => {
  while (args.length) {
    const [label, refZ, newZ, newZ2, wtnsF, cP, cPub, rP, rPub] = args.splice(0, 9);
    const e0 = errs.length;
    const ref = sections(refZ), nw = sections(newZ), nw2 = sections(newZ2);
    for (let id = 1; id <= 9; id++) {
      if (!nw.s[id]) { errs.push(`${label}: section ${id} missing`); continue; }
      if (nw.s[id].length !== ref.s[id].length)
        errs.push(`${label}: section ${id} is ${nw.s[id].length} bytes, snarkjs's is ${ref.s[id].length}`);
    }
    if (nw.s[1] && !nw.s[1].equals(ref.s[1])) errs.push(`${label}: section 1 (protocol) differs from snarkjs's`);
    if (nw.s[2] && !hdrNumbers(nw.s[2]).equals(hdrNumbers(ref.s[2])))
      errs.push(`${label}: groth16 header numbers (n8q, q, n8r, r, nVars, nPublic, domainSize) differ from snarkjs's`);
    if (nw.s[4] && !nw.s[4].equals(ref.s[4])) errs.push(`${label}: coefficient section differs from snarkjs's`);
    if (nw.s[2] && nw2.s[2] && nw.s[2].equals(nw2.s[2])) errs.push(`${label}: two runs wrote the same header (no fresh randomness?)`);
    const vk = await snarkjs.zKey.exportVerificationKey(newZ);
    const { proof, publicSignals } = await snarkjs.groth16.prove(newZ, wtnsF);
    if (!(await verify(vk, publicSignals, proof))) errs.push(`${label}: snarkjs rejects its own proof under the new key`);
    const cproof = JSON.parse(fs.readFileSync(cP, "utf8")), cpub = JSON.parse(fs.readFileSync(cPub, "utf8"));
    if (JSON.stringify(cpub) !== JSON.stringify(publicSignals)) errs.push(`${label}: cuzk's public.json differs from snarkjs's`);
    if (!(await verify(vk, cpub, cproof))) errs.push(`${label}: snarkjs rejects cuzk's proof under the new key`);
    if (publicSignals.length > 0) {
      const badPub = publicSignals.slice(); badPub[0] = bump(badPub[0]);
      if (await verify(vk, badPub, proof)) errs.push(`${label}: a tampered public signal is accepted (snarkjs proof)`);
      if (await verify(vk, badPub, cproof)) errs.push(`${label}: a tampered public signal is accepted (cuzk proof)`);
    }
    const rproof = JSON.parse(fs.readFileSync(rP, "utf8")), rpub = JSON.parse(fs.readFileSync(rPub, "utf8"));
    if (await verify(vk, rpub, rproof)) errs.push(`${label}: a proof under the ceremony key verifies under the new key`);
    console.log(errs.length === e0 ? `ok    ${label}: structure = snarkjs's, snarkjs and cuzk proofs verify, tampering rejected`
                                   : `FAIL  ${label}`);
  }
  for (const e of errs) console.log(`FAIL: ${e}`);
  process.exit(errs.length ? 1 : 0);
})().catch((e) => { console.log(`FAIL: check failed: ${e && e.stack || e}`); process.exit(1); });
JS

node_args=()
for fx in bn128/mulchain-10 bn128/manypub bn128/poseidon bls12381/mulchain-10 bls12381/manypub; do
  d="$FIXTURES/$fx"
  w="$tmp/$(tr / _ <<<"$fx")"
  mkdir -p "$w"
  t0=$(date +%s.%N)
  if ! "$CUZK" test-setup -q "$d/circuit.r1cs" "$w/k.zkey" 2>"$w/err" ||
    ! "$CUZK" test-setup -q "$d/circuit.r1cs" "$w/k2.zkey" 2>>"$w/err"; then
    bad "$fx: cuzk test-setup failed: $(head -c 500 "$w/err")"
    continue
  fi
  secs="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", (b-a)/2}')"
  if ! "$CUZK" prove-local "$w/k.zkey" "$d/witness.wtns" "$w/cp.json" "$w/cpub.json" 2>"$w/err" ||
    ! "$CUZK" prove-local "$d/circuit_final.zkey" "$d/witness.wtns" "$w/rp.json" "$w/rpub.json" 2>>"$w/err"; then
    bad "$fx: cuzk prove-local failed: $(head -c 500 "$w/err")"
    continue
  fi
  echo "      $fx: test-setup ${secs}s"
  node_args+=("$fx" "$d/circuit_final.zkey" "$w/k.zkey" "$w/k2.zkey" "$d/witness.wtns"
    "$w/cp.json" "$w/cpub.json" "$w/rp.json" "$w/rpub.json")
done
if [ ${#node_args[@]} -gt 0 ]; then
  node "$tmp/check.cjs" "$FIXTURES/node/node_modules/snarkjs" "${node_args[@]}" || fails=$((fails + 1))
fi

# ---- bad inputs ------------------------------------------------------------------
expect_code() { # want label cmd...: exit code and a one-line "cuzk test-setup:" message
  local want="$1" label="$2" rc=0
  shift 2
  "$@" >"$tmp/bad.out" 2>"$tmp/bad.err" || rc=$?
  if [ $rc -ne "$want" ]; then
    bad "$label: exit $rc, expected $want ($(tail -n 1 "$tmp/bad.err" | head -c 300))"
  elif ! grep -q "^cuzk test-setup: " "$tmp/bad.err"; then
    bad "$label: no 'cuzk test-setup:' message on stderr"
  else
    ok "$label: exit $want ($(tail -n 1 "$tmp/bad.err" | head -c 160))"
  fi
}
b="$tmp/bad"
mkdir -p "$b"
R="$FIXTURES/bn128/manypub/circuit.r1cs"
expect_code 3 "missing r1cs" "$CUZK" test-setup "$b/nope.r1cs" "$b/o1.zkey"
expect_code 4 "a zkey given as the r1cs" "$CUZK" test-setup "$FIXTURES/bn128/manypub/circuit_final.zkey" "$b/o2.zkey"
head -c "$(($(stat -c %s "$R") / 2))" "$R" >"$b/half.r1cs"
expect_code 5 "r1cs cut in half" "$CUZK" test-setup "$b/half.r1cs" "$b/o3.zkey"
expect_code 9 "output in a missing directory" "$CUZK" test-setup "$R" "$b/no/such/dir/o4.zkey"
expect_code 2 "one argument" "$CUZK" test-setup "$R"
expect_code 2 "unknown option" "$CUZK" test-setup --frobnicate "$R" "$b/o5.zkey"
left="$(find "$b" -name 'o*' | head -n 3)"
[ -z "$left" ] || bad "files left behind by failed runs: $left"

echo
if [ $fails -eq 0 ]; then echo "test_setup: all passed"; else
  echo "test_setup: $fails failure(s)"
  exit 1
fi
