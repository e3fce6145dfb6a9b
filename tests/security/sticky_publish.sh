#!/usr/bin/env bash
# Issue 16 item 2, the sticky out dir checked again at publish. The attacker submits
# into a sticky, world-writable directory it does not own (/tmp-like), under names no
# file has yet: the submit's check passes. Before the proof is published, another user
# (root here) creates one of those names. The kernel would not let the attacker
# replace it (sticky bit); cuzkd, publishing as root, would. The finalizer is frozen
# (SIGSTOP) across that window, so it is the same whatever the machine's speed. Old
# cuzkd replaced root's file; now that partition fails with "another user's file",
# root's file is untouched, and the job's other partition is published and verifies.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secsticky mulchain-10

mkdir -p "$tmp/atk/in" "$tmp/sticky"
chmod 1777 "$tmp/sticky"
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/x.wtns"
cp "$A/witness.wtns" "$tmp/atk/in/y.wtns"
chown -R "$atk:$atk" "$tmp/atk"
acuzk() { as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" "$@"; }

fin="$(jq -r '.children[] | select(.stage == "finalizer") | .pid' <<<"$(cuzk --json status)")"
[ -n "$fin" ] || fail "no finalizer in status"
daemon_on_exit="kill -CONT $fin 2>/dev/null; ${daemon_on_exit:-}"
kill -STOP "$fin"
out="$(acuzk --json prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/sticky" "$tmp/atk/in/x.wtns" "$tmp/atk/in/y.wtns")" ||
  fail "the attacker's submit into a sticky dir: $out"
job="$(js 'r.job' "$out")"
echo "ok: the attacker's job $job into a sticky dir is accepted (no file of those names yet)"
# Root's file appears under one of the job's names, before its publish.
echo "root's own" >"$tmp/sticky/x.proof.json"
chmod 0644 "$tmp/sticky/x.proof.json"
kill -CONT "$fin"
r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$job" || true)"
[ "$(cat "$tmp/sticky/x.proof.json")" = "root's own" ] || fail "root's x.proof.json was replaced by the attacker's proof"
[ "$(stat -c %u "$tmp/sticky/x.proof.json")" = 0 ] || fail "x.proof.json is no longer root's"
[ ! -e "$tmp/sticky/x.public.json" ] || fail "x.public.json was published without its proof"
st="$(jq -r '.job.parts[] | select(.name == "x") | .state' <<<"$r")"
why="$(jq -r '.job.parts[] | select(.name == "x") | .reason' <<<"$r")"
[ "$st" = failed ] && grep -q "another user's file" <<<"$why" || fail "partition x: $st ($why): $r"
echo "ok: root's file created after submit is untouched; partition x fails: $why"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/sticky/y.public.json" "$tmp/sticky/y.proof.json" 2>&1 |
  grep -q OK || fail "snarkjs rejects y, the clean partition"
kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died"
echo "ok: the job's other partition y is published and verifies"
daemon_stop
