#!/usr/bin/env bash
# Circuits by name: cuzkd.conf declares circuits ([circuit NAME] sections); `cuzk
# circuits` lists them with their state, curve, constraints, public inputs and
# fingerprint (the same as `cuzk fingerprint` of the zkey); a fourth beyond the three
# preload slots is "declared" (with the reason) and still proves, and is preloaded
# once a reload frees a slot; `cuzk prove --circuit NAME`
# proves against the operator's files, from .wtns (bn128 and bls12381) and, with the
# circuit's witness-gen, from input.json; snarkjs verifies every proof. A witness over
# the circuit's max-input-bytes, an input.json for a circuit without a generator and an
# unknown name are refused with their error codes and the client's exit code 21
# (refused). `cuzk reload` after a zkey is renamed over with another circuit's: the
# circuit's fingerprint changes, a job submitted before keeps its zkey (its proofs
# verify under the old key), new jobs prove the new circuit. SIGHUP after a section
# is removed: that name is refused from then on; a circuit whose r1cs is another
# circuit's is listed failed with the reason and refuses jobs. A config with a name like ../x is
# refused at start (exit 2) and at reload (the running set is kept). A job by name
# survives kill -9 of cuzkd (resumed from the job store). Then a clean shutdown.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
daemon_init circ
bash "$MAKE_FIXTURES" -q >/dev/null

BN="$FIXTURES/bn128/mulchain-10"
BLS="$FIXTURES/bls12381/mulchain-10"
MP="$FIXTURES/bn128/manypub"
for d in "$BN" "$BLS" "$MP"; do [ -f "$d/circuit_final.zkey" ] || fail "fixture $d missing"; done
mkdir -p "$tmp/z" "$tmp/in"
cp "$BN/circuit_final.zkey" "$tmp/z/bn.zkey"
cp "$BLS/circuit_final.zkey" "$tmp/z/bls.zkey"
cp "$BLS/circuit_final.zkey" "$tmp/z/bls4.zkey"
cp "$MP/circuit_final.zkey" "$tmp/z/mp.zkey"
for i in 1 2 3 4; do cp "$BN/witness.wtns" "$tmp/in/bn$i.wtns"; done
for i in 1 2; do
  cp "$BLS/witness.wtns" "$tmp/in/bls$i.wtns"
  cp "$MP/witness.wtns" "$tmp/in/mp$i.wtns"
done
cp "$BN/input.json" "$tmp/in/in1.json"

# A generator for input.json jobs when this machine can build one (g++, nasm).
gen=""
if command -v "${CXX:-g++}" >/dev/null 2>&1 && command -v "${NASM:-nasm}" >/dev/null 2>&1; then
  CUZK="$BUILD/bin/cuzk" gen="$(CUZK="$BUILD/bin/cuzk" wgen_for "$BN")" || fail "building the generator"
else
  echo "note: no g++/nasm: the input.json job by name is left out"
fi

conf="$tmp/cuzkd.conf"
write_conf() { # 1: the tiny circuit too; swapped: mul-bn's zkey is manypub's now
  {
    echo "# cuzkd.conf of the test"
    echo "buffer-mb = 16"
    echo "[circuit mul-bn]"
    echo "zkey = $tmp/z/bn.zkey"
    # mulchain's generator and r1cs: not after its zkey was swapped for manypub's
    [ "$2" = swapped ] || {
      [ -z "$gen" ] || echo "witness-gen = $gen"
      echo "r1cs = $BN/circuit.r1cs"
    }
    echo "max-input-bytes = 1M"
    echo "[circuit mul.bls_12]"
    echo "zkey = $tmp/z/bls.zkey"
    if [ "$1" = 1 ]; then
      echo "[circuit tiny]"
      echo "zkey = $tmp/z/mp.zkey"
      echo "max-input-bytes = 1K   # a witness is more: refused"
    else
      echo "[circuit mixed]  # an r1cs of another circuit: listed as failed"
      echo "zkey = $tmp/z/mp.zkey"
      echo "r1cs = $BN/circuit.r1cs"
    fi
    echo "[circuit four]  # a fourth preload: no slot while tiny holds one"
    echo "zkey = $tmp/z/bls4.zkey"
  } >"$conf"
}
write_conf 1 -

