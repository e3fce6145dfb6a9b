#!/usr/bin/env bash
# The job store (SQLite), with a real store file:
# 1. kill -9 of cuzkd at a random moment of a 20-partition job (mulchain-10), restart
#    on the same store, five times over: the job is resumed under its id (status says
#    so), all 20 proofs are there, each written once, and snarkjs accepts every one.
#    "Once": after each kill (cuzkd and its stages dead, so nothing can write) the
#    inode and nanosecond mtime of every proof and public file are noted; a partition
#    proved again would have been published anew (temp file + rename: a new inode and
#    mtime), so every noted pair must be unchanged at the end. The submitter ran with
#    --wait and died with the first cuzkd: the job is finished all the same.
#    Then a proof of another witness planted under a partition's name is not taken
#    for that partition's on resume (its public signals are checked).
# 1c. Resume with descriptors: jobs resume from cuzkd's durable copies (0700 dir, 0600
#    files, a zkey copy shared) though the client's files were overwritten after the
#    kill; a job whose out dir was replaced under its path fails "out dir changed since
#    submit" and nothing is written there; no copy is left once the jobs are decided.
# 2. A store file that is not SQLite, one that fails its integrity check and one of a
#    newer schema version are refused at start (exit 3, a message naming the file),
#    and each is left byte for byte as it was, with no -wal or -shm file beside it;
#    a state directory others can write to is refused too.
# 2b. --store-keep-days: decided jobs older than that leave the store (not the newest).
# 3. A full disk under the store: the submit fails with error "store" naming the
#    full disk and nothing is half-accepted (no job in status, nothing written to its
#    out dir, no row in the store that a restart would resume); with room again,
#    submits work.
#    (Needs root for a small tmpfs; that part prints "skip" without it.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/daemon.sh"
daemon_init store
FX="$FIXTURES/bn128/mulchain-10"
[ -f "$FX/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q >/dev/null
N=20 KILLS=5
state="$tmp/state"
mnt=""
# shellcheck disable=SC2016 # run at exit, with the mount then
daemon_on_exit='[ -z "$mnt" ] || umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true'
OPTS=(--devices cpu:1 --buffers 4 --buffer-mb 4 --test-finalizer-delay-ms 250)
sq() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str,r)) for r in c.execute(sys.argv[2])))' "$@"; }
answering() { daemon_answers "$tmp/cuzkd.log"; }
stages_gone() { wait_until 250 no_instance_process || fail "stages still running after cuzkd was killed"; }
snapshot() {
  local f
  for f in "$tmp/out"/*.json; do [ -e "$f" ] && stat -c '%n %i %.9Y' "$f"; done
  return 0
}

# ---- 1. kill -9 at random moments, restart, five times ---------------------------------
mkdir -p "$tmp/in" "$tmp/out"
for i in $(seq 1 "$N"); do cp "$FX/witness.wtns" "$tmp/in/w$i.wtns"; done
daemon_start "${OPTS[@]}"
answering
cuzk prove --wait --zkey "$FX/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns \
  >"$tmp/waiter.out" 2>&1 &
waiter=$!
for _ in $(seq 1 100); do
  [ "$(cuzk --json status | jq '.jobs | length')" -ge 1 ] && break
  sleep 0.05
done
id="$(cuzk --json status | jq '.jobs[0].id')"
[ "$id" != null ] || fail "the job does not show in status"
: >"$tmp/noted"
for k in $(seq 1 "$KILLS"); do
  sleep "$(awk -v r="$RANDOM" 'BEGIN{printf "%.2f", 0.05 + (r % 40) / 100}')"
  d="$(cuzk --json status "$id" | jq .job.done)" || d="?"
  kill -KILL "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=""
  stages_gone
  snapshot >>"$tmp/noted"
  echo "kill $k: cuzkd killed with $d of $N done, $(dir_count "$tmp/out" '[!.]*.proof.json') proof(s) on disk"
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$state" --foreground "${OPTS[@]}" \
    >>"$tmp/cuzkd.log" 2>&1 &
  daemon_pid=$!
  answering
  # The job may have finished between the status read and the kill: a finished job is
  # not resumed (nothing is left to do), so it is gone from status and the store says
  # done. That is a correct outcome, not a race to fail on; stop killing there.
  if [ "$(sq "$state/$inst.db" "select state from jobs where id = $id")" = "done" ]; then
    echo "kill $k: the job had finished before the kill; no more kills"
    finished_early=1
    break
  fi
  st="$(cuzk --json status "$id")" || fail "job $id after restart $k: $st"
  [ "$(jq -r '.job.state' <<<"$st")" = "done" ] || [ "$(jq -r '.job.resumed' <<<"$st")" = true ] ||
    fail "job $id not marked resumed after restart $k: $st"
done
wait "$waiter" 2>/dev/null || true
grep -q "job $id resumed from the job store" "$tmp/cuzkd.log" || fail "no resume line"
if [ -z "${finished_early:-}" ]; then
  r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$id")" || fail "wait $id: $r"
  [ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job $id: $r"
fi
n="$(dir_count "$tmp/out" '[!.]*.proof.json')"
m="$(dir_count "$tmp/out")"
[ "$n" -eq "$N" ] && [ "$m" -eq $((2 * N)) ] || fail "$n proofs, $m files in the out dir (want $N, $((2 * N))): $(dir_list "$tmp/out" | tr '\n' ' ')"
while read -r f ino mt; do
  now="$(stat -c '%i %.9Y' "$f")"
  [ "$now" = "$ino $mt" ] || fail "$f was written again after a restart (inode mtime $ino $mt -> $now)"
done <"$tmp/noted"
echo "ok: $N proofs after $k kill -9 of cuzkd (of $KILLS planned); $(sort -u "$tmp/noted" | wc -l) file(s) already there at a kill were never rewritten"
grep -o "job $id resumed.*" "$tmp/cuzkd.log" | sed 's/ -> .*//; s/^/  /'
out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FX/verification_key.json" "$tmp/out")" || fail "snarkjs: $out"
[ "$out" = "$N verified" ] || fail "snarkjs: $out"
echo "ok: snarkjs: $out"
mkdir -p "$tmp/out2"
id2="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/out2" "$tmp/in/w1.wtns" | jq .job)"
[ "$id2" -gt "$id" ] || fail "job id $id2 after the restarts reuses $id"
daemon_shutdown_clean
[ "$(sq "$state/$inst.db" "select state from jobs where id = $id")" = "done" ] || fail "store: job $id is not done"
[ "$(sq "$state/$inst.db" "select count(*) from parts where job = $id and state = 'done'")" = "$N" ] ||
  fail "store: $(sq "$state/$inst.db" "select state, count(*) from parts where job = $id group by state")"
