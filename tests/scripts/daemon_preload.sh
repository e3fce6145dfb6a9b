#!/usr/bin/env bash
# cuzkd preload / evict: `cuzk preload Z` makes every stage map the zkey (seen in
# /proc/PID/maps and in status's circuits acks) before any job; a job of that circuit
# then proves; a restarted stage loads it again by itself; `cuzk evict Z` unmaps it
# everywhere; bad requests get clear errors (a path instead of a descriptor, not a
# zkey, evict of a path never preloaded, a fourth preload, missing field). Stages map
# cuzkd's copy of the zkey (a memfd named after it, copies.h), never the file itself.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init pre
# the stages' pids (synth, worker, finalizer) from status
children_pids() { js 'r.children.map(c=>c.pid).join(" ")' "$(cuzk --json status)"; }
# mapped PATH: how many of the stage processes map cuzkd's copy of PATH (a memfd named
# after the file: stages never map the client's file itself, copies.h)
copy_of() { echo "/memfd:cuzk:$(basename "$1") "; }
mapped() {
  local n=0 p
  for p in $(children_pids); do grep -qF "$(copy_of "$1")" "/proc/$p/maps" 2>/dev/null && n=$((n + 1)); done
  echo "$n"
}

daemon_start --devices cpu:1 --buffer-mb 16
for _ in $(seq 1 100); do
  [ "$(js 'r.children.filter(c=>c.pid>0).length' "$(cuzk --json status)")" = 3 ] && break
  sleep 0.1
done

A="$REF_FIXTURES/bn128"
mkdir -p "$tmp/in" "$tmp/out" "$tmp/z"
cp "$A/circuit_final.zkey" "$tmp/z/a.zkey"
for i in 1 2; do cp "$A/witness.wtns" "$tmp/in/w$i.wtns"; done
Z="$tmp/z/a.zkey"

[ "$(mapped "$Z")" = 0 ] || fail "a stage maps $Z before any preload or job"
out="$(cuzk --json preload "$Z")" || fail "preload: $out"
[ "$(js 'r.applied+"/"+r.stages+"/"+r.failed' "$out")" = "3/3/0" ] || fail "preload reply: $out"
[ "$(mapped "$Z")" = 3 ] || fail "after preload, $(mapped "$Z") of 3 stages map $Z"
st="$(cuzk --json status)"
[ "$(js 'r.circuits.acks.filter(a=>a.preloads>=1 && a.seq>=r.circuits.seq).length' "$st")" = 3 ] ||
  fail "status circuits acks: $(js 'JSON.stringify(r.circuits)' "$st")"
[ "$(js 'r.circuits.entries.filter(e=>e.action=="preload" && e.applied==3).length' "$st")" = 1 ] ||
  fail "status circuits entries: $(js 'JSON.stringify(r.circuits)' "$st")"
cuzk status | grep -q "preload .*a.zkey  applied in 3/3" || fail "human status lacks the circuit"
echo "ok: preload -> synth, worker and finalizer map the zkey; status shows 3/3 acks"

out="$(cuzk preload "$Z")" || fail "preload again: $out"
echo "ok: preload again is accepted ($out)"

out="$(cuzk --json prove --zkey "$Z" --out "$tmp/out" --wait "$tmp/in"/w*.wtns)" || fail "job: $out"
for i in 1 2; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$i"
done
echo "ok: a job of the preloaded circuit proves; snarkjs verifies both proofs"

old="$(js 'r.children.find(c=>c.stage=="worker").pid' "$(cuzk --json status)")"
cuzk restart worker 0 >/dev/null || fail "restart worker"
for _ in $(seq 1 100); do
  new="$(js '(r.children.find(c=>c.stage=="worker")||{}).pid' "$(cuzk --json status)")"
  [ -n "$new" ] && [ "$new" != 0 ] && [ "$new" != "$old" ] && grep -qF "$(copy_of "$Z")" "/proc/$new/maps" 2>/dev/null && break
  sleep 0.1
done
grep -qF "$(copy_of "$Z")" "/proc/$new/maps" 2>/dev/null || fail "restarted worker ($new) did not load the preloaded zkey"
echo "ok: a restarted worker (pid $old -> $new) loads the preloaded zkey by itself"

out="$(cuzk --json evict "$Z")" || fail "evict: $out"
[ "$(js 'r.applied+"/"+r.stages' "$out")" = "3/3" ] || fail "evict reply: $out"
[ "$(mapped "$Z")" = 0 ] || fail "after evict, $(mapped "$Z") stages still map $Z"
st="$(cuzk --json status)"
[ "$(js 'r.circuits.acks.filter(a=>a.evicts>=1).length' "$st")" = 3 ] ||
  fail "evict acks: $(js 'JSON.stringify(r.circuits)' "$st")"
echo "ok: evict -> no stage maps the zkey; every stage counted an evict"

# Errors, each with its code and a message; the daemon goes on.
expect_error "preload of a path (no descriptor)" bad_request "{\"req\":\"preload\",\"zkey\":\"$tmp/nope.zkey\"}"
expect_fds "preload of a witness" bad_input '{"req":"preload","fds":1,"zkey":{"fd":0,"path":"w1.wtns"}}' "$tmp/in/w1.wtns"
expect_error "preload without zkey" bad_request '{"req":"preload"}'
expect_error "evict of a path never preloaded" not_found "{\"req\":\"evict\",\"zkey\":\"$tmp/nope.zkey\"}"
for i in 1 2 3 4; do cp "$A/circuit_final.zkey" "$tmp/z/c$i.zkey"; done
for i in 1 2 3; do cuzk preload --no-wait "$tmp/z/c$i.zkey" >/dev/null || fail "preload c$i"; done
expect_fds "a fourth preload" full "{\"req\":\"preload\",\"fds\":1,\"zkey\":{\"fd\":0,\"path\":\"$tmp/z/c4.zkey\"}}" "$tmp/z/c4.zkey"
rc=0
cuzk preload "$tmp/nope.zkey" 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] || fail "client preload of a missing file: rc $rc ($(cat "$tmp/err"))"
rm "$tmp/z/c1.zkey"
out="$(cuzk evict "$tmp/z/c1.zkey")" || fail "evict of a preloaded file that is gone: $out"
[ "$(mapped "$tmp/z/c1.zkey")" = 0 ] || fail "c1 still mapped after evict"
echo "ok: a preloaded file deleted since can still be evicted ($out)"

daemon_shutdown_clean
