#!/usr/bin/env bash
# Fleet rows cannot reach outside their place. Whoever can write the queue's tables
# writes a row's name and done_by, and a root cuzkd links files by them. With a real
# PostgreSQL cluster, a user (the attacker, who owns a job's out dir) writes
#   1. a done, unpublished row whose done_by is "x/../../../z": its "spool dir"
#      climbs out of the out dir into root's 0700 directory z, whose secret.* files
#      the adopting cuzkd would move into the attacker's out dir;
#   2. a row named "../../z/evil": the attacker's files would be linked into z;
#   3. a stored row named "../fetched": `cuzk fetch --out DIR` would write beside DIR.
# cuzkd must refuse both rows (failing them, with the reason), leave z as it was, and
# `cuzk fetch` must write nothing outside --out. A good row is still published, and
# its empty spool dir removed (the out dir holds only what its user asked for).
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/pg.sh"
daemon_init secrows
attacker_init
pg_cluster_start fleet_rows
FX="$FIXTURES/bn128/mulchain-10"

# Root's 0700 directory, and the attacker's tree beside it ($tmp/atk is the
# attacker's: so "out/.cuzk-x/../../../z" is $tmp/z and "out/../../z" too).
mkdir -m 0700 "$tmp/z"
echo ROOTS-SECRET >"$tmp/z/secret.public.json"
echo ROOTS-SECRET >"$tmp/z/secret.proof.json"
mkdir -p "$tmp/atk/out/.cuzk-x" "$tmp/atk/out/.cuzk-y" "$tmp/atk/z" "$tmp/atk/fetch" "$tmp/atk/good/.cuzk-gone"
echo EVIL >"$tmp/atk/z/evil.public.json"
echo EVIL >"$tmp/atk/z/evil.proof.json"
# A good row's spooled proof, of a daemon that is gone (no daemon row): adopted.
"$BUILD/bin/cuzk" prove-local "$FX/circuit_final.zkey" "$FX/witness.wtns" \
  "$tmp/atk/good/.cuzk-gone/g.proof.json" "$tmp/atk/good/.cuzk-gone/g.public.json" >/dev/null ||
  fail "prove-local of the good row's proof"
# The attacker's own copy of the client: the build tree may sit where the attacker
# cannot reach (a 0700 temp folder).
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk"
chown -R "$atk:$atk" "$tmp/atk"

# The schema: a cuzk client creates it (every fleet command does, if absent).
"$BUILD/bin/cuzk" status --queue "$url" >/dev/null || fail "cuzk status --queue (schema)"
psql_q "INSERT INTO cuzk_jobs(id, zkey, out_dir, n_parts) VALUES
          (901, '$FX/circuit_final.zkey', '$tmp/atk/out', 2),
          (902, '$FX/circuit_final.zkey', '$tmp/atk/good', 1);
        INSERT INTO cuzk_jobs(id, zkey, out_dir, n_parts, store_proofs) VALUES
          (903, '$FX/circuit_final.zkey', '', 1, true);
        INSERT INTO cuzk_parts(job, idx, wtns, name, state, done_by, lease_gen, finished) VALUES
          (901, 0, '/dev/null', 'secret', 'done', 'x/../../../z', 1, now()),
          (901, 1, '/dev/null', '../../z/evil', 'done', 'y', 1, now()),
          (902, 0, '/dev/null', 'g', 'done', 'gone', 1, now());
        INSERT INTO cuzk_parts(job, idx, wtns, name, state, done_by, lease_gen, finished,
                               published, proof_json, public_json) VALUES
          (903, 0, '/dev/null', '../fetched', 'done', 'gone', 1, now(), true, '{}', '[]');"

# 1, 2: a root cuzkd on that queue adopts what gone daemons left unpublished.
daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --queue "$url"
for _ in $( # liveness bound: adoption runs at start, then every 3 s
  seq 1 600
); do
  [ "$(psql_q "SELECT count(*) FROM cuzk_parts WHERE job IN (901, 902) AND published")" = 3 ] && break
  sleep 0.1
done
[ -f "$tmp/z/secret.public.json" ] && [ -f "$tmp/z/secret.proof.json" ] &&
  [ "$(cat "$tmp/z/secret.public.json")" = ROOTS-SECRET ] || fail "root's secret.* left its 0700 directory"
[ ! -e "$tmp/atk/out/secret.public.json" ] && [ ! -e "$tmp/atk/out/secret.proof.json" ] ||
  fail "root's secret reached the attacker's out dir"
echo "ok: done_by x/../../../z: root's files stayed where they were"
[ ! -e "$tmp/z/evil.public.json" ] && [ ! -e "$tmp/z/evil.proof.json" ] ||
  fail "the attacker's file was linked into root's 0700 directory"
echo "ok: name ../../z/evil: nothing linked into root's directory"
st="$(psql_q "SELECT idx || ':' || state || ':' || coalesce(reason, '') FROM cuzk_parts WHERE job = 901 ORDER BY idx")"
grep -q "^0:failed:refused" <<<"$st" && grep -q "^1:failed:refused" <<<"$st" || fail "the bad rows were not failed with the reason: $st"
grep -q "not a single file name" "$tmp/cuzkd.log" || fail "cuzkd did not log the refusal"
echo "ok: both rows failed: $(tr '\n' ' ' <<<"$st")"
# Failing its last open rows ends the job: a job left 'running' would wait forever.
js="$(psql_q "SELECT state FROM cuzk_jobs WHERE id = 901")"
[ "$js" = failed ] || fail "job 901's rows all failed but the job is '$js', not failed"
echo "ok: their job ended: $js"
# The good row: published, its proof verifies, the dead daemon's spool dir gone.
[ -f "$tmp/atk/good/g.proof.json" ] || fail "the good row was not published"
"$SNARKJS" groth16 verify "$FX/verification_key.json" "$tmp/atk/good/g.public.json" "$tmp/atk/good/g.proof.json" >/dev/null ||
  fail "snarkjs rejects the good row's proof"
[ ! -e "$tmp/atk/good/.cuzk-gone" ] || fail "the empty spool dir .cuzk-gone stayed in the out dir: $(ls -A "$tmp/atk/good")"
echo "ok: a good row of a gone daemon: published (snarkjs verifies), its spool dir removed"

# 3: cuzk fetch of a stored row named ../fetched, as the attacker.
r=0
as_attacker "$tmp/atk/cuzk" fetch 903 --queue "$url" --out "$tmp/atk/fetch" >"$tmp/fetch.out" 2>&1 || r=$?
[ ! -e "$tmp/atk/fetched.public.json" ] && [ ! -e "$tmp/atk/fetched.proof.json" ] ||
  fail "cuzk fetch wrote outside --out"
grep -q "not a single file name" "$tmp/fetch.out" || fail "cuzk fetch did not say why (exit $r): $(cat "$tmp/fetch.out")"
echo "ok: cuzk fetch of a row named ../fetched: nothing written outside --out (exit $r)"
daemon_stop
echo "PASS: fleet_rows"
