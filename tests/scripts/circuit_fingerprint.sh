#!/usr/bin/env bash
# The circuit fingerprint (zk/fingerprint.h) that matches a witness generator
# to a zkey beyond curve and witness size:
#   - on every fixture (bn128 and bls12381) the zkey's, the r1cs's and the generator's
#     (build-witness --r1cs) fingerprints are equal, equal to an independent python
#     reference (hashlib, tests/lib/fingerprint_ref.py), and differ between fixtures;
#   - a zkey whose section 4 entries are shuffled (another writer's order; the sorted
#     path of fp_of_zkey) has the same fingerprint;
#   - a generator of another circuit with the same witness size (mulchain-10 with one
#     constant changed, compiled here with circom) is refused by prove-local (exit 7)
#     and by the daemon (cuzk prove exit 21; sent past the client, the synth fails
#     its partition), naming both files, while a good job beside it proves and
#     snarkjs verifies it; the synth's reason, naming a long zkey path and a long
#     generator name, reaches status and wait whole;
#   - a generator built without --r1cs still proves, with a warning.
# Environment: BUILD (default build).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
wgen_daemon_init fp
fp() { "$CUZK" fingerprint "$1" | cut -d' ' -f1; }

# ---- equality on every fixture -----------------------------------------------------
mapfile -t fixtures < <(bash "$MAKE_FIXTURES" --list)
seen=" "
for d in "${fixtures[@]}"; do
  label="${d#"$FIXTURES"/}"
  z="$(fp "$d/circuit_final.zkey")"
  r="$(fp "$d/circuit.r1cs")"
  g="$(fp "$(wgen_for "$d")")"
  [ ${#z} -eq 64 ] && [ "$z" = "$r" ] && [ "$z" = "$g" ] || fail "$label: zkey $z, r1cs $r, generator $g"
  ref="$(python3 "$ROOT/tests/lib/fingerprint_ref.py" "$d/circuit_final.zkey")"
  [ "$z" = "$ref" ] || fail "$label: cuzk $z, the python reference (tests/lib/fingerprint_ref.py) $ref"
  case "$seen" in *" $z "*) fail "$label: fingerprint $z also belongs to another fixture" ;; esac
  seen="$seen$z "
  echo "ok   $label: zkey = r1cs = generator = python reference = ${z:0:16}"
done

# ---- another writer's order: section 4 shuffled, duplicates split ------------------
M="$FIXTURES/bn128/mulchain-10"
python3 - "$M/circuit_final.zkey" "$tmp/shuffled.zkey" <<'PY'
import random, struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack_from('<I', b, 8)[0]; off = 12
r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
for _ in range(n):
    sid, size = struct.unpack_from('<IQ', b, off); off += 12
    if sid == 4:
        cnt = struct.unpack_from('<I', b, off)[0]
        ents = [bytes(b[off + 4 + 44 * i: off + 4 + 44 * (i + 1)]) for i in range(cnt)]
        assert size == 4 + 44 * cnt
        # split the first entry into two of the same key that sum to it (the prover
        # adds repeats), then shuffle
        v = int.from_bytes(ents[0][12:], 'little'); a = 12345
        ents.append(ents[0][:12] + a.to_bytes(32, 'little'))
        ents[0] = ents[0][:12] + ((v - a) % r).to_bytes(32, 'little')
        random.seed(7); random.shuffle(ents)
        body = struct.pack('<I', len(ents)) + b''.join(ents)
        b[off - 12: off + size] = struct.pack('<IQ', 4, len(body)) + body
        break
    off += size
open(sys.argv[2], 'wb').write(b)
PY
[ "$(fp "$tmp/shuffled.zkey")" = "$(fp "$M/circuit_final.zkey")" ] || fail "shuffled section 4: another fingerprint"
echo "ok   a zkey with section 4 shuffled and an entry split in two: same fingerprint"

# ---- another circuit of the same witness size --------------------------------------
mkdir -p "$tmp/o"
sed 's/t\[i - 1\] + x + i)/t[i - 1] + x + 2 * i)/' "$M/mulchain.circom" >"$tmp/o/mulchain.circom"
grep -q '2 \* i' "$tmp/o/mulchain.circom" || fail "could not change the circuit"
cp "$M/circuit.circom" "$tmp/o/other.circom"
(cd "$tmp/o" && "$CIRCOM" other.circom --r1cs --c --sym --prime bn128 -o . >"$tmp/circom.log" 2>&1) ||
  fail "circom: $(tail -5 "$tmp/circom.log")"
"$CUZK" build-witness --prime bn128 --r1cs "$tmp/o/other.r1cs" "$tmp/o/other_cpp" "$tmp/other.wgen" >/dev/null ||
  fail "build the other circuit's generator"
"$CUZK" build-witness --prime bn128 "$tmp/o/other_cpp" "$tmp/nofp.wgen" >/dev/null || fail "build without --r1cs"
nw_m="$(awk '/witness values/' <("$CUZK" build-witness --prime bn128 --r1cs "$M/circuit.r1cs" "$M/circuit_cpp" "$tmp/m.wgen") | grep -o '[0-9]* witness values')"
nw_o="$(awk '/witness values/' <("$CUZK" build-witness --prime bn128 --r1cs "$tmp/o/other.r1cs" "$tmp/o/other_cpp" "$tmp/o2.wgen") | grep -o '[0-9]* witness values')"
[ "$nw_m" = "$nw_o" ] || fail "the two circuits differ in witness size ($nw_m, $nw_o): not the case under test"
[ "$(fp "$tmp/other.wgen")" != "$(fp "$M/circuit_final.zkey")" ] || fail "another circuit, same fingerprint"
rc=0
"$CUZK" prove-local --witness-gen "$tmp/other.wgen" "$M/circuit_final.zkey" "$M/input.json" "$tmp/p.json" \
  "$tmp/pub.json" 2>"$tmp/err" || rc=$?
[ $rc -eq 7 ] && grep -q "other.wgen was built for another circuit than zkey .*mulchain-10/circuit_final.zkey" "$tmp/err" ||
  fail "prove-local with another circuit's generator ($nw_m): exit $rc: $(cat "$tmp/err")"
[ ! -e "$tmp/p.json" ] || fail "prove-local wrote a proof"
echo "ok   prove-local refuses it (exit 7): $(cat "$tmp/err")"
# Without --r1cs, nothing tells the circuits apart: the proof is refused by the
# pairing check only (exit 8), after a warning; the fixture's own generator built so
# proves with the same warning.
"$CUZK" build-witness --prime bn128 "$M/circuit_cpp" "$tmp/m_nofp.wgen" >/dev/null
"$CUZK" prove-local --witness-gen "$tmp/m_nofp.wgen" "$M/circuit_final.zkey" "$M/input.json" "$tmp/p.json" \
  "$tmp/pub.json" 2>"$tmp/err" || fail "prove-local with a generator built without --r1cs: $(cat "$tmp/err")"
grep -q "warning: .*without --r1cs" "$tmp/err" || fail "no warning for a generator without --r1cs: $(cat "$tmp/err")"
"$SNARKJS" groth16 verify "$M/verification_key.json" "$tmp/pub.json" "$tmp/p.json" | grep -q OK ||
  fail "snarkjs: the proof from a generator built without --r1cs"
echo "ok   a generator built without --r1cs proves (snarkjs verified) after: $(cat "$tmp/err")"

# ---- the daemon ---------------------------------------------------------------------
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --max-attempts 2
mkdir -p "$tmp/in" "$tmp/good" "$tmp/bad"
cp "$M/input.json" "$tmp/in/good.json"
cp "$M/input.json" "$tmp/in/bad.json"
rc=0
cuzk prove --zkey "$M/circuit_final.zkey" --witness-gen "$tmp/other.wgen" --out "$tmp/bad" "$tmp/in/bad.json" \
  2>"$tmp/err" || rc=$?
[ $rc -eq 21 ] && grep -q "built for another circuit than zkey" "$tmp/err" || fail "cuzk prove: exit $rc: $(cat "$tmp/err")"
echo "ok   cuzk prove refuses it before submitting (exit 21)"
jg="$(cuzk --json prove --zkey "$M/circuit_final.zkey" --witness-gen "$(wgen_for "$M")" --out "$tmp/good" \
  "$tmp/in/good.json" | js 'r.job' "$(cat)")" || fail "submit the good job"
# Long names (a zkey path of about 190 bytes and a generator name of 111, paths under
# JOBTAB_PATH_LEN): the synth's reason names both, so it must reach status and wait
# whole (the table cut it at 96 bytes).
long="$tmp/$(printf 'd%.0s' $(seq 90))/$(printf 'e%.0s' $(seq 60))"
mkdir -p "$long"
zo="$long/circuit_final.zkey"
go="$tmp/other-$(printf 'g%.0s' $(seq 100)).wgen"
cp "$M/circuit_final.zkey" "$zo"
cp "$tmp/other.wgen" "$go"
jb="$(js 'r.job' "$(send_fds "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"$zo\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/bad\"},\"inputs\":[{\"fd\":2,\"path\":\"$tmp/in/bad.json\"}],\"witness_gen\":{\"fd\":3,\"path\":\"$go\"}}" \
  "$zo" "$tmp/bad" "$tmp/in/bad.json" "$go")")"
[ -n "$jb" ] && [ "$jb" != undefined ] || fail "raw submit of the other circuit's generator"
waited="$(cuzk wait "$jb" --timeout-ms 60000 2>&1 || true)"
st="$(cuzk --json status "$jb" || true)"
state="$(js "(r.job.parts[0] || {}).state || ''" "$st")"
reason="$(js "(r.job.parts[0] || {}).reason || ''" "$st")"
[ "$state" = failed ] || fail "the other circuit's generator in the synth: $state $reason"
fg="$(fp "$go")"
fz="$(fp "$zo")"
want="witness generator ${go##*/} was built for another circuit than zkey $zo (same curve and witness size, other constraints: circuit fingerprints ${fg:0:16} and ${fz:0:16})"
[ "$reason" = "$want" ] || fail "the synth's reason (${#reason} bytes) is not the whole message (${#want}): $reason"
grep -qF "$want" <<<"$waited" || fail "cuzk wait does not print the whole reason: $waited"
grep -qF "$want" <<<"$(cuzk status "$jb" || true)" || fail "cuzk status does not print the whole reason"
echo "ok   past the client, the synth fails the partition; status and wait show its ${#reason}-byte reason whole: $reason"
cuzk wait "$jg" --timeout-ms 120000 >/dev/null || fail "the good job beside it"
out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$M/verification_key.json" "$tmp/good")" || fail "snarkjs: $out"
[ "$out" = "1 verified" ] || fail "snarkjs on the good job: $out"
[ -z "$(ls "$tmp/bad")" ] || fail "the refused job wrote $(ls "$tmp/bad")"
echo "ok   the good job beside it proved, snarkjs verified"
daemon_shutdown_clean
echo "PASS: ${#fixtures[@]} fixtures' fingerprints agree (zkey, r1cs, generator); another circuit of the same witness size refused by prove-local and the daemon"
