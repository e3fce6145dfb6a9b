#!/usr/bin/env bash
# A fleet daemon killed for good leaves nothing of its own in its users' out dirs.
# A member spools each proof in OUT/.cuzk-HOST-INSTANCE/ and removes the dir as it
# publishes; one killed there (or in the middle of a write) left the dir, with a proof
# it never published and a temp file, in the out dir for good: nobody else removed
# it. Now, once its heartbeat is stale and the job has ended, another member removes
# it. With a real PostgreSQL cluster and a real cuzkd as that member; the gone
# daemon is its rows (a heartbeat two hours old) and the dirs it left:
#   job 921 (ended): .cuzk-gone-x holding a spooled proof (made by cuzk prove-local,
#     snarkjs verifies it) and a temp file: removed;
#   job 922 (ended): a .cuzk-gone-x the out dir's user made (theirs): kept;
#   job 923 (still running, held by a live daemon): .cuzk-gone-x kept until it ends,
#     then removed.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/pg.sh"
daemon_init secgone
attacker_init
pg_cluster_start fleet_gone_spool
FX="$FIXTURES/bn128/mulchain-10"
mkdir -p "$tmp/u/o1/.cuzk-gone-x" "$tmp/u/o2/.cuzk-gone-x" "$tmp/u/o3/.cuzk-gone-x"
"$BUILD/bin/cuzk" prove-local "$FX/circuit_final.zkey" "$FX/witness.wtns" \
  "$tmp/u/o1/.cuzk-gone-x/w.proof.json" "$tmp/u/o1/.cuzk-gone-x/w.public.json" >/dev/null ||
  fail "prove-local of the gone daemon's spooled proof"
"$SNARKJS" groth16 verify "$FX/verification_key.json" "$tmp/u/o1/.cuzk-gone-x/w.public.json" \
  "$tmp/u/o1/.cuzk-gone-x/w.proof.json" | grep -q OK || fail "snarkjs rejects the spooled proof"
echo partial >"$tmp/u/o1/.cuzk-gone-x/w.proof.json.tmp.4242.abc"
cp "$tmp/u/o1/.cuzk-gone-x/w.proof.json" "$tmp/u/o3/.cuzk-gone-x/"
chmod 0700 "$tmp/u/o1/.cuzk-gone-x" "$tmp/u/o3/.cuzk-gone-x"
chown -R "$atk:$atk" "$tmp/u"
chown -R root:root "$tmp/u/o1/.cuzk-gone-x" "$tmp/u/o3/.cuzk-gone-x"
echo "the user's own" >"$tmp/u/o2/.cuzk-gone-x/notes.txt"
chown -R "$atk:$atk" "$tmp/u/o2/.cuzk-gone-x"

"$BUILD/bin/cuzk" status --queue "$url" >/dev/null || fail "cuzk status --queue (schema)"
z="$FX/circuit_final.zkey"
psql_q "INSERT INTO cuzk_daemons(id, host, heartbeat, started, lease_s) VALUES
          ('gone-x', 'gone', now() - interval '2 hours', now() - interval '3 hours', 30),
          ('live-y', 'live', now() + interval '1 day', now(), 3600);
        INSERT INTO cuzk_jobs(id, zkey, out_dir, n_parts, state, submitted, finished) VALUES
          (921, '$z', '$tmp/u/o1', 1, 'done', now() - interval '150 minutes', now() - interval '140 minutes'),
          (922, '$z', '$tmp/u/o2', 1, 'done', now() - interval '150 minutes', now() - interval '140 minutes'),
          (923, '$z', '$tmp/u/o3', 1, 'running', now() - interval '150 minutes', NULL);
        INSERT INTO cuzk_parts(job, idx, wtns, name, state, done_by, lease_gen, finished, published) VALUES
          (921, 0, '$FX/witness.wtns', 'w', 'done', 'live-y', 1, now(), true),
          (922, 0, '$FX/witness.wtns', 'w', 'done', 'live-y', 1, now(), true);
        INSERT INTO cuzk_parts(job, idx, wtns, name, state, owner, lease_gen, lease_expiry) VALUES
          (923, 0, '$FX/witness.wtns', 'w', 'leased', 'live-y', 1, now() + interval '1 day');"

daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --queue "$url"
# A liveness bound: the sweep runs every 3 s.
for _ in $(seq 1 600); do
  [ ! -e "$tmp/u/o1/.cuzk-gone-x" ] && break
  sleep 0.1
done
[ ! -e "$tmp/u/o1/.cuzk-gone-x" ] || fail "the gone daemon's spool dir stayed in job 921's out dir: $(ls -A "$tmp/u/o1/.cuzk-gone-x")"
echo "ok: job 921 ended, its gone daemon's spool dir (a spooled proof, a temp file) removed"
[ -f "$tmp/u/o2/.cuzk-gone-x/notes.txt" ] || fail "the user's own .cuzk-gone-x in job 922's out dir was touched"
echo "ok: a .cuzk-gone-x that the out dir's user made is kept"
[ -f "$tmp/u/o3/.cuzk-gone-x/w.proof.json" ] || fail "the spool dir of running job 923 was removed before the job ended"
echo "ok: job 923 still runs: its out dir's spool dir is kept"
psql_q "UPDATE cuzk_parts SET state = 'failed', reason = 'test', owner = NULL, published = true, finished = now() WHERE job = 923;
        UPDATE cuzk_jobs SET state = 'failed', finished = now() WHERE id = 923;"
for _ in $(seq 1 600); do
  [ ! -e "$tmp/u/o3/.cuzk-gone-x" ] && break
  sleep 0.1
done
[ ! -e "$tmp/u/o3/.cuzk-gone-x" ] || fail "job 923 ended but the gone daemon's spool dir stayed"
echo "ok: job 923 ended: its spool dir removed too"
[ "$(psql_q "SELECT count(*) FROM cuzk_meta WHERE key = 'swept:gone-x'")" = 1 ] || fail "the sweep was not recorded"
grep -q "removed the spool dirs of 1 daemon" "$tmp/cuzkd.log" || fail "cuzkd did not log the sweep"
daemon_stop
echo "PASS: fleet_gone_spool"
