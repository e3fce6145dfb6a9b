#!/usr/bin/env bash
# A circuits directory (circuits-dir = DIR in cuzkd.conf): DIR/NAME/circuit.zkey and
# DIR/NAME.conf declare circuits beside the config's sections; `cuzk circuits` lists
# them, `cuzk prove --circuit NAME` proves against them (snarkjs verifies); a circuit
# dropped into the directory is picked up by `cuzk reload`. `cuzkd --check` reports each
# declared circuit: its curve, constraints and fingerprint, or why it cannot load (a
# zkey that is not one). Then a clean shutdown.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init cdir
bash "$MAKE_FIXTURES" -q >/dev/null
BN="$FIXTURES/bn128/mulchain-10"
BLS="$FIXTURES/bls12381/mulchain-10"
D="$tmp/circuits"
mkdir -p "$D/mul-bn" "$tmp/in" "$tmp/o"
cp "$BN/circuit_final.zkey" "$D/mul-bn/circuit.zkey"
cp "$BN/circuit.r1cs" "$D/mul-bn/circuit.r1cs"
cp "$BLS/circuit_final.zkey" "$tmp/bls.zkey"
printf 'zkey = %s\nmax-input-bytes = 1M\n' "$tmp/bls.zkey" >"$D/mul-bls.conf"
echo "notes" >"$D/README"
cp "$BN/witness.wtns" "$tmp/in/a.wtns"
cp "$BLS/witness.wtns" "$tmp/in/b.wtns"
conf="$tmp/cuzkd.conf"
printf 'buffer-mb = 16\ncircuits-dir = %s\n' "$D" >"$conf"

# ---- cuzkd --check: one line per circuit ---------------------------------------------------
printf 'not a zkey' >"$tmp/broken.zkey"
printf 'zkey = %s\n' "$tmp/broken.zkey" >"$D/broken.conf"
out="$("$BUILD/bin/cuzkd" --config "$conf" --devices cpu:1 --instance "c$inst" --run-dir "$run" \
  --state-dir "$tmp/state" --check 2>&1)" || true
grep -q "^ok    circuit    mul-bn: bn128, 1021 constraints" <<<"$out" || fail "--check on mul-bn: $out"
grep -q "^ok    circuit    mul-bls: bls12381" <<<"$out" || fail "--check on mul-bls: $out"
grep -q "^FAIL  circuit    broken: zkey $tmp/broken.zkey" <<<"$out" || fail "--check on broken: $out"
echo "ok: cuzkd --check: $(grep -c ' circuit ' <<<"$out") circuit lines; $(grep 'circuit    broken' <<<"$out" | cut -c1-90)"
rm "$D/broken.conf"

daemon_start --config "$conf" --devices cpu:1
st="$(cuzk --json circuits)"
[ "$(js 'r.circuits.map(c=>c.name).join(" ")' "$st")" = "mul-bls mul-bn" ] || fail "circuits from the dir: $st"
cuzk prove --circuit mul-bn --out "$tmp/o" --wait "$tmp/in/a.wtns" >/dev/null || fail "prove mul-bn"
cuzk prove --circuit mul-bls --out "$tmp/o" --wait "$tmp/in/b.wtns" >/dev/null || fail "prove mul-bls"
"$SNARKJS" groth16 verify "$BN/verification_key.json" "$tmp/o/a.public.json" "$tmp/o/a.proof.json" | grep -q OK || fail "snarkjs: a"
"$SNARKJS" groth16 verify "$BLS/verification_key.json" "$tmp/o/b.public.json" "$tmp/o/b.proof.json" | grep -q OK || fail "snarkjs: b"
echo "ok: circuits from the directory (mul-bn/ and mul-bls.conf, README ignored): both prove, snarkjs verifies"

mkdir "$D/mul-bn2"
cp "$BN/circuit_final.zkey" "$D/mul-bn2/circuit.zkey"
cuzk reload >/dev/null || fail "reload"
[ "$(js 'r.circuits.map(c=>c.name).join(" ")' "$(cuzk --json circuits)")" = "mul-bls mul-bn mul-bn2" ] ||
  fail "after reload: $(cuzk --json circuits)"
rm -f "$tmp/o/a.proof.json"
cuzk prove --circuit mul-bn2 --out "$tmp/o" --wait "$tmp/in/a.wtns" >/dev/null || fail "prove mul-bn2"
"$SNARKJS" groth16 verify "$BN/verification_key.json" "$tmp/o/a.public.json" "$tmp/o/a.proof.json" | grep -q OK || fail "snarkjs: mul-bn2"
echo "ok: a circuit dropped into the directory is declared by cuzk reload and proves"
daemon_shutdown_clean
