#!/usr/bin/env bash
# Temp names nobody can squat. The finalizer wrote OUT/NAME.proof.json.tmp.PID, a name
# anyone could predict from the finalizer's pid in `cuzk status`. In a shared sticky
# directory (1777) the attacker creates those names first, as its own regular files,
# for root's job: before, the partition failed ("refused: not ours") and was not
# retried. Now the temp names carry a random part (and another is tried on EEXIST):
# root's partitions prove (snarkjs verifies), the attacker's files are left as they
# were, and no temp file of cuzkd's is left behind.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secsquat mulchain-10
mkdir -m 1777 "$tmp/shared"
fpid="$(js '(r.children.find(c=>c.stage=="finalizer")||{}).pid' "$(cuzk --json status)")"
[ -n "$fpid" ] && [ "$fpid" != undefined ] || fail "no finalizer pid"
for w in w1 w2; do
  for k in proof public; do as_attacker sh -c "echo SQUAT >'$tmp/shared/$w.$k.json.tmp.$fpid'"; done
done
mkdir -p "$tmp/in"
for w in w1 w2; do cp "$A/witness.wtns" "$tmp/in/$w.wtns"; done
out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/shared" "$tmp/in"/w*.wtns)" || fail "submit: $out"
job="$(js 'r.job' "$out")"
res="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$job" 2>&1)" ||
  fail "root's job in the shared directory did not prove: $res"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$A/verification_key.json" \
  "$tmp/shared" | grep -qx "2 verified" || fail "snarkjs does not verify both proofs"
for w in w1 w2; do for k in proof public; do
  [ "$(cat "$tmp/shared/$w.$k.json.tmp.$fpid")" = SQUAT ] || fail "the attacker's $w.$k file was changed"
done; done
left="$(find "$tmp/shared" -name '*.tmp.*' ! -user "$atk")"
[ -z "$left" ] || fail "temp files of cuzkd left: $left"
echo "ok: squatted temp names: both partitions proved (snarkjs verifies), the squatter's files untouched"
daemon_shutdown_clean
echo "PASS: temp_squat"