# ---- a bad name in the config: cuzkd refuses to start, naming it ------------------
printf '[circuit ../x]\nzkey = %s\n' "$tmp/z/bn.zkey" >"$tmp/bad.conf"
rc=0
out="$("$BUILD/bin/cuzkd" --config "$tmp/bad.conf" --instance "x$inst" --run-dir "$tmp/xrun" \
  --state-dir "$tmp/xstate" --foreground 2>&1)" || rc=$?
[ "$rc" = 2 ] || fail "cuzkd with [circuit ../x] exited $rc, expected 2 (usage): $out"
grep -q 'circuit name "../x" refused' <<<"$out" || fail "no clear message for ../x: $out"
echo "ok: [circuit ../x] -> cuzkd exits 2: $(tail -n1 <<<"$out")"

daemon_start --config "$conf" --devices cpu:1 --keep-finished 3600

# ---- cuzk circuits: state and facts -----------------------------------------------
for _ in $(seq 1 600); do
  st="$(cuzk --json circuits)" || fail "circuits: $st"
  [ "$(js 'r.circuits.filter(c=>c.state=="resident").length' "$st")" = 3 ] && break
  sleep 0.1
done
[ "$(js 'r.circuits.map(c=>c.name+":"+c.state).join(" ")' "$st")" = \
  "mul-bn:resident mul.bls_12:resident tiny:resident four:declared" ] || fail "states: $st"
js 'r.circuits[3].note' "$st" | grep -q "not preloaded" || fail "four: no note: $st"
fp_bn="$("$BUILD/bin/cuzk" fingerprint "$tmp/z/bn.zkey" | awk '{print $1}')"
fp_mp="$("$BUILD/bin/cuzk" fingerprint "$tmp/z/mp.zkey" | awk '{print $1}')"
[ "$(js 'r.circuits[0].fingerprint' "$st")" = "$fp_bn" ] || fail "mul-bn fingerprint $(js 'r.circuits[0].fingerprint' "$st") != $fp_bn"
[ "$(js 'r.circuits.map(c=>c.curve+"/"+c.constraints+"/"+c.public).join(" ")' "$st")" = \
  "bn128/1021/2 bls12381/1021/2 bn128/$(sed -n 's/.*constraints=\([0-9]*\) nPublic=\([0-9]*\).*/\1\/\2/p' "$MP/info.txt") bls12381/1021/2" ] ||
  fail "curve/constraints/public: $(js 'JSON.stringify(r.circuits)' "$st")"
cuzk circuits | grep -q "^mul.bls_12 *resident *bls12381 *1021 *2 " || fail "human circuits: $(cuzk circuits)"
if [ -n "$gen" ]; then # the generator's input signals, read from its file
  [ "$(js 'r.circuits[0].inputs.map(i=>i.name+"/"+i.size).join(" ")' "$st")" = "x/1 k/1" ] || fail "inputs: $st"
  cuzk circuits | grep -A1 "^mul-bn " | grep -qx "  inputs: x, k" || fail "human circuits, inputs: $(cuzk circuits)"
fi
echo "ok: cuzk circuits: three resident (the preload slots), four declared ($(js 'r.circuits[3].note' "$st" | cut -c1-60)...); curve, constraints, public inputs, fingerprint as cuzk fingerprint"

