#!/usr/bin/env bash
# The fleet without a shared file system: three cuzkd, each with --queue --store-proofs
# --listen (its cuzk-api in queue mode), on a real PostgreSQL cluster this test starts
# (a password asked, scram-sha-256). Each server lives in a mount namespace and a PID
# namespace of its own (unshare -m -p) with a private tmpfs at the SAME path holding
# all of its files (config, tokens, circuits dir with the zkey and the generator, run
# dir, state dir) and its own /dev/shm: no server can read another's files, and the
# test asserts that each namespace sees only its own (the host sees an empty mount
# point). The queue's password is in each server's 0600 config file only: no process
# has it on its command line (cuzkd hands it to its API child as a memfd).
#   - an array of 200 input.json objects POSTed with curl to server 0; while the
#     servers prove it, server 0 is frozen and killed with -9, all of its processes
#     at once (its PID namespace), holding leases; with --queue-lease 5 the others
#     take them over: each partition it held is finished by another server;
#   - then an array, a .wtns and an input.json POSTed to servers 1 and 2; the same
#     Idempotency-Key and body sent to ANOTHER server answers the same job, another
#     body with it 409; bob sees none of alice's jobs (404);
#   - every job is long-polled (?wait=) and every proof fetched through a surviving
#     server's API, and snarkjs verifies every one; a job cancelled on another server
#     than the one it was posted to is decided;
#   - the database stopped: 503 (store, Retry-After); started again: the APIs answer
#     on fresh connections, and a new job is proved, long-polled and verified;
#   - every answer is checked against docs/openapi.json.
# SKIP (77) without root, unshare's namespaces, tmpfs mounts or PostgreSQL.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
. "$ROOT/tests/security/lib.sh"
. "$ROOT/tests/lib/pg.sh"
daemon_init afleet
fail() {
  echo "FAIL: $*"
  for k in 0 1 2; do
    echo "--- server $k"
    tail -n 25 "$tmp/cuzkd$k.log" 2>/dev/null
  done
  exit 1
}
need_root "api_fleet needs root (mount namespaces, the cluster's user)"
command -v unshare >/dev/null && command -v nsenter >/dev/null || {
  echo "SKIP: unshare or nsenter missing"
  exit 77
}
pgrep --ns $$ --nslist pid -r R,S >/dev/null || {
  echo "SKIP: pgrep without --ns or -r (procps-ng 3.3.16 or later)"
  exit 77
}
mkdir -p "$tmp/probe"
unshare -m -p -f --propagation private --mount-proc --kill-child sh -c "mount -t tmpfs probe '$tmp/probe'" 2>"$tmp/probe.err" ||
  {
    echo "SKIP: no private mount and PID namespaces with a tmpfs here: $(head -c 200 "$tmp/probe.err")"
    exit 77
  }
api_init
pg_password="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
pg_cluster_start api_fleet
# The URL with the password, for the servers' config files only (the test's 0600 file).
(
  umask 077
  echo "postgresql://cuzk:$pg_password@/cuzk?host=$pg&port=$port" >"$tmp/queue.url"
)
api_tokens alice
api_tokens bob

