#!/usr/bin/env bash
# The job store is bounded per user by count (--store-keep-jobs) and by bytes of
# requests (--store-keep-mb), not only by age: a user who submits many jobs, or jobs of
# large requests, loses only its own oldest decided jobs from the store, never
# another user's. Driven through a real cuzkd and a real second user (the attacker):
#   life 1 (default bounds): root proves one job (snarkjs verifies); the attacker
#     submits 12 small jobs and 20 of about 60 KB of request each (many witnesses
#     with long names), cancelled at once; their witness is wrong in one value, so a
#     partition that started anyway fails the finalizer's check: no proof is made;
#   life 2 (--store-keep-mb 1): the attacker's decided jobs in the store now hold at
#     most 1 MiB of requests, the newest kept; root's job stays;
#   life 3 (--store-keep-jobs 3): the attacker keeps its 3 newest; root's job stays.
# The store is read with sqlite (python3's sqlite3) after each life.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secstore
attacker_init
A="$FIXTURES/bn128/mulchain-10"
opts=(--devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk" --max-parts 8192)
daemon_start "${opts[@]}"
attacker_reach
mkdir -p "$tmp/root/out" "$tmp/atk/in" "$tmp/atk/out"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
# A witness wrong in one value (signal 1, the circuit's output): the submit's checks
# (sizes, header) pass it; the finalizer's pairing check fails its proof.
python3 - "$A/witness.wtns" "$tmp/atk/in/w.wtns" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off, secs = 12, {}
for _ in range(struct.unpack_from("<I", b, 8)[0]):
    sid, size = struct.unpack_from("<IQ", b, off)
    secs[sid] = off + 12
    off += 12 + size
n8 = struct.unpack_from("<I", b, secs[1])[0]
b[secs[2] + n8] ^= 1  # value 1, lowest bit
open(sys.argv[2], "wb").write(b)
PY
chown -R "$atk:$atk" "$tmp/atk"
acuzk() { as_attacker "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
# store_rows UID: "COUNT BYTES MIN_ID" of that uid's decided jobs in the store
store_rows() {
  python3 - "$tmp/state/$inst.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
n, b, lo = db.execute("SELECT count(*), coalesce(sum(length(request)), 0), coalesce(min(id), 0) FROM jobs "
                      "WHERE state != 'running' AND json_extract(request, '$.peer.uid') = ?", (int(sys.argv[2]),)).fetchone()
print(n, b, lo)
PY
}
decided() { # job id: wait until it is decided (it fails: that is the point)
  timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$1" >/dev/null 2>&1 || true
  local s
  s="$(cuzk --json status "$1" 2>/dev/null | jq -r .job.state || true)"
  [ "$s" = failed ] || [ "$s" = "done" ] || fail "job $1 not decided: $s"
}

cuzk prove --zkey "$A/circuit_final.zkey" --out "$tmp/root/out" --wait "$A/witness.wtns" >/dev/null || fail "root's job"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/root/out/witness.public.json" \
  "$tmp/root/out/witness.proof.json" | grep -q OK || fail "snarkjs rejects root's proof"
echo "ok: root's job proved (snarkjs verifies)"

# The attacker's jobs: raw submits (its own shell opens the files), then a cancel.
submit() { # n-witnesses: one job of n partitions, all of w.wtns, long names and paths
  local line r j
  line="$(
    python3 - "$1" <<'PY'
import json, sys
n = int(sys.argv[1])
ws = [{"fd": 2, "path": ("p" * 200) + f"{i}.wtns", "name": ("n" * 100) + str(i)} for i in range(n)]
print(json.dumps({"req": "submit", "fds": 3, "zkey": {"fd": 0, "path": "c.zkey"},
                  "out_dir": {"fd": 1, "path": "out"}, "witnesses": ws}, separators=(",", ":")))
PY
  )"
  r="$(asend_fds "$line" "$tmp/atk/in/c.zkey" "$tmp/atk/out" "$tmp/atk/in/w.wtns")"
  j="$(js 'r.job' "$r")"
  [ -n "$j" ] && [ "$j" != undefined ] || fail "the attacker's submit of $1 witnesses: $r"
  acuzk cancel "$j" >/dev/null 2>&1 || true
  decided "$j"
}
for _ in $(seq 1 12); do submit 1; done
for _ in $(seq 1 20); do submit 150; done
[ "$(dir_count "$tmp/atk/out" '[!.]*')" -eq 0 ] || fail "a proof was made of the wrong witness: $(dir_list "$tmp/atk/out" '[!.]*' | tr '\n' ' ')"
daemon_stop
read -r n b lo < <(store_rows "$ATTACKER_UID")
[ "$n" -eq 32 ] || fail "life 1: the attacker has $n decided jobs in the store, not 32"
[ "$b" -gt $((1100 * 1024)) ] || fail "life 1: the attacker's requests are only $b bytes: not above 1 MiB"
read -r rn _ _ < <(store_rows 0)
[ "$rn" -eq 1 ] || fail "life 1: root has $rn jobs in the store"
echo "ok: life 1: the attacker has $n decided jobs of $b bytes of requests in the store, root 1"

life() { # the check after a life started with these bounds: the prune is logged
  mv "$tmp/cuzkd.log" "$tmp/cuzkd.$1.log"
  chmod 700 "$run" # attacker_reach opened it; cuzkd refuses a run dir open to others
  daemon_start "${opts[@]}" "${@:2}"
  wait_until 300 grep "beyond a user's" "$tmp/cuzkd.log" || fail "life $1: no prune logged"
  daemon_stop
}
life 2 --store-keep-mb 1
read -r n2 b2 lo2 < <(store_rows "$ATTACKER_UID")
[ "$b2" -le $((1024 * 1024)) ] && [ "$n2" -ge 1 ] && [ "$n2" -lt "$n" ] ||
  fail "life 2 (--store-keep-mb 1): the attacker has $n2 jobs of $b2 bytes"
[ "$lo2" -gt "$lo" ] || fail "life 2: the attacker's oldest job $lo2 is not newer than before ($lo)"
read -r rn _ _ < <(store_rows 0)
[ "$rn" -eq 1 ] || fail "life 2: root's job left the store with the attacker's"
echo "ok: life 2 (--store-keep-mb 1): the attacker keeps its $n2 newest jobs, $b2 bytes; root's job stays"

life 3 --store-keep-jobs 3
read -r n3 _ lo3 < <(store_rows "$ATTACKER_UID")
max="$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT max(id) FROM jobs").fetchone()[0])' "$tmp/state/$inst.db")"
[ "$n3" -eq 3 ] && [ "$lo3" -eq $((max - 2)) ] || fail "life 3 (--store-keep-jobs 3): the attacker has $n3 jobs from id $lo3 (newest $max)"
read -r rn _ _ < <(store_rows 0)
[ "$rn" -eq 1 ] || fail "life 3: root's job left the store with the attacker's"
echo "ok: life 3 (--store-keep-jobs 3): the attacker keeps jobs $lo3..$max; root's job stays"
echo "PASS: store_bounds"