# ---- prove by name -----------------------------------------------------------------
verify() { # vkey out-dir names...
  local vk="$1" d="$2" n
  shift 2
  for n in "$@"; do
    "$SNARKJS" groth16 verify "$vk" "$d/$n.public.json" "$d/$n.proof.json" 2>&1 | grep -q OK ||
      fail "snarkjs rejects $d/$n"
  done
}
mkdir -p "$tmp/o1" "$tmp/o2" "$tmp/o3"
out="$(cuzk --json prove --circuit mul-bn --out "$tmp/o1" --wait "$tmp/in/bn1.wtns" "$tmp/in/bn2.wtns")" || fail "prove mul-bn: $out"
verify "$BN/verification_key.json" "$tmp/o1" bn1 bn2
out="$(cuzk --json prove --circuit mul.bls_12 --out "$tmp/o2" --wait "$tmp/in/bls1.wtns" "$tmp/in/bls2.wtns")" || fail "prove bls: $out"
verify "$BLS/verification_key.json" "$tmp/o2" bls1 bls2
mkdir -p "$tmp/o2b"
out="$(cuzk --json prove --circuit four --out "$tmp/o2b" --wait "$tmp/in/bls1.wtns")" || fail "prove four: $out"
verify "$BLS/verification_key.json" "$tmp/o2b" bls1
echo "ok: prove --circuit (bn128 and bls12381 .wtns, no --zkey; four not preloaded): snarkjs verifies 5 proofs"
if [ -n "$gen" ]; then
  out="$(cuzk --json prove --circuit mul-bn --out "$tmp/o3" --wait "$tmp/in/in1.json")" || fail "prove input.json: $out"
  verify "$BN/verification_key.json" "$tmp/o3" in1
  echo "ok: prove --circuit mul-bn in1.json: the circuit's generator computed the witness; snarkjs verifies"
fi

# ---- refusals ------------------------------------------------------------------------
refused() { # what code args...
  local what="$1" code="$2" rc=0 o
  shift 2
  o="$(cuzk prove "$@" 2>&1)" || rc=$?
  [ "$rc" = 21 ] || fail "$what: exit $rc, expected 21 (refused): $o"
  grep -q "($code)" <<<"$o" || fail "$what: expected $code: $o"
  echo "ok: $what -> $code, exit 21: $o"
}
refused "unknown circuit" no_such_circuit --circuit nope --out "$tmp/o1" "$tmp/in/bn3.wtns"
refused "witness over max-input-bytes" input_too_large --circuit tiny --out "$tmp/o1" "$tmp/in/mp1.wtns"
refused "input.json, circuit without witness-gen" bad_request --circuit mul.bls_12 --out "$tmp/o1" "$tmp/in/in1.json"
rc=0
o="$(cuzk prove --circuit mul-bn --zkey "$tmp/z/bn.zkey" --out "$tmp/o1" "$tmp/in/bn3.wtns" 2>&1)" || rc=$?
[ "$rc" = 2 ] || fail "--circuit with --zkey: exit $rc: $o"
expect_error "a submit with circuit and zkey" bad_request \
  "{\"req\":\"submit\",\"circuit\":\"mul-bn\",\"fds\":1,\"zkey\":{\"fd\":0,\"path\":\"/z\"},\"witnesses\":[{\"fd\":0,\"path\":\"/w\"}],\"out_dir\":{\"fd\":0,\"path\":\"/o\"}}"
expect_error "a circuit name with a slash" bad_request \
  "{\"req\":\"submit\",\"circuit\":\"../x\",\"fds\":1,\"witnesses\":[{\"fd\":0,\"path\":\"/w\"}],\"out_dir\":{\"fd\":0,\"path\":\"/o\"}}"

# ---- reload after a zkey is renamed over; a job submitted before keeps its zkey -------
mkdir -p "$tmp/o4" "$tmp/o5"
j="$(cuzk --json prove --circuit mul-bn --out "$tmp/o4" "$tmp/in"/bn{1,2,3,4}.wtns | jq -r .job)" || fail "submit before reload"
cp "$MP/circuit_final.zkey" "$tmp/z/bn.zkey.new"
mv "$tmp/z/bn.zkey.new" "$tmp/z/bn.zkey"
write_conf 1 swapped
out="$(cuzk --json reload)" || fail "reload: $out"
[ "$(js 'r.changed.find(c=>c.name=="mul-bn").change' "$out")" = changed ] || fail "reload reply: $out"
[ "$(js 'r.changed.find(c=>c.name=="mul.bls_12").change' "$out")" = unchanged ] || fail "reload reply: $out"
[ "$(js 'r.circuits.find(c=>c.name=="mul-bn").fingerprint' "$out")" = "$fp_mp" ] || fail "fingerprint after reload: $out"
echo "ok: reload: mul-bn changed (fingerprint now manypub's), mul.bls_12 unchanged"
out="$(cuzk --json wait "$j")" || fail "wait $j: $out"
verify "$BN/verification_key.json" "$tmp/o4" bn1 bn2 bn3 bn4
echo "ok: the job submitted before the reload kept its zkey: 4 proofs verify under mulchain's key"
out="$(cuzk --json prove --circuit mul-bn --out "$tmp/o5" --wait "$tmp/in/mp1.wtns" "$tmp/in/mp2.wtns")" || fail "prove after reload: $out"
verify "$MP/verification_key.json" "$tmp/o5" mp1 mp2
echo "ok: a job after the reload proves the new circuit (snarkjs, manypub's key)"