echo "ok: the store has job $id done with its $N partitions; next job got id $id2"

# ---- 1b. a proof on disk counts only for its own witness ----------------------------------
# w3's out dir holds a valid proof of another witness (x = 8) under w3's name when
# cuzkd dies before reaching w3 (the finalizer sleeps 1.5 s after each partition, so
# w3 cannot have been published 0.5 s after the submit): the resume must prove w3
# again, not take the stranger's proof for it.
node "$SNARKJS" wtns calculate "$FX/circuit_js/circuit.wasm" <(echo '{"x": "8", "k": "1234567"}') \
  "$tmp/other.wtns" >/dev/null 2>&1 || fail "snarkjs wtns calculate"
mkdir -p "$tmp/stale"
"$BUILD/bin/cuzk" prove-local "$FX/circuit_final.zkey" "$tmp/other.wtns" "$tmp/stale/w3.proof.json" \
  "$tmp/stale/w3.public.json" >/dev/null || fail "prove-local of the other witness"
cmp -s "$tmp/stale/w3.public.json" "$tmp/out/w1.public.json" && fail "the other witness has the same public signals"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state-b" --foreground \
  --devices cpu:1 --buffers 4 --buffer-mb 4 --test-finalizer-delay-ms 1500 >>"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
answering
ib="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/stale" "$tmp/in"/w{1,2,3}.wtns | jq .job)" || fail "submit (1b)"
sleep 0.5
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
stages_gone
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state-b" --foreground \
  "${OPTS[@]}" >>"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
answering
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$ib")" || fail "wait $ib: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job $ib: $r"
cmp -s "$tmp/stale/w3.public.json" "$tmp/out/w1.public.json" || fail "w3 kept the other witness's proof: $(cat "$tmp/stale/w3.public.json")"
out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FX/verification_key.json" "$tmp/stale")" || fail "snarkjs: $out"
echo "ok: a proof of another witness under w3's name was proved over on resume; snarkjs: $out"
daemon_shutdown_clean >/dev/null

