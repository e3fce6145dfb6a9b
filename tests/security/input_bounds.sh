#!/usr/bin/env bash
# No input costs more than its bytes are worth. cuzkd copies every input into memory
# (and, with the job store, onto its disk), so the attacker (an admitted user) tries
#   1. a witness with a sparse 512 MiB unknown section (4 KiB on its disk),
#   2. a witness with one trailing byte, 3. a zkey with a sparse 512 MiB section 11:
#      each refused, read from its headers before any copy (the copies cuzkd holds
#      stay under 1 MiB: `cuzk status --json` "copies");
#   4. one witness descriptor named 40 times (40 partitions): one copy in memory and
#      one durable copy on the store's disk, not 40; the 40 proofs verify (snarkjs);
#   5. a job whose files pass its --quota-bytes: refused "quota", root's same job runs;
# and once its jobs are decided, cuzkd holds no copy of the attacker's (an idle copy
# is freed when its last job ends).
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secbounds
attacker_init
A="$FIXTURES/bn128/mulchain-10"
zsize=$(stat -c %s "$A/circuit_final.zkey")
wsize=$(stat -c %s "$A/witness.wtns")
# Room for the zkey and a few witnesses, not for a second zkey's worth.
quota=$((zsize + 8 * wsize))
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk" --quota-bytes "$quota" \
  --keep-finished 3600
attacker_reach

mkdir -p "$tmp/atk/in" "$tmp/atk/out" "$tmp/atk/many" "$tmp/atk/q"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
# 1: nsections 2 -> 3, then section 3's header (id 3, 512 MiB) and a hole to its end.
python3 - "$A/witness.wtns" "$tmp/atk/in/sparse.wtns" "$tmp/atk/in/trail.wtns" \
  "$A/circuit_final.zkey" "$tmp/atk/in/sparse.zkey" <<'PY'
import struct, sys
w = bytearray(open(sys.argv[1], "rb").read())
big = 512 << 20
s = bytearray(w); s[8:12] = struct.pack("<I", 3); s += struct.pack("<IQ", 3, big)
with open(sys.argv[2], "wb") as f:
    f.write(s); f.truncate(len(s) + big)
open(sys.argv[3], "wb").write(w + b"\0")
z = bytearray(open(sys.argv[4], "rb").read())
n = struct.unpack("<I", z[8:12])[0]; z[8:12] = struct.pack("<I", n + 1); z += struct.pack("<IQ", 11, big)
with open(sys.argv[5], "wb") as f:
    f.write(z); f.truncate(len(z) + big)
PY
chown -R "$atk:$atk" "$tmp/atk"
copies_bytes() { js 'r.copies.bytes' "$(cuzk --json status)"; }
copies_count() { js 'r.copies.count' "$(cuzk --json status)"; }

sub1() { # zkey witness [name]: a raw submit of one witness, as the attacker
  asend_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"out\"},\"witnesses\":[{\"fd\":2,\"path\":\"w.wtns\"}]}" \
    "$1" "$tmp/atk/out" "$2"
}
refused() { # what reply pattern
  grep -q '"ok":false' <<<"$2" && grep -q "$3" <<<"$2" || fail "$1: not refused as expected: $2"
  echo "ok: $1 refused: $(js 'r.message' "$2" 2>/dev/null || echo "$2")"
}
refused "a witness with a sparse 512 MiB unknown section" \
  "$(sub1 "$tmp/atk/in/c.zkey" "$tmp/atk/in/sparse.wtns")" "refused before any copy"
refused "a witness with a trailing byte" \
  "$(sub1 "$tmp/atk/in/c.zkey" "$tmp/atk/in/trail.wtns")" "trailing bytes"
refused "a zkey with a sparse 512 MiB section 11" \
  "$(sub1 "$tmp/atk/in/sparse.zkey" "$tmp/atk/in/w.wtns")" "refused before any copy"
b="$(copies_bytes)"
[ "$b" -lt $((1 << 20)) ] || fail "cuzkd holds $b bytes of copies after the refused submits"
echo "ok: cuzkd holds $b bytes of copies after them"

# 4. One descriptor, 40 names.
ws=""
for i in $(seq 1 40); do ws="$ws${ws:+,}{\"fd\":2,\"path\":\"w.wtns\",\"name\":\"p$i\"}"; done
r="$(asend_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"many\"},\"witnesses\":[$ws]}" \
  "$tmp/atk/in/c.zkey" "$tmp/atk/many" "$tmp/atk/in/w.wtns")"
j="$(js 'r.job' "$r")" || fail "40 names of one witness: $r"
[ "$j" != undefined ] || fail "40 names of one witness: $r"
cnt="$(copies_count)"
parts="$(dir_count "$tmp/state/$inst.copies" 'part-*')"
cuzk wait "$j" >/dev/null 2>&1 || fail "job $j (40 names of one witness) failed"
[ "$cnt" -le 2 ] || fail "40 names of one witness made $cnt copies (zkey + 1 expected)"
[ "$parts" -eq 1 ] || fail "40 names of one witness made $parts durable witness copies"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$A/verification_key.json" \
  "$tmp/atk/many" | grep -qx "40 verified" || fail "the 40 proofs do not all verify"
echo "ok: one witness named 40 times: $cnt copies in memory, $parts durable witness copy; 40 proofs verified"

# 5. Over the quota: the zkey twice over (two distinct zkeys of the same circuit).
cp "$A/circuit_final.zkey" "$tmp/atk/q/c2.zkey"
chown "$atk:$atk" "$tmp/atk/q/c2.zkey"
ws=""
for i in $(seq 1 9); do
  cp "$A/witness.wtns" "$tmp/atk/q/w$i.wtns"
  ws="$ws${ws:+,}{\"fd\":$((i + 1)),\"path\":\"w$i.wtns\"}"
done
chown -R "$atk:$atk" "$tmp/atk/q"
qargs=("$tmp/atk/in/c.zkey" "$tmp/atk/q")
for i in $(seq 1 9); do qargs+=("$tmp/atk/q/w$i.wtns"); done
r="$(asend_fds "{\"req\":\"submit\",\"fds\":11,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"q\"},\"witnesses\":[$ws]}" "${qargs[@]}")"
refused "a job of 9 witnesses past --quota-bytes $quota" "$r" '"error":"quota"'
cuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/atk/q" --wait "$tmp"/atk/q/w*.wtns >/dev/null ||
  fail "root's job of the same files (root is exempt from --quota-bytes)"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$A/verification_key.json" \
  "$tmp/atk/q" | grep -qx "9 verified" || fail "root's 9 proofs do not all verify"
echo "ok: root's same job proves (9 verified)"

# Decided jobs hold no copy (a liveness bound: the loop drops them at its next tick).
for _ in $(seq 1 600); do
  [ "$(copies_count)" = 0 ] && break
  sleep 0.1
done
[ "$(copies_count)" = 0 ] || fail "cuzkd still holds $(copies_count) copies after every job ended"
echo "ok: no copy is held once every job has ended"
daemon_shutdown_clean
echo "PASS: input_bounds"
