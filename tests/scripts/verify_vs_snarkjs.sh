#!/usr/bin/env bash
# `cuzk verify` against `snarkjs groth16 verify`, and prove-local's self-verification.
#
# Proofs: every tests/fixtures/snarkjs-groth16/*/ (snarkjs's own proof_snarkjs.json
# and public_snarkjs.json) and a proof made by `cuzk prove-local` for each cached
# fixture of tests/fixtures/make.sh. For each proof, the valid one and these changes:
#   pi_a[0], pi_a[1], pi_b[0][0], pi_b[0][1], pi_b[1][0], pi_b[1][1], pi_c[0], pi_c[1]
#   plus one; pi_b's c0/c1 swapped (Solidity's order); pi_a replaced by pi_c (a curve
#   point, the wrong one); pi_a at infinity; pi_c = (1, 1), off the curve; a public
#   signal plus one; a public signal plus r (same value mod r: snarkjs refuses >= r);
#   an extra public signal; malformed JSON (proof, public, key); pi_c missing.
# Each case must get the same verdict from both (accept / refuse) and cuzk's
# documented exit code (0 valid, 1 invalid proof, 4 malformed input).
# Two cases where cuzk is deliberately stricter are checked for cuzk's code only:
#   a coordinate plus q (snarkjs reduces it mod q and accepts the non-canonical
#   number; cuzk requires canonical < q) and one public signal fewer (snarkjs uses
#   as many IC points as signals given, so a dropped trailing 0 passes; cuzk requires
#   exactly nPublic).
# snarkjs runs as a library in one node process (the same groth16.verify the CLI
# calls), cuzk as the command a user runs.
#
# Then prove-local on a witness with one internal signal changed (still < r):
#   without --r1cs: exit 8, "the witness does not satisfy the circuit, or the
#   computation was faulty", and no proof file; with --r1cs: exit 8 naming a constraint.
#
# Environment: BUILD (default build).
set -euo pipefail

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cuzk

use_fixtures

use_tmp

# ---- the proofs ----------------------------------------------------------------
: >"$tmp/proofs" # label vkey public proof
for d in "$REF_FIXTURES"/*/; do
  d="${d%/}"
  [ -f "$d/verification_key.json" ] && [ -f "$d/proof_snarkjs.json" ] && [ -f "$d/public_snarkjs.json" ] || continue
  echo "reference_${d##*/} $d/verification_key.json $d/public_snarkjs.json $d/proof_snarkjs.json" >>"$tmp/proofs"