# ---- 1c. resume reopens cuzkd's own copies, and the out dir only if it is the same ----------
# Files travel as descriptors (issue 16): a resume must not open a client's path. Three
# jobs when cuzkd is killed: A (.wtns), B (input.json + a generator; needs g++/nasm)
# and C (.wtns). Then the client's witnesses, inputs and generator are overwritten
# with junk, and C's out dir is moved away and a new directory made under its path.
# After the restart A and B finish from cuzkd's durable copies (snarkjs accepts
# every proof), C fails "out dir changed since submit" and nothing is written under
# the new path. The copies directory is 0700, its files 0600, and once the jobs are
# decided nothing is left in it.
. "$ROOT/tests/lib/wgen.sh"
CUZK="$BUILD/bin/cuzk"
have_wgen=1
for t in "${CXX:-g++}" "${NASM:-nasm}"; do command -v "$t" >/dev/null 2>&1 || have_wgen=0; done
sc="$tmp/state-c"
cdir="$sc/$inst.copies"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$sc" --foreground --keep-finished 0 \
  --wgen-dir "$tmp" --devices cpu:1 --buffers 4 --buffer-mb 4 --test-finalizer-delay-ms 60000 >>"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
answering
# (a finalizer delay far past the submits: no job may finish, and drop its copies,
# before the copies are counted and cuzkd is killed; with 1.5 s, job A finished
# while a loaded machine took 6 s over the generator job's submit)
[ "$(stat -c %a "$cdir")" = 700 ] || fail "copies dir mode $(stat -c %a "$cdir") (want 700)"
mkdir -p "$tmp/cin" "$tmp/ca" "$tmp/cb" "$tmp/cc"
for i in 1 2 3; do cp "$FX/witness.wtns" "$tmp/cin/a$i.wtns"; done
for i in 1 2; do cp "$FX/witness.wtns" "$tmp/cin/c$i.wtns"; done
ja="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/ca" "$tmp/cin"/a{1,2,3}.wtns | jq .job)" || fail "submit A"
jb=""
if [ $have_wgen = 1 ]; then
  cp "$(wgen_for "$FX")" "$tmp/cin/g.wgen"
  for i in 1 2; do cp "$FX/input.json" "$tmp/cin/b$i.json"; done
  jb="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --witness-gen "$tmp/cin/g.wgen" --out "$tmp/cb" \
    "$tmp/cin"/b{1,2}.json | jq .job)" || fail "submit B"
