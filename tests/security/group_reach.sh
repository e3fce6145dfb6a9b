#!/usr/bin/env bash
# docs/operations.md's "usermod -aG GROUP alice" lets alice submit. A run dir made 0700 before
# (a first start without --group, or by hand) stayed 0700 under --group, so members
# were refused at connect and nothing said why. Now cuzkd opens it to the group
# (0750, logged), and names a directory above it that members cannot pass. The
# member (the attacker user, in its own group) then reaches the socket and proves a
# job (verified with snarkjs); a user outside the group still cannot connect.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secgrp
attacker_init
victim_init # not in the group
A="$FIXTURES/bn128/mulchain-10"
chmod 0711 "$tmp" # members pass $tmp; nothing else of it is theirs to list
mkdir -m 0700 "$run"
mkdir -m 0700 "$tmp/closed"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
m="$(stat -c %a "$run")"
[ "$m" = 750 ] || fail "the 0700 run dir is mode $m under --group"
grep -q "made 0750 so that group $atk reaches the socket" "$tmp/cuzkd.log" || fail "cuzkd did not say it opened the run dir"
echo "ok: the pre-made 0700 run dir was made 0750 for group $atk, and the log says so"
mkdir -p "$tmp/atk/in" "$tmp/atk/out"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk"
chown -R "$atk:$atk" "$tmp/atk"
chmod 0755 "$tmp/atk"
as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" prove --zkey "$tmp/atk/in/c.zkey" \
  --out "$tmp/atk/out" --wait "$tmp/atk/in/w.wtns" >/dev/null 2>&1 || fail "the group member could not prove"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/w.public.json" "$tmp/atk/out/w.proof.json" >/dev/null ||
  fail "snarkjs rejects the member's proof"
echo "ok: a member of the group proves through the socket (snarkjs verifies)"
runuser -u "$VICTIM" -- "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null 2>&1 &&
  fail "a user outside the group reached the socket"
echo "ok: a user outside the group does not"
daemon_stop
# A run dir below a directory members cannot pass: cuzkd says so at start.
inst="${inst}b"
run="$tmp/closed/run"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
grep -q "members of group $atk cannot reach the socket: $tmp/closed" "$tmp/cuzkd.log" ||
  fail "no warning for a run dir under $tmp/closed (0700): $(head -3 "$tmp/cuzkd.log")"
echo "ok: $(grep -o 'warning: members.*' "$tmp/cuzkd.log" | head -1)"
daemon_stop
echo "PASS: group_reach"
