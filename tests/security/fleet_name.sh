#!/usr/bin/env bash
# A queue row whose name is not its witness's leaves nothing of root's in the out dir.
# Whoever writes the queue's tables writes a row's name, and a root cuzkd proves the
# row into OUT/.cuzk-OWNER/ by `cuzk prove`, whose proof is named after the witness's
# file. A row named "other" whose witness is w.wtns: the proof came out as
# w.proof.json, the finish looked for other.proof.json ("spooled proof missing: back to
# the queue"), the cleanup removed other.* only, and root's w.proof.json stayed in the
# user's out dir (with the spool dir that held it), proved again at every lease.
# Now such a row is refused before anything is proved (failed, with the reason), and
# the out dir holds only what its user asked for; a good row beside it is published
# (snarkjs verifies). With a real PostgreSQL cluster.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/pg.sh"
daemon_init secfname
attacker_init
pg_cluster_start fleet_name
FX="$FIXTURES/bn128/mulchain-10"
mkdir -p "$tmp/atk/out" "$tmp/atk/good"
cp "$FX/witness.wtns" "$tmp/atk/w.wtns"
cp "$FX/witness.wtns" "$tmp/atk/g.wtns"
chown -R "$atk:$atk" "$tmp/atk"
chmod 755 "$tmp/atk"

"$BUILD/bin/cuzk" status --queue "$url" >/dev/null || fail "cuzk status --queue (schema)"
psql_q "INSERT INTO cuzk_jobs(id, zkey, out_dir, n_parts) VALUES
          (911, '$FX/circuit_final.zkey', '$tmp/atk/out', 1),
          (912, '$FX/circuit_final.zkey', '$tmp/atk/good', 1);
        INSERT INTO cuzk_parts(job, idx, wtns, name) VALUES
          (911, 0, '$tmp/atk/w.wtns', 'other'),
          (912, 0, '$tmp/atk/g.wtns', 'g');"
daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --queue "$url"
for _ in $( # liveness bound: both rows end (a proof is a few seconds)
  seq 1 1200
); do
  [ "$(psql_q "SELECT count(*) FROM cuzk_parts WHERE job IN (911, 912) AND state IN ('done', 'failed') AND published")" = 2 ] && break
  sleep 0.1
done
st="$(psql_q "SELECT job || ':' || state || ':' || coalesce(reason, '') FROM cuzk_parts WHERE job IN (911, 912) ORDER BY job")"
grep -q "^912:done:" <<<"$st" || fail "the good row did not prove: $st"
"$SNARKJS" groth16 verify "$FX/verification_key.json" "$tmp/atk/good/g.public.json" "$tmp/atk/good/g.proof.json" >/dev/null ||
  fail "snarkjs rejects the good row's proof"
[ "$(find "$tmp/atk/good" -mindepth 1 ! -name 'g.p*' | wc -l)" = 0 ] || fail "the good row left files: $(ls -A "$tmp/atk/good")"
echo "ok: the good row: published, snarkjs verifies, no spool dir left"
grep -q "^911:failed:.*name" <<<"$st" || fail "the row named 'other' with witness w.wtns was not refused: $st"
echo "ok: the row named 'other' with witness w.wtns failed: $(grep ^911 <<<"$st")"
left="$(find "$tmp/atk/out" -mindepth 1)"
[ -z "$left" ] || fail "the mismatched row left files in the user's out dir: $left"
echo "ok: nothing of root's was left in its out dir"
daemon_stop
echo "PASS: fleet_name"