fi
jc="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/cc" "$tmp/cin"/c{1,2}.wtns | jq .job)" || fail "submit C"
bad="$(find "$cdir" -mindepth 1 ! -perm 0600 | head -n3)"
[ -z "$bad" ] || fail "copies not 0600: $(ls -la "$cdir")"
nz="$(dir_count "$cdir" 'zkey-*')"
nw="$(dir_count "$cdir" 'part-*')"
[ "$nz" = 1 ] && [ "$nw" = $((5 + 2 * have_wgen)) ] || fail "copies: $nz zkey (want 1: shared), $nw per job: $(dir_list "$cdir" '[!.]*' | tr '\n' ' ')"
[ "$have_wgen" = 0 ] || [ "$(dir_count "$cdir" 'wgen-*')" = 1 ] || fail "no generator copy: $(dir_list "$cdir" '[!.]*' | tr '\n' ' ')"
echo "ok: durable copies: 0700 dir, 0600 files, one zkey copy shared by the jobs, $nw per-job copies"
sleep 0.5
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
stages_gone
for f in "$tmp/cin"/*; do head -c 100 /dev/urandom >"$f"; done
mv "$tmp/cc" "$tmp/cc.moved"
mkdir "$tmp/cc"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$sc" --foreground --keep-finished 2 \
  --wgen-dir "$tmp" "${OPTS[@]}" >>"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
answering
# (waiters from the start: a decided job with a waiter is not retired under it)
wpids=()
for j in $ja $jb; do
  timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$j" >"$tmp/w$j" 2>&1 &
  wpids+=($!)
done
r="$(timeout 60 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$jc")" || true
[ "$(jq -r .job.state <<<"$r")" = failed ] || fail "job C with its out dir replaced: $r"
jq -r '.job.parts[].reason // empty' <<<"$r" | grep -q "out dir changed since submit" || fail "job C's reason: $r"
[ -z "$(ls -A "$tmp/cc")" ] || fail "written under the replaced out dir's path: $(ls -A "$tmp/cc")"
echo "ok: an out dir replaced under its path is not followed: $(jq -r '[.job.parts[].reason] | unique | .[0]' <<<"$r" | cut -c1-120)"
for w in "${wpids[@]}"; do wait "$w" || true; done
for j in $ja $jb; do
  [ "$(jq -r .job.state <"$tmp/w$j")" = "done" ] || fail "job $j after its client files were overwritten: $(cat "$tmp/w$j")"
done
out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FX/verification_key.json" "$tmp/ca" ${jb:+"$tmp/cb"})" || fail "snarkjs: $out"
[ "$out" = "$((3 + 2 * have_wgen)) verified" ] || fail "snarkjs: $out"
echo "ok: resumed from cuzkd's copies although the client's files were overwritten; snarkjs: $out"
[ $have_wgen = 1 ] || echo "skip: the input.json job (no g++/nasm)"
for _ in $(seq 1 150); do
  [ "$(dir_count "$cdir")" -eq 0 ] && break
  sleep 0.1
done
[ "$(dir_count "$cdir")" -eq 0 ] || fail "copies left once every job was decided: $(dir_list "$cdir" | tr '\n' ' ')"
echo "ok: no copy left once the jobs were decided and retired"
daemon_shutdown_clean >/dev/null

# ---- 2. refused store files ---------------------------------------------------------------
good="$tmp/good.db"
cp "$state/$inst.db" "$good"
refused() { # name: start on $tmp/bad/$inst.db, expect exit 3 naming it, the file unchanged
  local rc=0 sum
  sum="$(sha256sum <"$tmp/bad/$inst.db")"
  timeout 60 "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/bad" --foreground \
    "${OPTS[@]}" >"$tmp/bad.log" 2>&1 || rc=$?
  [ $rc -eq 3 ] || fail "$1: cuzkd exited $rc (want 3): $(cat "$tmp/bad.log")"
  grep -q "$tmp/bad/$inst.db" "$tmp/bad.log" || fail "$1: the message does not name the file: $(cat "$tmp/bad.log")"
  [ "$(sha256sum <"$tmp/bad/$inst.db")" = "$sum" ] || fail "$1: the store file was changed"
  [ ! -e "$tmp/bad/$inst.db-wal" ] && [ ! -e "$tmp/bad/$inst.db-shm" ] || fail "$1: a -wal or -shm file was created"
  ls /dev/shm/cuzk-"$inst".* >/dev/null 2>&1 && fail "$1: segments left"
  echo "ok: $1 refused: $(grep -o 'job store .*' "$tmp/bad.log" | head -n1 | cut -c1-150)"
}
mkdir -p "$tmp/bad"
head -c 8192 /dev/urandom >"$tmp/bad/$inst.db"
refused "a file that is not SQLite"
cp "$good" "$tmp/bad/$inst.db"
python3 - "$tmp/bad/$inst.db" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:   # wreck page 2 (a b-tree page): header and cells
    f.seek(4096); f.write(b"\xa5" * 4096)
PY
refused "a store that fails its integrity check"
cp "$good" "$tmp/bad/$inst.db"
sq "$tmp/bad/$inst.db" "pragma user_version = 4" >/dev/null
rm -f "$tmp/bad/$inst.db-wal" "$tmp/bad/$inst.db-shm"
refused "a store of schema version 4 (newer than this cuzkd)"
chmod 0777 "$tmp/bad"
rm -f "$tmp/bad/$inst.db"
rc=0
timeout 60 "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/bad" --foreground \
  "${OPTS[@]}" >"$tmp/bad.log" 2>&1 || rc=$?
[ $rc -eq 3 ] && grep -q "writable by no one else" "$tmp/bad.log" || fail "a world-writable state dir: exit $rc: $(cat "$tmp/bad.log")"
[ ! -e "$tmp/bad/$inst.db" ] || fail "a store was created in a world-writable state dir"
echo "ok: a world-writable state dir is refused: $(grep -o 'job store: .*' "$tmp/bad.log" | cut -c1-120)"

# 2b. --store-keep-days: decided jobs finished longer ago than that leave the store at
# start (and hourly), except the newest job, so ids are never handed out twice.
sp="$tmp/state-p"
rm -f /dev/shm/cuzk-"$inst".*
mkdir -p "$tmp/p1"
start_p() {
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$sp" --foreground \
    --devices cpu:1 --buffers 4 --buffer-mb 4 "$@" >>"$tmp/cuzkd.log" 2>&1 &
  daemon_pid=$!
  answering
}
stop_p() {
  cuzk shutdown >/dev/null
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=""
  stages_gone
}
start_p
for i in 1 2 3; do
  cuzk --json prove --wait --zkey "$FX/circuit_final.zkey" --out "$tmp/p1" "$tmp/in/w$i.wtns" >/dev/null ||
    fail "prune part: submit $i"
done
stop_p
# Jobs 1 and 3 finished 40 days ago, job 2 10 days ago.
sqw() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' "$@"; }
sqw "$sp/$inst.db" "update jobs set finished = finished - 40*86400 where id in (1, 3)"
sqw "$sp/$inst.db" "update jobs set finished = finished - 10*86400 where id = 2"
start_p --store-keep-days 0
[ "$(sq "$sp/$inst.db" "select group_concat(id) from jobs")" = "1,2,3" ] || fail "--store-keep-days 0 removed jobs"
stop_p
start_p
grep -q "removed 1 decided job(s) finished more than 30 day(s) ago" "$tmp/cuzkd.log" || fail "no prune line"
ids="$(sq "$sp/$inst.db" "select group_concat(id) from jobs")"
[ "$ids" = "2,3" ] || fail "after pruning the store holds jobs $ids (want 2,3: job 1 is old, 3 is old but the newest)"
[ "$(sq "$sp/$inst.db" "select count(*) from parts where job = 1")" = 0 ] || fail "job 1's partitions were left"
j="$(cuzk --json prove --wait --zkey "$FX/circuit_final.zkey" --out "$tmp/p1" "$tmp/in/w1.wtns" | jq -s ".[0].job")"
[ "$j" = 4 ] || fail "the next job after pruning got id $j (want 4: no id reused)"
stop_p
echo "ok: --store-keep-days: the old decided job left the store (with its partitions), the newest stayed, next id 4"

# ---- 3. disk full under the store ------------------------------------------------------------
mnt="$tmp/small"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=4m,mode=0700 cuzk-store-test "$mnt" 2>/dev/null; then
  mnt=""
  echo "skip: disk full part: cannot mount a tmpfs here (not root?)"
  exit 0
fi
state="$mnt/state"
rm -f /dev/shm/cuzk-"$inst".*
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$state" --foreground \
  --devices cpu:1 --buffers 4 --buffer-mb 4 >>"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
answering
mkdir -p "$tmp/f1" "$tmp/f2" "$tmp/f3"
a="$(cuzk --json prove --wait --zkey "$FX/circuit_final.zkey" --out "$tmp/f1" "$tmp/in/w1.wtns" | jq -s ".[0].job")" ||
  fail "first submit"
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null || true
rc=0
out="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/f2" "$tmp/in"/w{1,2,3}.wtns 2>&1)" || rc=$?
[ $rc -eq 21 ] || fail "a submit on a full disk: exit $rc (want 21, refused): $out"
grep -q '"store"' <<<"$out" && grep -qi "disk full\|full" <<<"$out" || fail "unclear refusal: $out"
echo "ok: full disk: $(jq -r .message <<<"$out" 2>/dev/null | cut -c1-160)"
[ "$(cuzk --json status | jq '[.jobs[] | select(.id != '"$a"')] | length')" = 0 ] || fail "a job was half-accepted: $(cuzk --json status | jq -c .jobs)"
rm -f "$mnt/filler"
b="$(cuzk --json prove --wait --zkey "$FX/circuit_final.zkey" --out "$tmp/f3" "$tmp/in"/w{1,2}.wtns | jq -s ".[0].job")" ||
  fail "submit with room again"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
stages_gone
[ -z "$(ls -A "$tmp/f2")" ] || fail "the refused job wrote: $(ls -A "$tmp/f2")"
ids="$(sq "$state/$inst.db" "select group_concat(id) from jobs")"
[ "$ids" = "$a,$b" ] || fail "store holds jobs $ids, want $a,$b (the refused one must not be there)"
out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FX/verification_key.json" "$tmp/f1" "$tmp/f3")" || fail "snarkjs: $out"
echo "ok: nothing half-accepted: the store holds jobs $ids only; snarkjs: $out"
rm -f /dev/shm/cuzk-"$inst".*
