#!/usr/bin/env bash
# The fleet queue on a real PostgreSQL cluster that this test starts (initdb + pg_ctl
# as a per-run unprivileged user, temp dir, a free port, its unix socket in the temp
# dir), never a mock database:
# 0. the database unreachable: `cuzk status --queue` and `cuzk prove --queue` exit 20
#    with a sentence naming the connection failure.
# 1. lease semantics (build/tests/test_fleet_pg): disjoint SKIP LOCKED claims, an
#    expired lease taken over with a new generation, the stale owner's finish refused,
#    no partition finished twice, failed partitions fail the job.
# 2. 30 partitions submitted with `cuzk prove --queue --json`, 3 claimers (test_fleet_pg
#    worker: claim, prove-local, finish, publish, mark: fleet_pg.h's order), one killed with -9
#    mid-run: `cuzk wait --queue` sees the job done, 30 proofs, each published once
#    (the publish log has every partition exactly once and no EEXIST), snarkjs accepts
#    every one, `cuzk status --queue` shows the daemons and their done counts.
# 3. the same with the database stopped for a few seconds mid-run (pg_ctl stop, start),
#    and with one worker dying between its 3rd finish and its publish (a hook): the
#    others adopt its spooled proof (the log says "adopted").
# 4. 3 cuzkd --queue (own instances, run and state dirs), 30 partitions, one cuzkd
#    killed with -9 mid-run: 30 proofs, none rewritten (inode and mtime noted at the
#    kill are unchanged at the end, no cuzkd met an existing final file), snarkjs
#    accepts every one; then the same with 3 fresh cuzkd and the database stopped
#    for 4 s mid-run instead.
#    A worker or cuzkd killed between a finish and its publish: the others adopt its
#    spooled proof once its heartbeat is 3 leases old, and `cuzk wait` returns only
#    once every proof file is in place.
# 5. a cuzkd killed between a finish and its publish, restarted under its instance:
#    its old leases back to the queue at once, the spooled proof published once.
# 6. a cuzkd killed between a finish and its publish and never started again: another
#    cuzkd (a fresh instance) finishes the job and publishes the dead one's proof,
#    once (before: the job was done with that proof missing).
# 7. the database stopped under a running cuzkd: status and /metrics say so.
# 8. --store-proofs: a job with no out dir on 2 cuzkd --store-proofs, one killed
#    with -9: every proof stored once, `cuzk fetch` writes them (never replacing or
#    following what is there), snarkjs verifies all.
# Also: cuzkd --queue on an unreachable database exits 3 naming the failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/daemon.sh"
daemon_init fleet
. "$here/../security/lib.sh"
. "$here/../lib/pg.sh"
FX="$FIXTURES/bn128/mulchain-10"
[ -f "$FX/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q >/dev/null
T="$BUILD/tests/test_fleet_pg"
[ -x "$T" ] || {
  echo "FAIL: $T is missing (make tests)"
  exit 1
}

# 0 needs no cluster: a port nobody listens on (bound and closed just now).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dead="postgresql://cuzk@127.0.0.1:$(free_port)/cuzk?connect_timeout=3"
set +e
out="$("$BUILD/bin/cuzk" status --queue "$dead" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 20 ] && [[ "$out" == *"cannot connect"* ]] || fail "unreachable queue: rc $rc: $out"
set +e
out="$("$BUILD/bin/cuzk" prove --queue "$dead" --zkey "$FX/circuit_final.zkey" --out "$tmp" "$FX/witness.wtns" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 20 ] || fail "prove to an unreachable queue: rc $rc: $out"
echo "ok: unreachable database: exit 20: $out"
set +e
out="$(timeout 60 "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state0" --foreground --devices cpu:1 --buffers 2 --buffer-mb 4 --queue "$dead" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 3 ] && [[ "$out" == *"cannot connect"* ]] || fail "cuzkd on an unreachable queue: rc $rc: $(echo "$out" | tail -n 3)"
echo "ok: cuzkd --queue on an unreachable database: exit 3"
set +e
out="$(timeout 60 "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state0" --foreground --devices cpu:1 --store-proofs 2>&1)"
rc=$?
set -e
[ "$rc" -eq 2 ] && [[ "$out" == *"--store-proofs"*"--queue"* ]] || fail "cuzkd --store-proofs without --queue: rc $rc: $(echo "$out" | tail -n 3)"
echo "ok: cuzkd --store-proofs without --queue: exit 2"

pg_cluster_start fleet_pg
sem="$(pg_url sem)"
echo "ok: cluster up ($("$bindir/postgres" --version), port $port)"

CUZK_TEST_PG_URL="$sem" "$T" || fail "lease semantics"

# The workers run as root (like cuzkd), the database as its own user.
mkdir -p "$tmp/in"
N=30
for i in $(seq 1 $N); do cp "$FX/witness.wtns" "$tmp/in/w$i.wtns"; done
# proofs_in DIR: how many proofs DIR holds.
proofs_in() { dir_count "$1" '[!.]*.proof.json'; }
# snarkjs_all WHAT DIR N: snarkjs verifies all N proofs in DIR (r: its summary).
snarkjs_all() {
  r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$FX/verification_key.json" "$2")" || fail "$1 snarkjs: $r"
  [ "$r" = "$3 verified" ] || fail "$1 snarkjs: $r"
}
round() { # name, disturbance (kill|dbstop)
  local name="$1" how="$2" out="$tmp/out-$1" log="$tmp/pub-$1" pids=() job k
  mkdir -p "$out"
  : >"$log"
  job="$("$BUILD/bin/cuzk" --json prove --queue "$url" --zkey "$FX/circuit_final.zkey" --out "$out" "$tmp"/in/w*.wtns | jq .job)"
  [ -n "$job" ] && [ "$job" != null ] || fail "submit: no job id"
  for k in 1 2 3; do
    crash=""
    [ "$how" = crash ] && [ "$k" = 1 ] && crash=3
    CUZK_TEST_PG_URL="$url" FLEET_PUBLISH_LOG="$log" FLEET_TEST_CRASH_AFTER_FINISH="$crash" \
      "$T" worker "$name-d$k" "$BUILD/bin/cuzk" >"$tmp/$name-d$k.log" 2>&1 &
    pids+=($!)
  done
  # Mid-run: once a third of the partitions are published (liveness deadline only).
  for _ in $(seq 1 600); do
    [ "$(wc -l <"$log")" -ge 10 ] && break
    sleep 0.1
  done
  if [ "$how" = crash ]; then
    wait "${pids[0]}" 2>/dev/null || true
    echo "ok: $name: $name-d1 died between its 3rd finish and its publish"
  elif [ "$how" = kill ]; then
    kill -KILL "${pids[0]}"
    wait "${pids[0]}" 2>/dev/null || true
    echo "ok: $name: killed $name-d1 with -9 after $(wc -l <"$log") publishes"
  else
    as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast stop >/dev/null
    sleep 4
    pgstart
    echo "ok: $name: database stopped for 4 s after $(wc -l <"$log") publishes"
  fi
  timeout 300 "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 240000 >/dev/null || fail "$name: job $job not done"
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # Each partition in the log (published by its worker, or adopted from a dead one's
  # spool dir, or only marked where the dead one had linked it), linked by one only.
  # (kill: the killed worker may have linked and marked its last partition and died
  # before its log line; one partition of the log may be missing then, its files are
  # counted below like every other's, and no other worker logged it: not published twice.)
  local want=$N
  [ "$how" = kill ] && [ "$(cut -d' ' -f1,2 "$log" | sort -u | wc -l)" -eq $((N - 1)) ] && want=$((N - 1))
  [ "$(cut -d' ' -f1,2 "$log" | sort -u | wc -l)" -eq $want ] || fail "$name: $(cut -d' ' -f1,2 "$log" | sort -u | wc -l) partitions published for $N: $(sort "$log" | tr '\n' ';')"
  # Files linked per partition: a worker's own publish links both (2), an adopter
  # says how many it linked ("N adopted": two adopters may each link one of the two).
  [ -z "$(awk '$NF == "marked" { next } { f[$1 " " $2] += ($NF == "adopted") ? $4 : 2 }
      END { for (p in f) if (f[p] > 2) print p }' "$log")" ] || fail "$name: a partition published twice: $(sort "$log" | tr '\n' ';')"
  ! grep -q EEXIST "$log" || fail "$name: a publish met an existing file"
  [ "$how" != crash ] || grep -q " adopted$" "$log" || fail "$name: the dead worker's proof was not adopted: $(sort "$log" | tr '\n' ';')"
  [ "$(proofs_in "$out")" -eq $N ] || fail "$name: $(proofs_in "$out") proofs"
  snarkjs_all "$name" "$out" $N
  echo "ok: $name: job $job: $N proofs, each published once ($(cut -d' ' -f3 "$log" | sort | uniq -c | tr -s ' ' | tr '\n' ','); $(grep -c ' adopted$' "$log" || true) adopted), snarkjs: $r"
}
round kill kill
round dbstop dbstop
round crash crash

# 4: real cuzkd. Each its own instance, run dir and state dir: 3 cuzkd (instances
# K0..K0+2), 30 partitions, and mid-run (a third published) one cuzkd killed with -9
# (kill) or the database stopped for 4 s (dbstop). Proofs published before that are
# noted (inode, mtime) and must be unchanged at the end.
cuzkd_round() { # name, how (kill|dbstop), K0
  local name="$1" how="$2" k0="$3" out="$tmp/out-$1" job k pids=()
  mkdir -p "$out"
  job="$("$BUILD/bin/cuzk" --json prove --queue "$url" --zkey "$FX/circuit_final.zkey" --out "$out" "$tmp"/in/w*.wtns | jq .job)"
  for k in $(seq "$k0" $((k0 + 2))); do
    "$BUILD/bin/cuzkd" --instance "$inst-$k" --run-dir "$tmp/run$k" --state-dir "$tmp/state$k" --foreground \
      --devices cpu:1 --buffers 2 --buffer-mb 4 --queue "$url" --queue-lease 3 >"$tmp/cuzkd$k.log" 2>&1 &
    pids+=($!)
  done
  daemon_on_exit="for p in ${pids[*]}; do kill -KILL \$p 2>/dev/null || true; done; rm -f /dev/shm/cuzk-$inst-*; ${daemon_on_exit}"
  for _ in $(seq 1 1200); do
    [ "$(proofs_in "$out")" -ge 10 ] && break
    sleep 0.1
  done
  if [ "$how" = kill ]; then
    kill -KILL "${pids[0]}"
    wait "${pids[0]}" 2>/dev/null || true
    pids=("${pids[@]:1}")
    sleep 0.5
  else
    as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast stop >/dev/null
  fi
  for f in "$out"/*.json; do echo "$f $(stat -c '%i %.9Y' "$f")"; done >"$tmp/noted-$name"
  if [ "$how" = dbstop ]; then
    sleep 4
    pgstart
    echo "ok: $name: database stopped for 4 s under 3 cuzkd after $(grep -c proof "$tmp/noted-$name") proofs"
  else
    echo "ok: $name: killed cuzkd $k0 with -9 after $(grep -c proof "$tmp/noted-$name") proofs"
  fi
  timeout 300 "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 240000 >/dev/null || {
    tail -n 20 "$tmp"/cuzkd*.log
    fail "$name: job $job not done"
  }
  [ "$(proofs_in "$out")" -eq $N ] || fail "$name: $(proofs_in "$out") proofs"
  while read -r f ino mt; do
    [ "$(stat -c '%i %.9Y' "$f")" = "$ino $mt" ] || fail "$name: $f was published again"
  done <"$tmp/noted-$name"
  for k in $(seq "$k0" $((k0 + 2))); do
    ! grep -q "existed already" "$tmp/cuzkd$k.log" || fail "$name: a publish met an existing file"
  done
  # (each daemon's fleet thread calls the database at least every lease/3 = 1 s)
  [ "$how" != dbstop ] || [ "$(cat "$tmp/cuzkd$k0.log" "$tmp/cuzkd$((k0 + 1)).log" "$tmp/cuzkd$((k0 + 2)).log" | grep -c "database reachable again")" -ge 1 ] ||
    fail "$name: no cuzkd saw the database go and come back"
  snarkjs_all "$name" "$out" $N
  echo "ok: $name: job $job: $N proofs, none rewritten after the $how, snarkjs: $r"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
cuzkd_round cuzkd kill 1
cuzkd_round cuzkd-dbstop dbstop 4

st="$("$BUILD/bin/cuzk" status --queue "$url")"
echo "$st" | jq -e '.daemons | length == 15' >/dev/null || fail "status: $st"
echo "$st" | jq -e '.parts.done == 150 and .parts.unpublished == 0 and .parts.queued == 0 and .parts.leased == 0' >/dev/null || fail "status: $st"
echo "ok: status --queue: $(echo "$st" | jq -c '[.daemons[] | {id, done}]')"

# A job of M=6 partitions into $out ($tmp/out-PART, its id in job), then a cuzkd
# (instance $inst-X, lease LEASE s; its options in cfg) started with the hook that
# kills it between its first finish and its publish (log $tmp/cuzkd-X1.log): it must
# die there (137), leaving a spooled proof in $out/.cuzk-*-$inst-X/ and no final one.
# Sets out, M, job, cfg, spooled (the spooled proofs).
# first_witnesses M: M and wtns, the first M witnesses of $tmp/in (w1.wtns ...)
first_witnesses() {
  local i
  M="$1"
  wtns=()
  for i in $(seq 1 "$M"); do wtns+=("$tmp/in/w$i.wtns"); done
}
crash_at_finish() {
  local part="$1" x="$2" lease="$3" rc wtns # first_witnesses fills this wtns
  out="$tmp/out-$part"
  mkdir -p "$out"
  first_witnesses 6
  job="$("$BUILD/bin/cuzk" --json prove --queue "$url" --zkey "$FX/circuit_final.zkey" --out "$out" \
    "${wtns[@]}" | jq .job)"
  cfg=(--instance "$inst-$x" --run-dir "$tmp/run$x" --state-dir "$tmp/state$x" --foreground --devices cpu:1
    --buffers 2 --buffer-mb 4 --queue "$url" --queue-lease "$lease" --queue-parallel 2)
  set +e
  CUZK_TEST_FLEET_CRASH_AFTER_FINISH=1 timeout 120 "$BUILD/bin/cuzkd" "${cfg[@]}" >"$tmp/cuzkd-${x}1.log" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 137 ] || {
    tail -n 20 "$tmp/cuzkd-${x}1.log"
    fail "$part: cuzkd did not die at the hook (rc $rc)"
  }
  spooled=("$out"/.cuzk-*-"$inst-$x"/*.proof.json)
  [ -f "${spooled[0]}" ] && [ "$(proofs_in "$out")" -eq 0 ] ||
    fail "$part: want a spooled proof and no final one after the crash: $(find "$out" -mindepth 1 -maxdepth 2 -printf '%P ')"
}

# 5: a cuzkd killed between a finish and its publish (the test hook kills it there as
# a power loss would), then started again under the same instance: the previous run's
# leases go back to the queue at once (a 60 s lease: waiting for them to expire would
# outlast the 45 s wait below; before, the new run's heartbeat renewed them forever),
# and the proof it finished but had not published is published, once.
crash_at_finish restart r 60
"$BUILD/bin/cuzkd" "${cfg[@]}" >"$tmp/cuzkd-r2.log" 2>&1 &
rpid=$!
daemon_on_exit="kill -KILL $rpid 2>/dev/null || true; rm -f /dev/shm/cuzk-$inst-r*; ${daemon_on_exit}"
timeout 120 "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 45000 >/dev/null ||
  {
    tail -n 20 "$tmp/cuzkd-r2.log"
    fail "restart: job $job not done: $("$BUILD/bin/cuzk" status --queue "$url" | jq -c .parts)"
  }
kill -TERM "$rpid"
wait "$rpid" 2>/dev/null || true
grep -q "published 1 proofs finished before a restart" "$tmp/cuzkd-r2.log" ||
  {
    tail -n 20 "$tmp/cuzkd-r2.log"
    fail "restart: the spooled proof was not published by the new run"
  }
grep -q "leases of a previous run back" "$tmp/cuzkd-r2.log" || fail "restart: no previous lease given back"
! grep -q "existed already" "$tmp/cuzkd-r2.log" || fail "restart: a publish met an existing file"
[ "$(proofs_in "$out")" -eq "$M" ] || fail "restart: $(proofs_in "$out") proofs"
[ -z "$(ls "$out"/.cuzk-* 2>/dev/null)" ] || fail "restart: spooled files left: $(ls "$out"/.cuzk-*)"
snarkjs_all "restart" "$out" "$M"
echo "ok: restart: killed between a finish and its publish, restarted: $M proofs, the spooled one published once, snarkjs: $r"

# 6: a cuzkd killed between a finish and its publish (the hook), never started again:
# its partition stays done and unpublished, the job running. Another cuzkd (instance
# B, lease 3) proves the rest and adopts the dead one's spooled proof once its
# heartbeat is 3 leases old: every proof published once. Before, `cuzk wait` returned
# with that proof missing (the CI failure "cuzkd: 29 proofs").
crash_at_finish adopt a 3
dead="$(basename "$(dirname "${spooled[0]}")")"
dead="${dead#.cuzk-}"
"$BUILD/bin/cuzkd" --instance "$inst-b" --run-dir "$tmp/runb" --state-dir "$tmp/stateb" --foreground \
  --devices cpu:1 --buffers 2 --buffer-mb 4 --queue "$url" --queue-lease 3 >"$tmp/cuzkd-b.log" 2>&1 &
bpid=$!
daemon_on_exit="kill -KILL $bpid 2>/dev/null || true; rm -f /dev/shm/cuzk-$inst-b*; ${daemon_on_exit}"
timeout 120 "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 90000 >/dev/null ||
  {
    tail -n 20 "$tmp/cuzkd-b.log"
    fail "adopt: job $job not done: $("$BUILD/bin/cuzk" status --queue "$url" | jq -c .parts)"
  }
[ "$(proofs_in "$out")" -eq "$M" ] || fail "adopt: $(proofs_in "$out") proofs for $M"
# Once: nothing is published again while B goes on adopting (two more rounds).
for f in "$out"/*.json; do echo "$f $(stat -c '%i %.9Y' "$f")"; done >"$tmp/noted-a"
sleep 7
while read -r f ino mt; do
  [ "$(stat -c '%i %.9Y' "$f")" = "$ino $mt" ] || fail "adopt: $f was published again"
done <"$tmp/noted-a"
kill -TERM "$bpid"
wait "$bpid" 2>/dev/null || true
# (A's other partition may have left spooled files too, finished by nobody: stale.)
adopted="$(grep -c "published .* (job $job part [0-9]*) that $dead finished" "$tmp/cuzkd-b.log" || true)"
[ "$adopted" -eq 1 ] || {
  tail -n 20 "$tmp/cuzkd-b.log"
  fail "adopt: B said it published $adopted of $dead's proofs (want 1)"
}
dead_name="$(sed -n "s/.*published \([^ ]*\) (job $job part [0-9]*) that $dead finished.*/\1/p" "$tmp/cuzkd-b.log")"
! grep -q "existed already" "$tmp/cuzkd-b.log" || fail "adopt: a publish met an existing file"
[ ! -e "$out/.cuzk-$dead/$dead_name.proof.json" ] && [ ! -e "$out/.cuzk-$dead/$dead_name.public.json" ] ||
  fail "adopt: the adopted proof is still spooled: $(ls "$out/.cuzk-$dead")"
st="$("$BUILD/bin/cuzk" status --queue "$url")"
echo "$st" | jq -e '.parts.unpublished == 0 and .parts.queued == 0 and .parts.leased == 0' >/dev/null || fail "adopt: status: $st"
snarkjs_all "adopt" "$out" "$M"
echo "ok: adopt: cuzkd A died between a finish and its publish, never back; B published its $dead_name once: $M proofs, snarkjs: $r"

# 7: the database lost under a real cuzkd, as its operator sees it: while PostgreSQL is
# stopped, `cuzk status --json` says "db_reachable": false with db_errors counted and
# /metrics says cuzk_fleet_db_reachable 0; once it is back, reachable again with a
# reconnect counted, and the job finishes: every proof once, snarkjs verifies all.
out="$tmp/out-health"
mkdir -p "$out"
first_witnesses 6
job="$("$BUILD/bin/cuzk" --json prove --queue "$url" --zkey "$FX/circuit_final.zkey" --out "$out" \
  "${wtns[@]}" | jq .job)"
mport="$(free_port)"
"$BUILD/bin/cuzkd" --instance "$inst-h" --run-dir "$tmp/runh" --state-dir "$tmp/stateh" --foreground \
  --devices cpu:1 --buffers 2 --buffer-mb 4 --queue "$url" --queue-lease 3 \
  --metrics-listen "127.0.0.1:$mport" >"$tmp/cuzkd-h.log" 2>&1 &
hpid=$!
daemon_on_exit="kill -KILL $hpid 2>/dev/null || true; rm -f /dev/shm/cuzk-$inst-h*; ${daemon_on_exit}"
hstat() { "$BUILD/bin/cuzk" --instance "$inst-h" --run-dir "$tmp/runh" --json status 2>/dev/null | jq -c '.fleet // empty'; }
hmet() { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
  "http://127.0.0.1:$mport/metrics" | sed -n 's/^cuzk_fleet_db_reachable{[^}]*} //p'; }
# health_until JQ: h = cuzkd-h's fleet status, read again every 0.1 s until JQ holds of it
# (a liveness bound of 30 s; the caller checks h)
health_until() {
  local _
  for _ in $(seq 1 300); do
    h="$(hstat)"
    echo "$h" | jq -e "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
}
for _ in $(seq 1 600); do
  [ "$(proofs_in "$out")" -ge 1 ] && break
  sleep 0.1
done
h="$(hstat)"
echo "$h" | jq -e '.db_reachable == true and .db_errors == 0' >/dev/null || fail "health: before the stop: $h"
as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast stop >/dev/null
# (liveness deadline only: the fleet thread's next call, a renew every lease/3 = 1 s)
health_until '.db_reachable == false'
echo "$h" | jq -e '.db_reachable == false and .db_errors >= 1' >/dev/null ||
  {
    pgstart
    fail "health: status while the database is down: $h"
  }
m="$(hmet)"
[ "$m" = 0 ] || {
  pgstart
  fail "health: cuzk_fleet_db_reachable while the database is down: '$m'"
}
pgstart
health_until '.db_reachable == true'
echo "$h" | jq -e '.db_reachable == true and .reconnects >= 1 and .db_errors >= 1' >/dev/null ||
  fail "health: status after the database came back: $h"
timeout 180 "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 150000 >/dev/null ||
  {
    tail -n 20 "$tmp/cuzkd-h.log"
    fail "health: job $job not done after the database came back"
  }
m="$(hmet)"
[ "$m" = 1 ] || fail "health: cuzk_fleet_db_reachable after: '$m'"
kill -TERM "$hpid"
wait "$hpid" 2>/dev/null || true
[ "$(proofs_in "$out")" -eq "$M" ] || fail "health: $(proofs_in "$out") proofs for $M"
! grep -q "existed already" "$tmp/cuzkd-h.log" || fail "health: a publish met an existing file"
snarkjs_all "health" "$out" "$M"
echo "ok: health: database stopped under a running cuzkd: status and /metrics said unreachable, then $h; $M proofs, snarkjs: $r"

# 8: --store-proofs, for a submitter with no shared file system for its outputs: a job
# with no out dir, 2 cuzkd --store-proofs (each proves into its own private dir under
# its run dir and stores the proof and public JSON by its lease-checked finish), one
# killed with -9 mid-run. `cuzk wait` sees the job done; `cuzk fetch` writes every
# proof into a fresh dir, snarkjs verifies all; the two daemons' finishes add up to
# M (none finished twice); a second fetch changes nothing; a fetch never replaces a
# file or follows a link already at a final name.
out="$tmp/out-stored"
mkdir -p "$out"
first_witnesses 12
job="$("$BUILD/bin/cuzk" --json prove --queue "$url" --store-proofs --zkey "$FX/circuit_final.zkey" \
  "${wtns[@]}" | jq .job)"
[ -n "$job" ] && [ "$job" != null ] || fail "stored: submit: no job id"
set +e
o="$("$BUILD/bin/cuzk" prove --queue "$url" --zkey "$FX/circuit_final.zkey" "$tmp/in/w1.wtns" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "stored: a submit with neither --out nor --store-proofs: rc $rc: $o"
spids=()
# s1 on the command line, s2 from an INI file (the key store-proofs).
printf 'queue = %s\nqueue-lease = 3\nstore-proofs\n' "$url" >"$tmp/s2.conf"
for k in 1 2; do
  sopts=(--queue "$url" --queue-lease 3 --store-proofs)
  [ $k = 2 ] && sopts=(--config "$tmp/s2.conf")
  "$BUILD/bin/cuzkd" --instance "$inst-s$k" --run-dir "$tmp/runs$k" --state-dir "$tmp/states$k" --foreground \
    --devices cpu:1 --buffers 2 --buffer-mb 4 "${sopts[@]}" >"$tmp/cuzkd-s$k.log" 2>&1 &
  spids+=($!)
done
daemon_on_exit="for p in ${spids[*]}; do kill -KILL \$p 2>/dev/null || true; done; rm -f /dev/shm/cuzk-$inst-s*; ${daemon_on_exit}"
stored() { "$BUILD/bin/cuzk" status --queue "$url" | jq .parts.stored; }
# (liveness deadline only) Mid-run: a sixth of the proofs stored.
for _ in $(seq 1 1200); do
  [ "$(stored)" -ge 2 ] && break
  sleep 0.1
done
kill -KILL "${spids[0]}"
wait "${spids[0]}" 2>/dev/null || true
echo "ok: stored: killed cuzkd s1 with -9 after $(stored) stored proofs"
timeout 180 "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 150000 >/dev/null ||
  {
    tail -n 20 "$tmp"/cuzkd-s*.log
    fail "stored: job $job not done: $("$BUILD/bin/cuzk" status --queue "$url" | jq -c .parts)"
  }
kill -TERM "${spids[1]}"
wait "${spids[1]}" 2>/dev/null || true
st="$("$BUILD/bin/cuzk" status --queue "$url")"
echo "$st" | jq -e --argjson m "$M" '.parts.stored == $m and ([.daemons[] | select(.id | test("-s[12]$")) | .done] | add) == $m
  and ([.daemons[] | select(.id | test("-s[12]$")) | .store_proofs] | all)' >/dev/null ||
  fail "stored: want $M stored, finished once each by the two: $st"
pd="$tmp/runs2/fleet-$inst-s2.proofs"
[ "$(stat -c %a "$pd")" = 700 ] && [ -z "$(find "$pd" -name '*.json')" ] ||
  fail "stored: private dir $pd: mode $(stat -c %a "$pd"), left: $(find "$pd" -name '*.json' | tr '\n' ' ')"
[ "$(dir_count "$out")" -eq 0 ] || fail "stored: the fetch dir was written before the fetch"
f1="$("$BUILD/bin/cuzk" --json fetch "$job" --queue "$url" --out "$out")" || fail "stored: fetch: $f1"
echo "$f1" | jq -e --argjson m "$M" '.written == $m and .present == 0 and .errors == 0 and .finished' >/dev/null || fail "stored: fetch: $f1"
[ "$(proofs_in "$out")" -eq "$M" ] && [ "$(dir_count "$out" '[!.]*.public.json')" -eq "$M" ] &&
  [ "$(dir_count "$out")" -eq $((2 * M)) ] || fail "stored: fetched $(dir_list "$out" | tr '\n' ' ')"
snarkjs_all "stored" "$out" "$M"
for f in "$out"/*.json; do echo "$f $(stat -c '%i %.9Y' "$f")"; done >"$tmp/noted-s"
f2="$("$BUILD/bin/cuzk" --json fetch "$job" --queue "$url" --out "$out")" || fail "stored: second fetch: $f2"
echo "$f2" | jq -e --argjson m "$M" '.written == 0 and .present == $m' >/dev/null || fail "stored: second fetch: $f2"
while read -r f ino mt; do
  [ "$(stat -c '%i %.9Y' "$f")" = "$ino $mt" ] || fail "stored: $f rewritten by the second fetch"
done <"$tmp/noted-s"
# Not replaced, not followed: w1's proof there with other bytes, w2's public a link.
o2="$tmp/out-stored2"
mkdir -p "$o2"
echo "not a proof" >"$o2/w1.proof.json"
echo keep >"$tmp/target"
ln -s "$tmp/target" "$o2/w2.public.json"
set +e
f3="$("$BUILD/bin/cuzk" fetch "$job" --queue "$url" --out "$o2" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 9 ] && [[ "$f3" == *"w1.proof.json exists"* ]] && [[ "$f3" == *"w2.public.json exists"* ]] ||
  fail "stored: fetch over a file and a link: rc $rc: $f3"
[ "$(cat "$o2/w1.proof.json")" = "not a proof" ] && [ "$(cat "$tmp/target")" = keep ] && [ -L "$o2/w2.public.json" ] ||
  fail "stored: fetch replaced or followed what was there"
# (w2's proof is not written without its public file: the proof's name is what a
# reader waits for)
[ "$(proofs_in "$o2")" -eq $((M - 1)) ] && [ ! -e "$o2/w2.proof.json" ] &&
  [ "$(dir_count "$o2" '*cuzk-fetch*')" -eq 0 ] ||
  fail "stored: the other proofs not fetched, or temp files left: $(dir_list "$o2" | tr '\n' ' ')"
set +e
o="$("$BUILD/bin/cuzk" fetch 99999 --queue "$url" --out "$o2" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 21 ] && [[ "$o" == *"no job 99999"* ]] || fail "stored: fetch of no job: rc $rc: $o"
set +e
o="$("$BUILD/bin/cuzk" fetch "$job" --out "$o2" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 2 ] && [[ "$o" == *"--queue"* ]] || fail "stored: fetch without --queue: rc $rc: $o"
echo "ok: stored: no out dir, cuzkd s1 killed: $M proofs stored once, fetched, snarkjs: $r; a second fetch changed nothing; a file and a link at final names kept"