done
while IFS= read -r d; do
  label="$(echo "${d#"$FIXTURES"/}" | tr / _)"
  rc=0
  "$CUZK" prove-local "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/$label.proof.json" "$tmp/$label.public.json" \
    2>"$tmp/prove.err" || rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL: cuzk prove-local on $d exited $rc: $(head -c 300 "$tmp/prove.err")"
    exit 1
  fi
  echo "$label $d/verification_key.json $tmp/$label.public.json $tmp/$label.proof.json" >>"$tmp/proofs"
done < <(bash "$ROOT/tests/fixtures/make.sh" --list)

# ---- the cases and snarkjs's verdicts --------------------------------------------
# Writes $tmp/cases/<label>.<case>.{vk,pub,proof}.json and prints, per case,
#   label.case expected_cuzk_code snarkjs_ok(1/0) mode(agree|stricter)
cat >"$tmp/cases.cjs" <<'JS'
const fs = require("fs");
const [snarkjsDir, listF, outDir] = process.argv.slice(2);
const snarkjs = require(snarkjsDir);
const Q = {
  bn128: 21888242871839275222246405745257275088696311157297823662689037894645226208583n,
  bls12381: 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaabn,
};
const R = {
  bn128: 21888242871839275222246405745257275088548364400416034343698204186575808495617n,
  bls12381: 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n,
};
const add = (s, k) => (BigInt(s) + k).toString();
const clone = (x) => JSON.parse(JSON.stringify(x));
async function verdict(vkT, pubT, proofT) {
  try {
    return (await snarkjs.groth16.verify(JSON.parse(vkT), JSON.parse(pubT), JSON.parse(proofT))) ? 1 : 0;
  } catch (e) { return 0; }  // the CLI exits with an error: not OK
}
(async () => {
  const lines = fs.readFileSync(listF, "utf8").trim().split("\n");
  for (const line of lines) {
    const [label, vkF, pubF, proofF] = line.split(" ");
    const vkT = fs.readFileSync(vkF, "utf8"), vk = JSON.parse(vkT);
    const pub = JSON.parse(fs.readFileSync(pubF, "utf8")), proof = JSON.parse(fs.readFileSync(proofF, "utf8"));
    const q = Q[vk.curve], r = R[vk.curve];
    const cases = [];  // [name, code, mode, vkText, pubText, proofText]
    const P = (name, code, f, mode = "agree") => { const p = clone(proof); f(p); cases.push([name, code, mode, vkT, JSON.stringify(pub), JSON.stringify(p)]); };
    const S = (name, code, f, mode = "agree") => { const s = clone(pub); f(s); cases.push([name, code, mode, vkT, JSON.stringify(s), JSON.stringify(proof)]); };
    P("valid", 0, () => {});
    P("pi_a0", 1, (p) => { p.pi_a[0] = add(p.pi_a[0], 1n); });
    P("pi_a1", 1, (p) => { p.pi_a[1] = add(p.pi_a[1], 1n); });
    for (const [i, j] of [[0, 0], [0, 1], [1, 0], [1, 1]])
      P(`pi_b${i}${j}`, 1, (p) => { p.pi_b[i][j] = add(p.pi_b[i][j], 1n); });
    P("pi_c0", 1, (p) => { p.pi_c[0] = add(p.pi_c[0], 1n); });
    P("pi_c1", 1, (p) => { p.pi_c[1] = add(p.pi_c[1], 1n); });
    P("pi_b_swapped", 1, (p) => { p.pi_b[0].reverse(); p.pi_b[1].reverse(); });
    P("pi_a_is_pi_c", 1, (p) => { p.pi_a = clone(p.pi_c); });
    P("pi_a_infinity", 1, (p) => { p.pi_a = ["0", "1", "0"]; });
    P("pi_c_off_curve", 1, (p) => { p.pi_c = ["1", "1", "1"]; });
    P("pi_c_missing", 4, (p) => { delete p.pi_c; });
    P("pi_a0_plus_q", 4, (p) => { p.pi_a[0] = add(p.pi_a[0], q); }, "stricter");
    if (pub.length > 0) {
      S("public0", 1, (s) => { s[0] = add(s[0], 1n); });
      S("public0_plus_r", 4, (s) => { s[0] = add(s[0], r); });
      S("public_dropped", 4, (s) => { s.pop(); }, "stricter");
    }
    S("public_extra", 4, (s) => { s.push("1"); });
    cases.push(["proof_bad_json", 4, "agree", vkT, JSON.stringify(pub), JSON.stringify(proof).slice(0, -5)]);
    cases.push(["public_bad_json", 4, "agree", vkT, JSON.stringify(pub).slice(0, -1), JSON.stringify(proof)]);
    cases.push(["vk_bad_json", 4, "agree", vkT.slice(0, 40), JSON.stringify(pub), JSON.stringify(proof)]);
    for (const [name, code, mode, v, s, p] of cases) {
      const base = `${outDir}/${label}.${name}`;
      fs.writeFileSync(`${base}.vk.json`, v);
      fs.writeFileSync(`${base}.pub.json`, s);
      fs.writeFileSync(`${base}.proof.json`, p);
      console.log(`${label}.${name} ${code} ${await verdict(v, s, p)} ${mode}`);
    }
  }
  process.exit(0);
})().catch((e) => { console.log(`cases failed: ${e && e.stack || e}`); process.exit(1); });
JS
mkdir -p "$tmp/cases"
node "$tmp/cases.cjs" "$FIXTURES/node/node_modules/snarkjs" "$tmp/proofs" "$tmp/cases" >"$tmp/verdicts" || {
  echo "FAIL: building the cases:"
  grep -v "^    at " "$tmp/verdicts" | tail -n 8
  exit 1
}

pass=0
fail=0
kinds=()
while read -r name want sj mode; do
  base="$tmp/cases/$name"
  rc=0
  out="$("$CUZK" verify "$base.vk.json" "$base.pub.json" "$base.proof.json" 2>"$tmp/verify.err")" || rc=$?
  problem=""
  if [ "$rc" -ne "$want" ]; then
    problem="cuzk exit $rc, expected $want ($(head -c 200 "$tmp/verify.err"))"
  elif [ "$mode" = agree ] && { [ "$sj" = 1 ] && [ "$rc" -ne 0 ] || [ "$sj" = 0 ] && [ "$rc" -eq 0 ]; }; then
    problem="snarkjs says $([ "$sj" = 1 ] && echo OK || echo invalid), cuzk exit $rc"
  elif [ "$rc" -eq 0 ] && [ "$out" != OK ]; then
    problem="exit 0 without OK on stdout"
  elif [ "$rc" -eq 1 ] && [ "$out" != "invalid proof" ]; then
    problem="exit 1 without \"invalid proof\" on stdout"
  elif [ "$rc" -ge 2 ] && ! [ -s "$tmp/verify.err" ]; then
    problem="exit $rc without a message"
  fi
  if [ -n "$problem" ]; then
    echo "FAIL  $name: $problem"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
  kinds+=("${name#*.}")
done <"$tmp/verdicts"
nkinds="$(printf '%s\n' "${kinds[@]}" | sort -u | wc -l)"
echo "cuzk verify vs snarkjs: $pass cases agree, $fail disagree ($(wc -l <"$tmp/proofs") proofs, $nkinds kinds of case)"

# ---- prove-local on a witness with one internal signal changed --------------------
cat >"$tmp/bump.cjs" <<'JS'
// bump.cjs R1CS WTNS OUT: copy WTNS with its last wire + 1 mod p (an internal signal).
const fs = require("fs");
const [r1csF, wtnsF, outF] = process.argv.slice(2);
function sections(buf) {
  const m = new Map(); let o = 12; const n = buf.readUInt32LE(8);
  for (let i = 0; i < n; i++) { const t = buf.readUInt32LE(o), sz = Number(buf.readBigUInt64LE(o + 4)); m.set(t, [o + 12, sz]); o += 12 + sz; }
  return m;
}
const le = (b, o, n) => { let v = 0n; for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[o + i]); return v; };
const r1 = fs.readFileSync(r1csF), h = sections(r1).get(1)[0];
const n8r = r1.readUInt32LE(h), nWires = r1.readUInt32LE(h + 4 + n8r);
const nIO = r1.readUInt32LE(h + 8 + n8r) + r1.readUInt32LE(h + 12 + n8r) + r1.readUInt32LE(h + 16 + n8r);
const w = Buffer.from(fs.readFileSync(wtnsF)), ws = sections(w), n8 = w.readUInt32LE(ws.get(1)[0]);
const p = le(w, ws.get(1)[0] + 4, n8), idx = nWires - 1;
if (idx <= nIO) { console.error("no internal signal"); process.exit(1); }
const o = ws.get(2)[0] + idx * n8;
let v = (le(w, o, n8) + 1n) % p;
for (let i = 0; i < n8; i++) { w[o + i] = Number(v & 255n); v >>= 8n; }
fs.writeFileSync(outF, w);
JS
unsat_fail=0
first_cached="$(bash "$ROOT/tests/fixtures/make.sh" --list | awk "NR == 1")"
for d in "$REF_FIXTURES"/bn128 "$REF_FIXTURES"/bls12381 $first_cached; do
  [ -f "$d/circuit.r1cs" ] || continue
  label="$(basename "$(dirname "$d")")/$(basename "$d")"
  node "$tmp/bump.cjs" "$d/circuit.r1cs" "$d/witness.wtns" "$tmp/unsat.wtns"
  rm -f "$tmp/u.proof.json" "$tmp/u.public.json"
  rc=0
  "$CUZK" prove-local "$d/circuit_final.zkey" "$tmp/unsat.wtns" "$tmp/u.proof.json" "$tmp/u.public.json" 2>"$tmp/u.err" || rc=$?
  if [ $rc -ne 8 ] || ! grep -q "the witness does not satisfy the circuit, or the computation was faulty" "$tmp/u.err" ||
    [ -e "$tmp/u.proof.json" ]; then
    echo "FAIL  $label: changed witness without --r1cs: exit $rc, $(head -c 300 "$tmp/u.err")$([ -e "$tmp/u.proof.json" ] && echo ' (a proof was written)')"
    unsat_fail=$((unsat_fail + 1))
  fi
  rc=0
  "$CUZK" prove-local --r1cs "$d/circuit.r1cs" "$d/circuit_final.zkey" "$tmp/unsat.wtns" "$tmp/u.proof.json" \
    "$tmp/u.public.json" 2>"$tmp/u.err" || rc=$?
  if [ $rc -ne 8 ] || ! grep -Eq "constraint [0-9]+" "$tmp/u.err" || [ -e "$tmp/u.proof.json" ]; then
    echo "FAIL  $label: changed witness with --r1cs: exit $rc, $(head -c 300 "$tmp/u.err")"
    unsat_fail=$((unsat_fail + 1))
  fi
  [ $unsat_fail -eq 0 ] && echo "ok    $label: a changed internal signal is refused (exit 8) with and without --r1cs"
done

[ $fail -eq 0 ] && [ $pass -gt 0 ] && [ $unsat_fail -eq 0 ] && [ "$nkinds" -ge 10 ]
