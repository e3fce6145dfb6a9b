#!/usr/bin/env bash
# The fleet without a shared file system (docs/operations.md, "Fleet"): circuit jobs,
# their inputs' bytes in a real PostgreSQL (tests/lib/pg.sh), proved by two cuzkd
# --queue --store-proofs that share nothing else: each its own instance, run dir,
# state dir and circuits dir holding its own copy of the fixture circuit (bn128
# mulchain-10: zkey, witness generator, r1cs).
#   1. `cuzk prove --queue --circuit mul` of input.json files and a .wtns, submitted
#      through either daemon's instance (the fingerprint read from its `circuits`), one
#      with an idempotency key twice (one job): every partition proved by some daemon,
#      `cuzk wait --queue` sees each job done, `cuzk fetch` writes every proof, snarkjs
#      verifies all.
#   2. a job for the circuit with a fingerprint no daemon has (--fingerprint) is never
#      claimed: once the daemons are idle it is still queued with no claim made.
#   3. an input that does not satisfy the circuit (a signal missing) fails with the
#      witness generator's reason, once (never retried); a .wtns of another curve fails
#      with cuzkd's refusal; the good partition beside them is proved. A row written
#      into the table with a name that is no single file name fails once with that
#      reason and leaves no file.
#   4. each daemon's private dir holds no input file after its work; both cuzkd shut
#      down cleanly.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
wgen_daemon_init fcirc
. "$here/../security/lib.sh"
. "$here/../lib/pg.sh"
need_tool jq
FX="$FIXTURES/bn128/mulchain-10"
G="$(wgen_for "$FX")"
pg_cluster_start fleet_circuits
echo "ok: cluster up ($("$bindir/postgres" --version), port $port)"

# Two cuzkd, nothing shared but the database.
pids=()
daemon_on_exit="for p in \${pids[@]}; do kill -KILL \$p 2>/dev/null; done; ${daemon_on_exit}"
for k in a b; do
  d="$tmp/$k"
  mkdir -p "$d/circuits/mul" "$d/state"
  mkdir -m 0700 "$d/run"
  cp "$FX/circuit_final.zkey" "$d/circuits/mul/circuit.zkey"
  cp "$FX/circuit.r1cs" "$d/circuits/mul/circuit.r1cs"
  cp "$G" "$d/circuits/mul/circuit.wgen"
  "$BUILD/bin/cuzkd" --instance "$inst-$k" --run-dir "$d/run" --state-dir "$d/state" --foreground \
    --devices cpu:1 --buffers 2 --buffer-mb 16 --circuits-dir "$d/circuits" --wgen-dir "$d/circuits" \
    --queue "$url" --queue-lease 10 --store-proofs >"$tmp/cuzkd-$k.log" 2>&1 &
  pids+=($!)
done
qa() { "$BUILD/bin/cuzk" --instance "$inst-a" --run-dir "$tmp/a/run" "$@"; }
qb() { "$BUILD/bin/cuzk" --instance "$inst-b" --run-dir "$tmp/b/run" "$@"; }
# Up once its fleet thread has read its circuits (a liveness bound, not a speed check).
i=0
for k in a b; do
  for _ in $(seq 1 1800); do
    grep -q "claiming circuit jobs for: mul" "$tmp/cuzkd-$k.log" && break
    kill -0 "${pids[$i]}" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "claiming circuit jobs for: mul" "$tmp/cuzkd-$k.log" || {
    tail "$tmp/cuzkd-$k.log"
    fail "cuzkd $k does not claim circuit jobs"
  }
  i=$((i + 1))
done
fp="$(qa --json circuits | jq -r '.circuits[] | select(.name == "mul") | .fingerprint')"
[ -n "$fp" ] && [ "$fp" = "$(qb --json circuits | jq -r '.circuits[] | select(.name == "mul") | .fingerprint')" ] ||
  fail "the two copies' fingerprints differ or are missing: $fp"
echo "ok: two cuzkd, each its own copy of circuit mul (fingerprint ${fp:0:16}...)"

