#!/usr/bin/env bash
# The operator's room and the store's privacy.
#   1. Two users each fill their job quota (half the table by default): before, root's
#      submit then failed "full", against the promise that the operator always gets
#      through. Ordinary users together never take the table's last eighth now: the
#      second user's last job is refused "full", root's job is accepted, and once the
#      stages run again every job proves (verified with snarkjs).
#   2. The job store (every job's paths and uids) is 0600 to the daemon, with its
#      -wal and -shm, under the shipped unit's UMask=0027 (it was 0640: every member
#      of the operator group read it), and an older store of 0640 is made 0600.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secroom
attacker_init
victim_init
usermod -a -G "$atk" "$VICTIM" || {
  echo "SKIP: usermod failed"
  exit 77
}
F="$FIXTURES/bn128/mulchain-10"
mkdir -p "$tmp/state"
: >"$tmp/state/$inst.db"
chmod 0640 "$tmp/state/$inst.db"
umask 0027
# 8 job slots: each user's quota is 4 (half), the reserve 1.
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk" --max-jobs 8 --stall-timeout 0
umask 0022
attacker_reach
for f in "$tmp/state/$inst.db" "$tmp/state/$inst.db-wal" "$tmp/state/$inst.db-shm"; do
  [ -e "$f" ] || continue
  m="$(stat -c %a "$f")"
  [ "$m" = 600 ] || fail "$(basename "$f") is mode $m, not 600"
done
echo "ok: the job store is 0600 (was 0640; -wal and -shm too) under umask 0027"

tree() { # user dir
  mkdir -p "$2/in" "$2/out"
  install -m 0755 "$BUILD/bin/cuzk" "$2/cuzk"
  cp "$F/circuit_final.zkey" "$2/in/c.zkey"
  for i in 1 2 3 4; do cp "$F/witness.wtns" "$2/in/w$i.wtns"; done
  chown -R "$1:$1" "$2"
}
A="$tmp/A" B="$tmp/B" R="$tmp/R"
tree "$VICTIM" "$A"
tree "$atk" "$B"
tree root "$R"
freeze_stages
prove() { # user dir witness
  if [ "$1" = root ]; then
    cuzk --json prove --zkey "$2/in/c.zkey" --out "$2/out" "$2/in/$3.wtns" 2>&1
  else runuser -u "$1" -- "$2/cuzk" --instance "$inst" --run-dir "$run" --json prove --zkey "$2/in/c.zkey" \
    --out "$2/out" "$2/in/$3.wtns" 2>&1; fi
}
n=0
for w in w1 w2 w3 w4; do
  prove "$VICTIM" "$A" "$w" >/dev/null || fail "A's job $w"
  n=$((n + 1))
done
for w in w1 w2 w3; do
  prove "$atk" "$B" "$w" >/dev/null || fail "B's job $w"
  n=$((n + 1))
done
r="$(prove "$atk" "$B" w4)" && fail "B's 4th job took the operator's slot: $r"
[ "$(js 'r.error' "$r")" = full ] || fail "B's 4th job: not refused \"full\": $r"
echo "ok: users hold 7 of 8 slots; B's 4th job refused: $(js r.message "$r")"
r="$(prove root "$R" w1)" || fail "root's job while users fill their quotas: $r"
echo "ok: root's job accepted (job $(js r.job "$r"))"
thaw
for j in $(jq -r '.jobs[].id' <<<"$(cuzk --json status)"); do cuzk wait "$j" >/dev/null || fail "job $j"; done
for d in "$A/out" "$B/out" "$R/out"; do
  node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$F/verification_key.json" \
    "$d" >"$tmp/v" || fail "snarkjs in $d: $(cat "$tmp/v")"
done
echo "ok: every job proved once thawed (snarkjs verifies A's 4, B's 3, root's 1)"
daemon_shutdown_clean
echo "PASS: operator_room"