# ---- three servers, each in its own namespaces ---------------------------------------
P="$tmp/priv" # the same path in every namespace: a private tmpfs there
mkdir -p "$P"
# server_main P K INSTANCE PORT BIN FX GEN TOKENS URLFILE: runs as PID 1 of the new
# namespaces: the private mounts, the server's files, then cuzkd (a child, so that this
# shell reaps what is orphaned in the namespace).
server_main() {
  set -e
  local P="$1" k="$2" inst="$3" port="$4" bin="$5" fx="$6" gen="$7" tokens="$8" urlfile="$9"
  mount -t tmpfs -o mode=0700,size=256m "cuzk-server-$k" "$P"
  mount -t tmpfs -o mode=1777,size=256m "cuzk-shm-$k" /dev/shm
  mkdir -p "$P/circuits/mul"
  mkdir -m 0700 "$P/run" "$P/state"
  cp "$fx/circuit_final.zkey" "$P/circuits/mul/circuit.zkey"
  cp "$fx/circuit.r1cs" "$P/circuits/mul/circuit.r1cs"
  cp "$gen" "$P/circuits/mul/circuit.wgen"
  cp "$tokens" "$P/tokens"
  echo "server $k" >"$P/whoami"
  (
    umask 077
    printf 'buffer-mb = 16\nlisten = 127.0.0.1:%s\napi-tokens = %s\ncircuits-dir = %s\nqueue = %s\nqueue-lease = 5\nstore-proofs\n' \
      "$port" "$P/tokens" "$P/circuits" "$(cat "$urlfile")" >"$P/cuzkd.conf"
  )
  "$bin/cuzkd" --config "$P/cuzkd.conf" --instance "$inst" --run-dir "$P/run" --state-dir "$P/state" \
    --wgen-dir "$P/circuits" --foreground --devices cpu:1 &
  wait $!
}
upid=() init=() ports=() bases=()
for k in 0 1 2; do
  ports[k]="$(free_port)"
  bases[k]="http://127.0.0.1:${ports[k]}"
  # --kill-child: the namespace's PID 1 (and with it every process there) dies with unshare.
  unshare -m -p -f --propagation private --mount-proc --kill-child \
    bash -c "$(declare -f server_main); server_main \"\$@\"" _ \
    "$P" "$k" "$inst-s$k" "${ports[k]}" "$BUILD/bin" "$FX" "$gen" "$tmp/tokens" "$tmp/queue.url" \
    >"$tmp/cuzkd$k.log" 2>&1 &
  upid[k]=$!
done
daemon_on_exit="for p in ${upid[*]}; do kill -KILL \$p 2>/dev/null || true; done; ${daemon_on_exit}"
for k in 0 1 2; do
  for _ in $(seq 1 100); do
    init[k]="$(pgrep -P "${upid[k]}" | head -n1 || true)"
    [ -n "${init[k]}" ] && break
    sleep 0.1
  done
  [ -n "${init[k]}" ] || fail "server $k: no namespace (see $tmp/cuzkd$k.log): $(tail -n 5 "$tmp/cuzkd$k.log")"
done
ready() { # K: /readyz answers 200 (stages up, mul resident)
  api_base="${bases[$1]}"
  for _ in $(seq 1 1200); do
    [ "$(http "ready$1" "" GET /readyz)" = 200 ] && return 0
    sleep 0.1
  done
  fail "server $1: not ready within 120 s"
}
for k in 0 1 2; do ready "$k"; done
echo "ok: 3 servers up, each in its own mount and PID namespace, APIs on ports ${ports[*]}"

# Each namespace sees its own files at $P and nobody else's; the host sees none.
[ -z "$(ls -A "$P")" ] || fail "the host sees files at $P: $(ls -A "$P")"
for k in 0 1 2; do
  seen="$(nsenter -t "${init[k]}" -m -- sh -c "cat '$P/whoami'; ls '$P/run'; ls -A '$P'")"
  grep -qx "server $k" <<<"$seen" || fail "namespace $k sees at $P: $seen"
  for j in 0 1 2; do
    [ "$j" = "$k" ] && continue
    ! grep -q -- "$inst-s$j" <<<"$seen" || fail "namespace $k sees server $j's files: $seen"
  done
  grep -q -- "$inst-s$k.sock" <<<"$seen" || fail "namespace $k: no socket of its own: $seen"
done
echo "ok: each namespace sees only its own files at $P (its whoami, its socket); the host sees an empty directory"
# The password: in no process's command line (cuzkd's, its stages', the APIs', psql's).
for c in /proc/[0-9]*/cmdline; do
  ! { tr '\0' ' ' <"$c"; } 2>/dev/null | grep -q -- "$pg_password" || fail "the queue password is on the command line of ${c%/cmdline}"
done
echo "ok: the queue's password is in no process's command line"