# ---- 1. input.json files and a .wtns, through either daemon's instance -------------
mkdir -p "$tmp/in" "$tmp/bad"
cp "$FX/input.json" "$tmp/in/in1.json"
cp "$FX/input.json" "$tmp/in/in2.json"
cp "$FX/witness.wtns" "$tmp/in/w.wtns"
j1="$(qa --json prove --queue "$url" --circuit mul "$tmp/in/in1.json" "$tmp/in/in2.json" | jq .job)"
j2="$(qb --json prove --queue "$url" --circuit mul --tenant t1 --idempotency-key k1 "$tmp/in/w.wtns" "$tmp/in/in1.json" | jq .job)"
again="$(qa --json prove --queue "$url" --circuit mul --tenant t1 --idempotency-key k1 "$tmp/in/w.wtns" "$tmp/in/in1.json")"
[ "$(jq .job <<<"$again")" = "$j2" ] && [ "$(jq .created <<<"$again")" = false ] || fail "idempotency: $again (job $j2)"
set +e
out="$(qa prove --queue "$url" --circuit mul --tenant t1 --idempotency-key k1 "$tmp/in/in2.json" 2>&1)"
rc=$?
set -e
[ $rc -eq 21 ] && [[ "$out" == *"another body"* ]] || fail "the same key with another body: rc $rc: $out"
echo "ok: jobs $j1 and $j2 submitted; the same key again is job $j2, with another body refused"

# ---- 2. a fingerprint no daemon has ---------------------------------------------------
# (upper case, as someone may paste it: written lower case, as cuzkd writes its own)
other="00DEADBEEF$(printf '0%.0s' $(seq 1 54))"
j3="$("$BUILD/bin/cuzk" --json prove --queue "$url" --circuit mul --fingerprint "$other" "$tmp/in/in1.json" | jq .job)"
[ "$(psql_q "SELECT fingerprint FROM cuzk_jobs WHERE id = $j3")" = "${other,,}" ] || fail "fingerprint not kept lower case"
# A prefix (as a log line shows one) would match no daemon ever: refused at once.
rc=0
"$BUILD/bin/cuzk" prove --queue "$url" --circuit mul --fingerprint "${fp:0:16}" "$tmp/in/in1.json" \
  2>"$tmp/short.err" || rc=$?
[ "$rc" = 2 ] && grep -q "whole hex" "$tmp/short.err" || fail "a 16-digit fingerprint: exit $rc, $(cat "$tmp/short.err")"

# ---- 3. inputs that fail, beside a good one ---------------------------------------------
echo '{"x": "7"}' >"$tmp/bad/missing.json"
cp "$FIXTURES/bls12381/mulchain-10/witness.wtns" "$tmp/bad/bls.wtns"
j4="$(qb --json prove --queue "$url" --circuit mul "$tmp/in/in2.json" "$tmp/bad/missing.json" "$tmp/bad/bls.wtns" | jq .job)"
# A row written straight into the table (the client names rows itself) whose name is
# no single file name: the row's own fault, failed with that reason and never retried.
j5="$(psql_q "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts, store_proofs, circuit, fingerprint)
  VALUES ('', '', 1, true, 'mul', '${fp,,}') RETURNING id")"
psql_q "INSERT INTO cuzk_parts(job, idx, wtns, name, input, input_kind)
  VALUES ($j5, 0, '', '../evil', convert_to('$(tr -d '\n' <"$FX/input.json")', 'UTF8'), 'json')"

for j in "$j1" "$j2"; do
  timeout 300 "$BUILD/bin/cuzk" wait "$j" --queue "$url" --timeout-ms 240000 >/dev/null ||
    {
      tail -n 20 "$tmp"/cuzkd-*.log
      fail "job $j not done"
    }
done
set +e
timeout 300 "$BUILD/bin/cuzk" wait "$j4" --queue "$url" --timeout-ms 240000 >/dev/null
rc=$?
set -e
[ $rc -eq 22 ] || {
  tail -n 20 "$tmp"/cuzkd-*.log
  fail "job $j4 (bad inputs): wait exit $rc, expected 22 (failed)"
}
n=0
for j in "$j1" "$j2"; do
  mkdir -p "$tmp/out-$j"
  "$BUILD/bin/cuzk" fetch "$j" --queue "$url" --out "$tmp/out-$j" >/dev/null || fail "fetch $j"
  r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$FX/verification_key.json" "$tmp/out-$j")" || fail "snarkjs $j: $r"
  [ "$r" = "2 verified" ] || fail "job $j: snarkjs: $r"
  n=$((n + 2))
done
by="$("$BUILD/bin/cuzk" status --queue "$url" | jq -c '[.daemons[] | {(.id): .done}] | add')"
echo "ok: jobs $j1 and $j2 done, $n proofs fetched, snarkjs verifies all (done by: $by)"

