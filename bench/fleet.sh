#!/usr/bin/env bash
# bench/fleet.sh — fleet throughput on one PostgreSQL (issue 17, "Benchmarks"); run by
# bench/run.sh, or alone. A throwaway cluster (as tests/scripts/fleet_pg.sh: initdb +
# pg_ctl as a per-run user, a free port, its socket in a temp dir), then for 1, 2 and
# 3 cuzkd --queue on this machine: BENCH_FLEET_PARTS (30) bn128 mulchain-10 partitions
# submitted with `cuzk prove --queue`, timed to `cuzk wait --queue`. Prints partitions/s
# and, with no proving at all, claims/s (claim + finish statements in one psql session).
# On a 2-core machine more daemons share the same cores: it shows the claim overhead,
# not scaling. The proofs of each round are checked by snarkjs.
# Needs root and Debian's postgresql; else it says so and exits 0.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" fleet
N="${BENCH_FLEET_PARTS:-30}"
FX="$FIXTURES/bn128/mulchain-10"
bindir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n1)"
if [ "$(id -u)" -ne 0 ] || [ -z "$bindir" ]; then
  echo "bench/fleet: skipped (needs root and the postgresql package)"
  exit 0
fi
tmp="$(mktemp -d)"
pgu="cuzkbpg$$"
pids=()
useradd -M -U -s /bin/sh "$pgu"
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill -KILL "$p" 2>/dev/null || true; done
  runuser -u "$pgu" -- "$bindir/pg_ctl" -D "$tmp/pg/data" -m immediate stop >/dev/null 2>&1 || true
  pkill -KILL -u "$pgu" 2>/dev/null || true
  sleep 0.5
  userdel -f "$pgu" >/dev/null 2>&1 || true
  groupdel "$pgu" >/dev/null 2>&1 || true
  rm -f /dev/shm/cuzk-bfleet$$-* 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/pg" "$tmp/in"
chown "$pgu" "$tmp/pg"
chmod 755 "$tmp"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
runuser -u "$pgu" -- "$bindir/initdb" -D "$tmp/pg/data" -U cuzk --auth=trust >/dev/null
runuser -u "$pgu" -- "$bindir/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/log" -w \
  -o "-p $port -k $tmp/pg -c listen_addresses=''" start >/dev/null
runuser -u "$pgu" -- "$bindir/createdb" -h "$tmp/pg" -p "$port" -U cuzk cuzk
url="postgresql://cuzk@/cuzk?host=$tmp/pg&port=$port"
for i in $(seq 1 "$N"); do cp "$FX/witness.wtns" "$tmp/in/w$i.wtns"; done
echo "bench/fleet: $N partitions of bn128 mulchain-10 on one PostgreSQL ($("$bindir/postgres" --version | awk '{print $3}')), $(nproc) core(s)"
for d in 1 2 3; do
  pids=()
  for k in $(seq 1 "$d"); do
    "$BUILD/bin/cuzkd" --instance "bfleet$$-$d-$k" --run-dir "$tmp/run$d$k" --state-dir "$tmp/state$d$k" \
      --foreground --devices cpu:1 --buffers 2 --buffer-mb 4 --queue "$url" >"$tmp/cuzkd$d$k.log" 2>&1 &
    pids+=($!)
  done
  sleep 2 # their stages up: the timing is the queue's and the proofs', not the starts
  out="$tmp/out$d"
  mkdir -p "$out"
  t0="$(date +%s.%N)"
  job="$("$BUILD/bin/cuzk" --json prove --queue "$url" --zkey "$FX/circuit_final.zkey" --out "$out" "$tmp"/in/w*.wtns | jq .job)"
  "$BUILD/bin/cuzk" wait "$job" --queue "$url" --timeout-ms 600000 >/dev/null
  t1="$(date +%s.%N)"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$FX/verification_key.json" "$out")"
  printf '  %d cuzkd: %6.2f partitions/s (%d in %.1f s; snarkjs: %s)\n' "$d" \
    "$(echo "$N / ($t1 - $t0)" | bc -l)" "$N" "$(echo "$t1 - $t0" | bc -l)" "$r"
done
# Claims alone: 2000 empty partitions claimed one at a time and finished, by the
# statements of store/fleet_pg.c, from psql (no proving, no cuzkd).
psql=("$bindir/psql" -q -X -h "$tmp/pg" -p "$port" -U cuzk cuzk)
"${psql[@]}" -c "INSERT INTO cuzk_jobs(zkey, out_dir, n_parts) VALUES ('/z', '/o', 2000);
  INSERT INTO cuzk_parts(job, idx, wtns, name) SELECT currval('cuzk_jobs_id_seq'), g, '/w', 'w' || g FROM generate_series(0, 1999) g;"
t0="$(date +%s.%N)"
{ for _ in $(seq 1 2000); do
  echo "WITH c AS (SELECT p.job, p.idx FROM cuzk_parts p JOIN cuzk_jobs j ON j.id = p.job WHERE p.state = 'queued' AND (NOT j.store_proofs OR false) ORDER BY p.job, p.idx LIMIT 1 FOR UPDATE OF p SKIP LOCKED) UPDATE cuzk_parts p SET state = 'leased', owner = 'b', lease_gen = p.lease_gen + 1, lease_expiry = now() + interval '30 s' FROM c WHERE p.job = c.job AND p.idx = c.idx;"
  echo "UPDATE cuzk_parts SET state = 'done', finished = now() WHERE owner = 'b' AND state = 'leased';"
done; } | "${psql[@]}" >/dev/null
t1="$(date +%s.%N)"
printf '  claims: %6.0f claims/s (claim + finish, one psql session, 2000 partitions)\n' "$(echo "2000 / ($t1 - $t0)" | bc -l)"