# ---- a bad config at reload changes nothing; SIGHUP drops a removed circuit -----------
cp "$conf" "$tmp/good.conf"
printf '[circuit ../x]\nzkey = %s\n' "$tmp/z/bn.zkey" >>"$conf"
rc=0
o="$(cuzk reload 2>&1)" || rc=$?
[ "$rc" = 21 ] && grep -q 'circuit name "../x" refused' <<<"$o" || fail "reload of a bad config: exit $rc: $o"
[ "$(js 'r.circuits.length' "$(cuzk --json circuits)")" = 4 ] || fail "a refused reload changed the circuits"
echo "ok: reload of a config with [circuit ../x] refused (exit 21), the four circuits kept"
write_conf 0 swapped
kill -HUP "$daemon_pid"
want="mul-bn:resident mul.bls_12:resident mixed:failed four:resident"
for _ in $(seq 1 300); do
  [ "$(js 'r.circuits.map(c=>c.name+":"+c.state).join(" ")' "$(cuzk --json circuits)")" = "$want" ] && break
  sleep 0.1
done
st="$(cuzk --json circuits)"
[ "$(js 'r.circuits.map(c=>c.name+":"+c.state).join(" ")' "$st")" = "$want" ] || fail "after SIGHUP: $st"
js 'r.circuits[2].error' "$st" | grep -q "is another circuit's than zkey" || fail "mixed: no reason: $st"
echo "ok: SIGHUP: tiny removed, its slot preloads four; mixed (an r1cs of another circuit) listed failed: $(js 'r.circuits[2].error' "$st")"
refused "a circuit removed by SIGHUP" no_such_circuit --circuit tiny --out "$tmp/o1" "$tmp/in/mp1.wtns"
refused "a circuit that failed to load" no_such_circuit --circuit mixed --out "$tmp/o1" "$tmp/in/mp1.wtns"
mkdir -p "$tmp/o6"
out="$(cuzk --json prove --circuit mul.bls_12 --out "$tmp/o6" --wait "$tmp/in/bls1.wtns")" || fail "prove after SIGHUP: $out"
verify "$BLS/verification_key.json" "$tmp/o6" bls1
echo "ok: after SIGHUP mul.bls_12 still proves (snarkjs verifies)"
kill -0 "$daemon_pid" || fail "cuzkd died"

# ---- kill -9 of cuzkd right after a submit by name: the job resumes from the store ----
mkdir -p "$tmp/o7"
j="$(cuzk --json prove --circuit mul.bls_12 --out "$tmp/o7" "$tmp/in"/bls{1,2}.wtns | jq -r .job)" || fail "submit before kill"
daemon_kill9
daemon_start --config "$conf" --devices cpu:1 --keep-finished 3600
# Decided before the kill, a job is not resumed (nothing is left): then wait finds none.
out="$(cuzk --json wait "$j" 2>&1)" || grep -q no_such_job <<<"$out" || fail "wait $j after restart: $out"
verify "$BLS/verification_key.json" "$tmp/o7" bls1 bls2
echo "ok: a job by name survives kill -9 of cuzkd: both proofs verify after the restart"

daemon_shutdown_clean
