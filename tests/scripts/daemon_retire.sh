#!/usr/bin/env bash
# --keep-finished: a decided job is retired from the job table that many seconds after
# it finished (metrics_trace.sh checks the other side: with a long keep-finished the
# job is still there for `cuzk trace` however slow the machine). Deadlines only: the
# retirement must happen within 60 s of the job's end, never "within N ms". A retired
# job's status then comes from the job store ("stored":true), or, with no store, is
# no_such_job.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init retire
# One proof, then its job's retirement: $1 is "store" (status then comes from the job
# store, "stored":true) or "no-store" (no_such_job, saying when it was retired).
retire_once() {
  local extra=() job out rc retired=0
  [ "$1" = no-store ] && extra=(--no-store)
  daemon_start --devices cpu:1 --buffer-mb 16 --keep-finished 1 "${extra[@]}"
  rm -rf "$tmp/out"
  mkdir -p "$tmp/out"
  out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" --wait "$tmp/r1.wtns")" ||
    fail "prove --wait: $out"
  job="$(node -e 'console.log(JSON.parse(process.argv[1].split("\n")[0]).job)' "$out")"
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/out/r1.public.json" \
    "$tmp/out/r1.proof.json" 2>&1 | grep -q OK || fail "snarkjs rejects r1 ($1)"
  for _ in $(seq 1 600); do
    rc=0
    cuzk --json status "$job" >"$tmp/st" 2>&1 || rc=$?
    if [ $rc -ne 0 ] || grep -q '"stored": *true' "$tmp/st"; then
      retired=1
      break
    fi
    sleep 0.1
  done
  [ $retired = 1 ] || fail "job $job still listed 60 s after it finished with --keep-finished 1 ($1)"
  if [ "$1" = store ]; then
    grep -q '"state": *"done"' "$tmp/st" || fail "stored status of job $job: $(cat "$tmp/st")"
  else
    grep -q "retired 1 s after it finished" "$tmp/st" || fail "unexpected answer: $(cat "$tmp/st")"
  fi
  echo "ok: job $job retired ($1): $(head -c 300 "$tmp/st")"
  daemon_shutdown_clean
}

A="$REF_FIXTURES/bn128"
cp "$A/witness.wtns" "$tmp/r1.wtns"
retire_once store
retire_once no-store
echo "ok: daemon_retire"
