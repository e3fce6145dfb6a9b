#!/usr/bin/env bash
# Issue 16 item 1: a symlink planted at the finalizer's temp name
# (OUT/<name>.{proof,public}.json.tmp.<finalizer pid>) or at a final name must not make
# the daemon (root here) truncate or overwrite its target: not a root-owned 0600
# file, not the daemon's own data segment. Such a partition fails with a clear reason,
# the daemon keeps running, and no public.json is left without its proof.json.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/daemon.sh"
. "$here/lib.sh"
daemon_init secln
attacker_init

A="$FIXTURES/bn128/mulchain-10"
daemon_start --devices cpu:1 --buffer-mb 16
st="$(cuzk --json status)" || fail "status"
fpid="$(node -e 'const r=JSON.parse(process.argv[1]); const f=(function find(o){ if (Array.isArray(o)) { for (const x of o) { const y=find(x); if (y) return y; } } else if (o && typeof o==="object") { if (o.stage==="finalizer" && o.pid) return o.pid; for (const k in o) { const y=find(o[k]); if (y) return y; } } return 0; })(r); console.log(f||"")' "$st")"
[ -n "$fpid" ] || fail "no finalizer process"
seg="/dev/shm/cuzk-$inst.data"
[ -f "$seg" ] || fail "no data segment $seg"
segsize="$(stat -c %s "$seg")"

chmod 0711 "$tmp"
mkdir -p "$tmp/in" "$tmp/out"
chown "$ATTACKER" "$tmp/out"
for i in 1 2 3 4; do cp "$A/witness.wtns" "$tmp/in/w$i.wtns"; done
printf 'SECRET1\n' >"$tmp/secret1"
printf 'SECRET2\n' >"$tmp/secret2"
chmod 0600 "$tmp/secret1" "$tmp/secret2"

# The attack, as the owner of the out dir who knows the finalizer's pid.
as_attacker ln -s "$tmp/secret1" "$tmp/out/w1.proof.json.tmp.$fpid"
as_attacker ln -s "$tmp/secret1" "$tmp/out/w1.public.json.tmp.$fpid"
as_attacker ln -s "$seg" "$tmp/out/w2.public.json.tmp.$fpid"
as_attacker ln -s "$seg" "$tmp/out/w2.proof.json.tmp.$fpid"
as_attacker ln -s "$tmp/secret2" "$tmp/out/w3.proof.json"

out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns)" || fail "submit: $out"
job="$(js 'r.job' "$out")"
res="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" 2>&1)" || true

kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died (the segment attack worked): $res"
[ "$(cat "$tmp/secret1")" = SECRET1 ] || fail "symlink at the temp name: the daemon overwrote its target"
[ "$(cat "$tmp/secret2")" = SECRET2 ] || fail "symlink at the final name: the daemon wrote through it"
[ "$(stat -c %s "$seg")" = "$segsize" ] || fail "the data segment was truncated through a symlink"
echo "ok: no target of a planted symlink was written; cuzkd alive"
[ -L "$tmp/out/w3.proof.json" ] || fail "the symlink at w3.proof.json was replaced instead of refused"
grep -q "not a regular file" <<<"$res$(cat "$tmp/cuzkd.log")" || fail "no clear refusal for the final-name symlink: $res"
echo "ok: a final name that is a symlink is refused with a clear reason"
[ -s "$tmp/out/w4.proof.json" ] && [ -s "$tmp/out/w4.public.json" ] || fail "the clean partition w4 was not published: $res"
for p in "$tmp/out"/*.public.json; do
  [ -e "${p%.public.json}.proof.json" ] || fail "$(basename "$p") without its proof.json"
done
left="$(find "$tmp/out" -name '*.tmp.*' ! -type l)"
[ -z "$left" ] || fail "temp files left: $left"
echo "ok: no public.json without proof.json, no temp file left"
daemon_stop