mkdir -p "$tmp/out-$j4"
set +e
out="$("$BUILD/bin/cuzk" fetch "$j4" --queue "$url" --out "$tmp/out-$j4" 2>&1)"
rc=$?
set -e
[ $rc -eq 22 ] || fail "fetch of the failed job: rc $rc: $out"
r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FX/verification_key.json" "$tmp/out-$j4")" || fail "snarkjs $j4: $r"
[ "$r" = "1 verified" ] || fail "job $j4: the good partition: snarkjs: $r"
miss="$(grep '^cuzk fetch: 1: failed' <<<"$out" || true)"
wtns="$(grep '^cuzk fetch: 2: failed' <<<"$out" || true)"
[[ "$miss" == *"input values are not given: k"* ]] || fail "the missing signal's reason: $out"
[ -n "$wtns" ] || fail "the other curve's .wtns: $out"
tries="$(psql_q "SELECT string_agg(idx || ':' || attempts, ',' ORDER BY idx) FROM cuzk_parts WHERE job = $j4")"
# Failed once, by one daemon, and never claimed again (a claim given back for load,
# cuzkd busy, would count too: at most 3 are allowed).
nfail="$(cat "$tmp"/cuzkd-*.log | grep -c "job $j4 part 1 (circuit mul) failed: " || true)"
[ "$nfail" = 1 ] || fail "the unsatisfied partition failed $nfail times (want once)"
for t in ${tries//,/ }; do [ "${t#*:}" -le 3 ] || fail "claims of job $j4's partitions: $tries"; done
echo "ok: job $j4: the good partition proved (snarkjs), the others failed with their reasons (claims $tries):"
echo "    $miss"
echo "    $wtns"
set +e
timeout 300 "$BUILD/bin/cuzk" wait "$j5" --queue "$url" --timeout-ms 240000 >/dev/null
rc=$?
set -e
st="$(psql_q "SELECT state || ':' || attempts || ':' || coalesce(reason, '') FROM cuzk_parts WHERE job = $j5")"
[ $rc -eq 22 ] && [[ "$st" == "failed:1:"*"not a single file name"* ]] ||
  fail "job $j5 (a row named ../evil): wait exit $rc, row $st"
[ -z "$(find "$tmp" -name 'evil*' | head -1)" ] || fail "a file named after ../evil: $(find "$tmp" -name 'evil*')"
echo "ok: job $j5: its row named ../evil failed once as the row's own fault: $st"

# ---- 2, checked now that both daemons are idle ---------------------------------------
st="$(psql_q "SELECT state || ':' || attempts FROM cuzk_parts WHERE job = $j3")"
[ "$st" = "queued:0" ] || fail "the job of an unknown fingerprint: $st"
# An ended partition's input is gone from the table; the queued one keeps its own.
kept="$(psql_q "SELECT count(*) FROM cuzk_parts WHERE input IS NOT NULL AND state IN ('done', 'failed')")"
[ "$kept" = 0 ] || fail "$kept ended partitions still hold their input"
[ "$(psql_q "SELECT count(*) FROM cuzk_parts WHERE job = $j3 AND input IS NOT NULL")" = 1 ] || fail "the queued input was dropped"
echo "ok: job $j3 (fingerprint 00deadbeef0..., no daemon has it) never claimed: $st; a 16-digit prefix refused (exit 2)"

# ---- a clean shutdown: the fleet thread (which asks its cuzkd for its circuits every
# 3 s) stops with it ---------------------------------------------------------------
for k in a b; do
  "$BUILD/bin/cuzk" --instance "$inst-$k" --run-dir "$tmp/$k/run" shutdown >/dev/null || fail "shutdown $k"
done
i=0
for k in a b; do
  rc=0
  timeout 60 tail --pid="${pids[$i]}" -f /dev/null || fail "cuzkd $k still running 60 s after shutdown"
  wait "${pids[$i]}" || rc=$?
  [ $rc -eq 0 ] || fail "cuzkd $k exited with $rc after shutdown"
  i=$((i + 1))
done
pids=()
echo "ok: both cuzkd shut down cleanly (exit 0)"

# ---- 4. no input left in a private dir (looked at once both have stopped: a partition's
# files go right after its finish, which `cuzk wait` may see first) ----------------
left="$(find "$tmp/a/run" "$tmp/b/run" -path '*proofs*' -type f | head)"
[ -z "$left" ] || fail "files left in the private dirs: $left"
echo "ok: nothing left in the daemons' private dirs"
