#!/usr/bin/env bash
# bench/store.sh — what the job store costs (issue 17, "Benchmarks"); run by
# bench/run.sh, or alone.
#
# A backlog of BENCH_STORE_PARTS (64) small partitions (bn128 mulchain-10, 2^10
# constraints: the proofs are fast, so the store's share is as large as it gets) in
# one job, submitted at once and waited for, through a fresh cuzkd with the SQLite
# store (its own temp state dir) and one with --no-store, BENCH_STORE_RUNS (3) rounds
# interleaved (store, no store, store, ...). Prints partitions/s of each round from
# submit to the job's completion, the medians and the store's overhead
# (1 - store/no-store; issue 17's goal: under 3%), and, from cuzkd's store_commits
# and store_ns counters (cuzk-top), how many commits the store made during the job,
# their mean time and their share of the job's wall time (cuzkd's loop does the
# commits; the stages never wait for them). The last round's proofs of each are
# checked by snarkjs.
#
# Environment: BUILD (default build), BENCH_STORE_PARTS (64), BENCH_STORE_RUNS (3),
#   BENCH_STORE_DEVICES (cuzkd --devices, default cpu:1).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" store
N="${BENCH_STORE_PARTS:-64}"
RUNS="${BENCH_STORE_RUNS:-3}"
DEVICES="${BENCH_STORE_DEVICES:-cpu:1}"
bench_need bin/cuzkd bin/cuzk bin/cuzk-synth bin/cuzk-gpuworker bin/cuzk-finalizer
bash "$ROOT/tests/fixtures/make.sh" -q >/dev/null
fx="$FIXTURES/bn128/mulchain-10"
inst="sbench$$"
tmp="$(mktemp -d)"
run="$tmp/run"
dpid=""
cleanup() {
  [ -z "$dpid" ] || {
    kill -KILL "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
  } || true
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { fail_with_log "bench/store: " 20 "$*"; }
cz() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
mkdir -p "$tmp/in"
for i in $(seq 1 "$N"); do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done

one() { # mode (store|nostore) round: prints partitions/s
  local mode="$1" r="$2" opt=() t0 t1 out="$tmp/out-$1"
  [ "$mode" = store ] && opt=(--state-dir "$tmp/state-$r") || opt=(--no-store)
  rm -rf "$out"
  mkdir -p "$out"
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --foreground --devices "$DEVICES" \
    --buffers 8 --buffer-mb 4 "${opt[@]}" >"$tmp/cuzkd.log" 2>&1 &
  dpid=$!
  for _ in $(seq 1 100); do
    cz status >/dev/null 2>&1 && break
    sleep 0.1
  done
  cz status >/dev/null 2>&1 || fail "cuzkd ($mode) does not answer"
  # warm: the first partition loads the zkey in every stage; not part of the figure
  mkdir -p "$tmp/warm"
  cz prove --wait --zkey "$fx/circuit_final.zkey" --out "$tmp/warm" "$tmp/in/w1.wtns" >/dev/null ||
    fail "warm-up ($mode)"
  c0="$(commits)"
  t0=$(date +%s.%N)
  cz prove --wait --zkey "$fx/circuit_final.zkey" --out "$out" "$tmp/in"/w*.wtns >/dev/null || fail "job ($mode)"
  t1=$(date +%s.%N)
  c1="$(commits)"
  cz shutdown >/dev/null
  wait "$dpid" 2>/dev/null || true
  dpid=""
  awk -v a="$t0" -v b="$t1" -v n="$N" -v c0="$c0" -v c1="$c1" 'BEGIN{split(c0, x, " "); split(c1, y, " ");
    k = y[1] - x[1]; ns = y[2] - x[2];
    printf "%.2f %d %.2f %.2f", n / (b - a), k, k ? ns / k / 1e6 : 0, 100 * ns / 1e9 / (b - a)}'
}
commits() { # the supervisor's store counters: commits, nanoseconds in them
  "$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json 2>/dev/null | jq -r \
    '[.processes[] | select(.role == "supervisor")][0].counters | "\(.store_commits // 0) \(.store_ns // 0)"'
}

echo "== job store overhead (bn128 mulchain-10, $N partitions in one job, --devices $DEVICES; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
s=() n=()
for r in $(seq 1 "$RUNS"); do
  read -r a k ms share <<<"$(one store "$r")"
  read -r b _ <<<"$(one nostore "$r")"
  s+=("$a")
  n+=("$b")
  printf '  round %d: store %s partitions/s (%d commits, %.2f ms each, %.2f%% of the wall time in them), --no-store %s partitions/s\n' \
    "$r" "$a" "$k" "$ms" "$share" "$b"
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
ms="$(med "${s[@]}")"
mn="$(med "${n[@]}")"
awk -v s="$ms" -v n="$mn" 'BEGIN{printf "  median: store %.2f, --no-store %.2f partitions/s: the store costs %.1f%% (goal < 3%%)\n", s, n, 100 * (1 - s / n)}'
for m in store nostore; do
  out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$fx/verification_key.json" "$tmp/out-$m")" || fail "snarkjs ($m): $out"
  echo "  snarkjs ($m, last round): $out"
done