# ---- requests to different servers -----------------------------------------------------
on() { api_base="${bases[$1]}"; } # the server the next request goes to
arr() {                           # N SEED: an array of N input objects
  local i out="["
  for i in $(seq 1 "$1"); do
    out+="{\"x\":\"$((i + $2))\",\"k\":\"$((3 * i + 1))\"}"
    [ "$i" = "$1" ] || out+=","
  done
  echo "$out]"
}
# Enough partitions that the servers are busy for a while (a proof of this circuit
# takes a fraction of a second): server 0 is caught holding leases.
NA=200
on 0
# shellcheck disable=SC2154 # tok_alice, tok_bob: set by api_tokens (api.sh)
http a "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary "$(arr $NA 0)" >/dev/null
expect a 202

# ---- server 0 killed with -9 while it holds leases --------------------------------------
# To know which leases it held at its death, it is frozen first: every process of its
# PID namespace stopped (SIGSTOP, again until none runs: a stopped process forks no
# more), so none of its partitions can finish between the look and the kill. A look
# that finds none (between two claims) thaws it and looks again.
# (pgrep --ns: one look at the process table; a scan of /proc from the shell took
# seconds on a loaded machine, longer than the lease it was racing.)
ns_pids() { pgrep --ns "$1" --nslist pid "${@:2}" || true; } # PID [OPTS]: PID's namespace's
freeze() {                                                   # PID: until every process of its namespace is stopped
  local p=()
  while mapfile -t p < <(ns_pids "$1" -r R,S,D,I) && [ ${#p[@]} -gt 0 ]; do kill -STOP "${p[@]}" 2>/dev/null || true; done
}
thaw() {
  local p=()
  mapfile -t p < <(ns_pids "$1")
  [ ${#p[@]} -eq 0 ] || kill -CONT "${p[@]}" 2>/dev/null || true
}
owner0="%-$inst-s0"
held=""
for _ in $( # (a liveness bound: it claims as soon as there is work)
  seq 1 1200
); do
  if [ -n "$(psql_q "SELECT 1 FROM cuzk_parts WHERE state = 'leased' AND owner LIKE '$owner0' LIMIT 1")" ]; then
    freeze "${init[0]}"
    held="$(psql_q "SELECT job || ':' || idx || ':' || lease_gen FROM cuzk_parts WHERE state = 'leased' AND owner LIKE '$owner0'")"
    [ -n "$held" ] && break
    thaw "${init[0]}"
  fi
  sleep 0.1
done
[ -n "$held" ] || fail "server 0 never held a lease"
kill -KILL "${init[0]}" # PID 1 of its namespace: every process there dies with it
wait "${upid[0]}" 2>/dev/null || true
for _ in $(seq 1 100); do
  [ -z "$(ns_pids "${init[0]}" 2>/dev/null)" ] && break
  sleep 0.1
done
[ ! -e "/proc/${init[0]}" ] || fail "server 0's namespace survived"
[ -z "$(pgrep -f -- "--instance $inst-s0" || true)" ] || fail "a process of server 0 survived: $(pgrep -af -- "--instance $inst-s0")"
ja="$(jfield a r.job)"
[ "$(jfield a r.partitions)" = $NA ] && grep -qi "^location: /v1/jobs/$ja" "$tmp/http/a.head" || fail "a: $(cat "$tmp/http/a.body")"
echo "ok: POSTed an array of $NA inputs to server 0 (job $ja); killed server 0 (its PID namespace) with -9 while it held $(echo "$held" | wc -l) lease(s) (job:part:generation): $(echo "$held" | tr '\n' ' ')"

on 1
http b "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: fleet-b' \
  --data-binary "$(arr 4 100)" >/dev/null
expect b 202
on 2
http c "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/octet-stream' \
  --data-binary @"$FX/witness.wtns" >/dev/null
expect c 202
on 2
http d "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  -H 'Cuzk-Metadata: {"order":"fleet-17","n":2}' --data-binary @"$FX/input.json" >/dev/null
expect d 202
[ "$(jfield d 'JSON.stringify(r.metadata)')" = '{"order":"fleet-17","n":2}' ] || fail "d's answer without its metadata: $(cat "$tmp/http/d.body")"
jb="$(jfield b r.job)" jc="$(jfield c r.job)" jd="$(jfield d r.job)"
echo "ok: POSTed after the kill: an array of 4 to server 1 (job $jb), a .wtns (job $jc) and an input.json (job $jd) to server 2"
# The same key and body on ANOTHER server: the same job; another body: 409.
on 2
http b2 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: fleet-b' \
  --data-binary "$(arr 4 100)" >/dev/null
expect b2 202
[ "$(jfield b2 r.job)" = "$jb" ] && [ "$(jfield b2 r.existing)" = true ] || fail "same key on server 2: $(cat "$tmp/http/b2.body")"
on 1
http b3 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: fleet-b' \
  --data-binary "$(arr 4 200)" >/dev/null
expect b3 409 refused
[ "$(jfield b3 r.code)" = idempotency_conflict ] || fail "409 code: $(cat "$tmp/http/b3.body")"
echo "ok: Idempotency-Key posted to server 1 and again to server 2: the same job $jb (existing); another body on server 1: 409"
# A missing signal is the request's 422 in queue mode too: nothing enters the queue.
njobs="$(psql_q "SELECT count(*) FROM cuzk_jobs")"
on 1
http m "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '{"x":"3"}' >/dev/null
expect m 422 mismatch
[ "$(jfield m r.code)" = missing_signal ] && [ "$(jfield m r.signal)" = k ] || fail "missing signal: $(cat "$tmp/http/m.body")"
[ "$(psql_q "SELECT count(*) FROM cuzk_jobs")" = "$njobs" ] || fail "a refused body entered the queue"
echo "ok: an input without its signal k: 422 mismatch naming it, no row written"

# ---- every job from a surviving server, every proof verified -----------------------------
on 1
# shellcheck disable=SC2154
http bob "$tok_bob" GET "/v1/jobs/$ja" >/dev/null
expect bob 404 refused
http bobp "$tok_bob" GET "/v1/jobs/$ja/proofs/0" >/dev/null
expect bobp 404 refused
echo "ok: bob gets 404 for alice's job on server 1"
i=0
for j in "$ja" "$jb" "$jc" "$jd"; do
  on $((1 + i % 2))
  i=$((i + 1))
  http "w$j" "$tok_alice" GET "/v1/jobs/$j?wait=300" >/dev/null
  expect "w$j" 200
  [ "$(jfield "w$j" r.state)" = "done" ] || fail "job $j: $(cat "$tmp/http/w$j.body")"
done
echo "ok: every job done, long-polled on servers 1 and 2"
# The list, from any server: alice's 4 jobs newest first in pages of 3 (one query a
# page), bob's none; metadata stored in the queue's table; attempts from its claims:
# 1 for a partition proved once, 2 for one server 0 held when it was killed.
on 1
http l1 "$tok_alice" GET '/v1/jobs?limit=3&state=done' >/dev/null
expect l1 200
[ "$(jfield l1 'r.jobs.length + " " + r.next')" = "3 /v1/jobs?limit=3&state=done&cursor=$(jfield l1 r.next_cursor)" ] ||
  fail "list page 1: $(cat "$tmp/http/l1.body")"
on 2
http l2 "$tok_alice" GET "$(jfield l1 r.next)" >/dev/null
expect l2 200
[ "$(jfield l1 'r.jobs.map(j => j.job).join(" ")') $(jfield l2 'r.jobs.map(j => j.job).join(" ")')" = \
  "$(printf '%s\n' "$ja" "$jb" "$jc" "$jd" | sort -rn | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "alice's list: $(cat "$tmp/http/l1.body") $(cat "$tmp/http/l2.body")"
[ "$(jfield l2 'r.next === undefined')" = true ] || fail "the last page has a next"
[ "$(jfield l1 "JSON.stringify(r.jobs.find(j => j.job == $jd).metadata)")" = '{"order":"fleet-17","n":2}' ] ||
  fail "d's metadata in the list: $(cat "$tmp/http/l1.body")"
http lbob "$tok_bob" GET /v1/jobs >/dev/null
expect lbob 200
[ "$(jfield lbob 'r.jobs.length')" = 0 ] || fail "bob lists alice's jobs: $(cat "$tmp/http/lbob.body")"
http lbad "$tok_alice" GET '/v1/jobs?cursor=x!' >/dev/null
expect lbad 400 usage
[ "$(jfield "w$jd" 'r.metadata.order + " " + r.parts.map(p => p.attempts).join()')" = "fleet-17 1" ] ||
  fail "job $jd: $(cat "$tmp/http/w$jd.body")"
while IFS=: read -r j x _; do
  [ "$(jfield "w$j" "r.parts[$x].attempts")" = 2 ] || fail "job $j partition $x, taken over from server 0: $(jfield "w$j" "JSON.stringify(r.parts[$x])")"
done <<<"$held"
echo "ok: alice's 4 jobs listed newest first in pages of 3 on servers 1 and 2, bob none; metadata kept in the queue; attempts 1, and 2 where server 0 was killed"
while IFS=: read -r j x g; do
  by="$(psql_q "SELECT done_by || ' ' || lease_gen FROM cuzk_parts WHERE job = $j AND idx = $x AND state = 'done'")"
  [ -n "$by" ] && [[ "${by% *}" != *"-$inst-s0" ]] && [ "${by#* }" -gt "$g" ] ||
    fail "job $j part $x, leased by server 0 at generation $g at the kill: done by '$by'"
done <<<"$held"
echo "ok: the partitions server 0 held were finished by $(while IFS=: read -r j x _; do psql_q "SELECT done_by FROM cuzk_parts WHERE job = $j AND idx = $x"; done <<<"$held" | sed 's/.*-s/server /' | sort | uniq -c | awk '{printf "%s%s %s (%s)", c, $2, $3, $1; c = ", "}')"
i=0 total=0
mkdir -p "$tmp/proofs"
for j in "$ja" "$jb" "$jc" "$jd"; do
  parts="$(jfield "w$j" r.partitions)"
  for k in $(seq 0 $((parts - 1))); do
    on $((1 + i % 2))
    i=$((i + 1))
    st="$(http "p$j-$k" "$tok_alice" GET "/v1/jobs/$j/proofs/$k")"
    [ "$st" = 200 ] || fail "proof $k of job $j: $st $(head -c 300 "$tmp/http/p$j-$k.body")"
    total=$((total + 1))
  done
done
[ "$total" -eq $((NA + 6)) ] || fail "$total proofs fetched, want $((NA + 6))"
# Each answer's proof and publicSignals as snarkjs's files, all verified by one node.
# shellcheck disable=SC2016 # JavaScript's ${}
node -e 'const fs = require("fs"), [dir, out] = process.argv.slice(1);
  for (const f of fs.readdirSync(dir).filter((f) => /^p[0-9]+-[0-9]+[.]body$/.test(f))) {
    const r = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")), b = f.slice(1, -5);
    fs.writeFileSync(`${out}/${b}.proof.json`, JSON.stringify(r.proof));
    fs.writeFileSync(`${out}/${b}.public.json`, JSON.stringify(r.publicSignals));
  }' "$tmp/http" "$tmp/proofs"
r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$VK" "$tmp/proofs")" || fail "snarkjs: $r"
[ "$r" = "$total verified" ] || fail "snarkjs: $r (want $total verified)"
n=$total
# The .wtns is the fixture's witness, of the fixture's input.json (job d): one statement.
cmp -s "$tmp/proofs/$jc-0.public.json" "$tmp/proofs/$jd-0.public.json" ||
  fail "the .wtns job and the fixture's input.json prove different statements"
echo "ok: $n proofs fetched through servers 1 and 2, snarkjs: $r"
# A page of a job's proofs is one query of the queue: job b's 4 in one answer, each
# verified by snarkjs.
on 2
http bpage "$tok_alice" GET "/v1/jobs/$jb/proofs" >/dev/null
expect bpage 200
[ "$(jfield bpage 'r.proofs.map(p => p.k + ":" + p.verified).join()')" = "0:true,1:true,2:true,3:true" ] ||
  fail "job $jb's proofs page: $(head -c 300 "$tmp/http/bpage.body")"
for k in 0 1 2 3; do
  jfield bpage "JSON.stringify(r.proofs[$k])" >"$tmp/http/bpage$k.body"
  verify_proof "bpage$k"
done
echo "ok: job $jb's 4 proofs in one page from server 2, verified by snarkjs"

# ---- cancel on another server, the doorbell across servers --------------------------------
# A long poll on server 1 while server 2 cancels: the job's end (its NOTIFY) wakes it.
on 1
http e "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary "$(arr 6 300)" >/dev/null
expect e 202
je="$(jfield e r.job)"
(
  on 1
  http ew "$tok_alice" GET "/v1/jobs/$je?wait=300" >/dev/null
) &
wpid=$!
on 2
http ed "$tok_alice" DELETE "/v1/jobs/$je" >/dev/null
expect ed 200
wait "$wpid"
expect ew 200
[ "$(jfield ew r.state)" != running ] || fail "cancelled job still running: $(cat "$tmp/http/ew.body")"
echo "ok: posted to server 1, cancelled on server 2, long-polled on server 1: $(jfield ew 'r.state + " (" + (r.reason || "") + ")"')"

# ---- the database restarted under the servers --------------------------------------------
# While it is down: 503 with Retry-After, naming nothing of the fleet's hosts. Once it
# is back: the APIs' pools open fresh connections, a job posted then is proved (the
# daemons reconnect) and its long poll woken (the doorbell listens again).
on 1
http rz1 "" GET /readyz >/dev/null
expect rz1 200
as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast stop >/dev/null
# /readyz answers from a state refreshed at most once a second (no control connection
# or database round trip per request): it turns 503 on a refresh after the stop (a
# liveness bound, 30 s; no time is asserted)
# (each look under its own name: the answers are checked against the spec afterwards)
for i in $(seq 1 300); do
  rz2="rz2_$i"
  [ "$(http "$rz2" "" GET /readyz)" = 503 ] && break
  sleep 0.1
done
expect "$rz2" 503 refused
grep -q "database" "$tmp/http/$rz2.body" || fail "readyz with the database down: $(cat "$tmp/http/$rz2.body")"
on 1
http dbdown "$tok_alice" GET "/v1/jobs/$ja" >/dev/null
expect dbdown 503 internal
grep -qi '^retry-after:' "$tmp/http/dbdown.head" || fail "503 without Retry-After"
! grep -q -- "$pg" "$tmp/http/dbdown.body" || fail "the 503 names the database: $(cat "$tmp/http/dbdown.body")"
pgstart
on 2
http dbup "$tok_alice" GET "/v1/jobs/$ja" >/dev/null
expect dbup 200
on 1
for i in $(seq 1 300); do
  rz3="rz3_$i"
  [ "$(http "$rz3" "" GET /readyz)" = 200 ] && break
  sleep 0.1
done
expect "$rz3" 200
on 1
http f "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '{"x":"17","k":"4"}' >/dev/null
expect f 202
on 2
http fw "$tok_alice" GET "/v1/jobs/$(jfield f r.job)?wait=300" >/dev/null
expect fw 200
[ "$(jfield fw r.state)" = "done" ] || fail "job after the restart: $(cat "$tmp/http/fw.body")"
on 1
fetch_proof fp "$tok_alice" "/v1/jobs/$(jfield f r.job)/proofs/0"
echo "ok: the database stopped: 503 store with Retry-After, /readyz 503; started again: ready, answered, a new job proved and verified"

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
echo "ok: every answer ($(wc -l <"$tmp/http/index")) matches docs/openapi.json"
for k in 1 2; do kill -TERM "$(pgrep -P "${init[k]}" -x cuzkd)" 2>/dev/null || true; done
for k in 1 2; do wait "${upid[k]}" 2>/dev/null || true; done
echo "PASS: api_fleet ($n proofs verified by snarkjs)"
