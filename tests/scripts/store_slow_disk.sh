#!/usr/bin/env bash
# A slow disk under the job store must not hold cuzkd. With the store on, a submit is
# acknowledged only once its durable copies (zkey, witnesses) are written and
# fsync'd; for a large zkey on a slow or busy disk that takes as long as the disk
# likes. That write used to run in cuzkd's event loop: meanwhile no status, wait or
# submit of anyone was answered and no stage was restarted. Now the intake thread
# writes it. The disk is made as slow as the test likes with the test hook
# CUZK_TEST_PERSIST_HOLD (supervisor/copies.c: each durable copy waits before its
# fsync while DIR/hold exists). While the first submit's copy is held, status must
# answer and list no such job yet (it is not acknowledged), and cuzkd must not have
# acknowledged it; once the hold is lifted the job is accepted, proved, and every
# proof verifies with snarkjs. Then a held submit that cuzkd gives up on
# (--copy-timeout) leaves no durable copy of its own behind.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
daemon_init slowdisk
FX="$FIXTURES/bn128/mulchain-10"
[ -f "$FX/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q >/dev/null
hold="$tmp/hold"
mkdir -p "$hold" "$tmp/in" "$tmp/out"
for i in 1 2 3; do cp "$FX/witness.wtns" "$tmp/in/w$i.wtns"; done
CUZK_TEST_PERSIST_HOLD="$hold" daemon_start --devices cpu:1 --buffers 4 --buffer-mb 4
for _ in $(seq 1 100); do
  cuzk status >/dev/null 2>&1 && break
  sleep 0.1
done

touch "$hold/hold"
cuzk prove --json --zkey "$FX/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns \
  >"$tmp/submit.json" 2>"$tmp/submit.err" &
sub_pid=$!
wait_until 600 [ -f "$hold/held" ] || fail "the submit's durable copy never reached its fsync"
# The loop is free while the copy waits: status answers (the old cuzkd never did).
st="$(timeout 60 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status --json)" ||
  fail "status did not answer while a durable copy was being written"
[ "$(js 'r.jobs.length' "$st")" = 0 ] || fail "a job is listed before its copies are durable: $st"
kill -0 "$sub_pid" 2>/dev/null || fail "the submit was answered before its copies were durable: $(cat "$tmp/submit.json" "$tmp/submit.err")"
echo "ok: status answered while the submit's durable copy was held"

rm -f "$hold/hold"
wait "$sub_pid" || fail "submit failed: $(cat "$tmp/submit.err")"
job="$(js 'r.job' "$(cat "$tmp/submit.json")")"
cuzk wait "$job" >/dev/null || fail "job $job did not finish"
vk="$FX/verification_key.json"
for i in 1 2 3; do
  "$SNARKJS" groth16 verify "$vk" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$i"
done
echo "ok: the job was accepted once its copies were durable; 3 proofs verified"

# A held submit that cuzkd gives up on (--copy-timeout: the held copy makes no
# progress): the client is told, and once the write ends the intake removes the
# copies of its own it made (part-*); nothing else in the copies dir changes.
daemon_shutdown_clean
CUZK_TEST_PERSIST_HOLD="$hold" daemon_start --devices cpu:1 --buffers 4 --buffer-mb 4 --copy-timeout 1
for _ in $(seq 1 100); do
  cuzk status >/dev/null 2>&1 && break
  sleep 0.1
done
cdir="$tmp/state/$inst.copies"
before="$(dir_list "$cdir")"
rm -f "$hold/held"
touch "$hold/hold"
r=0
cuzk prove --zkey "$FX/circuit_final.zkey" --out "$tmp/out" "$tmp/in/w1.wtns" \
  >"$tmp/sub3.out" 2>&1 || r=$?
[ $r -ne 0 ] || fail "a submit whose durable copy made no progress was accepted"
grep -q "copy-timeout" "$tmp/sub3.out" || fail "no copy-timeout message: $(cat "$tmp/sub3.out")"
[ -f "$hold/held" ] || fail "the submit failed before its durable copy: $(cat "$tmp/sub3.out")"
rm -f "$hold/hold"
wait_until 300 grep -q "given up on (--copy-timeout) ended after all" "$tmp/cuzkd.log" || fail "the given-up intake never ended"
after="$(dir_list "$cdir")"
[ "$before" = "$after" ] || fail "the given-up submit changed the copies dir: before [$before] after [$after]"
echo "ok: a submit given up on during its durable copy left no copy behind"
daemon_shutdown_clean

# Two submits of one zkey at once (a fleet daemon's parallel claims do this): both
# intakes write the shared zkey copy. They wrote one temp name `.tmp.zkey-ID`, the
# second unlinking the first's: one submit failed "cannot keep a durable copy ...: No
# such file or directory" (seen in fleet_pg), and the other's rename could put a
# file still being written under the final name. Both are held at their fsync (one
# held.TID each) before either goes on: the old code fails here.
CUZK_TEST_PERSIST_HOLD="$hold" daemon_start --devices cpu:1 --buffers 4 --buffer-mb 4
for _ in $(seq 1 100); do
  cuzk status >/dev/null 2>&1 && break
  sleep 0.1
done
cp "$FX/circuit_final.zkey" "$tmp/z2.zkey" # a new identity: no copy of it yet
mkdir -p "$tmp/o1" "$tmp/o2"
rm -f "$hold"/held*
touch "$hold/hold"
cuzk prove --json --zkey "$tmp/z2.zkey" --out "$tmp/o1" "$tmp/in/w1.wtns" >"$tmp/s1.json" 2>"$tmp/s1.err" &
p1=$!
cuzk prove --json --zkey "$tmp/z2.zkey" --out "$tmp/o2" "$tmp/in/w2.wtns" >"$tmp/s2.json" 2>"$tmp/s2.err" &
p2=$!
for _ in $(seq 1 600); do
  [ "$(dir_count "$hold" 'held.*')" -ge 2 ] && break
  sleep 0.1
done
[ "$(dir_count "$hold" 'held.*')" -ge 2 ] || fail "two intakes were not held at once: $(dir_list "$hold" '[!.]*' | tr '\n' ' ')"
rm -f "$hold/hold"
wait "$p1" || fail "submit 1 of a shared zkey failed: $(cat "$tmp/s1.json" "$tmp/s1.err")"
wait "$p2" || fail "submit 2 of a shared zkey failed: $(cat "$tmp/s2.json" "$tmp/s2.err")"
for k in 1 2; do
  j="$(js 'r.job' "$(cat "$tmp/s$k.json")")"
  cuzk wait "$j" >/dev/null || fail "job $j did not finish"
  "$SNARKJS" groth16 verify "$vk" "$tmp/o$k/w$k.public.json" "$tmp/o$k/w$k.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$k of job $j"
done
[ "$(dir_count "$cdir" '.tmp.*')" -eq 0 ] || fail "temp copies left: $(dir_list "$cdir" | tr '\n' ' ')"
echo "ok: two submits of one zkey written at once: both accepted, 2 proofs verified, no temp left"
daemon_shutdown_clean
