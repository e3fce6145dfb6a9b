#!/usr/bin/env bash
# Backpressure: with --max-queued 12, a submit that would leave more than 12
# partitions unfinished answers "busy" with a sentence; a job larger than the limit
# is told to split; the queued job still finishes.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init busy
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --max-queued 12
# hold the pipeline still so the count is deterministic (stopped stages are woken below)
mapfile -t stopped < <(
  stage_pids synth
  stage_pids gpuworker
)
kill -STOP "${stopped[@]}"
a="$(submit_copies bn128 8 a)"
out="$(submit_copies bn128 8 b 2>&1)" && fail "second submit accepted: $out"
grep -q '"busy"' <<<"$out" && grep -q "max-queued 12" <<<"$out" || fail "no busy reply: $out"
echo "ok: busy: $(grep -o '"message":"[^"]*"' <<<"$out")"
mkdir -p "$tmp/c/in" "$tmp/c/out"
for i in $(seq 1 13); do cp "$REF_FIXTURES/bn128/witness.wtns" "$tmp/c/in/w$i.wtns"; done
out="$(cuzk prove --zkey "$REF_FIXTURES/bn128/circuit_final.zkey" --out "$tmp/c/out" "$tmp/c/in"/*.wtns 2>&1)" &&
  fail "job of 13 accepted: $out"
grep -q "split it" <<<"$out" || fail "no split message: $out"
echo "ok: too big: $out"
kill -CONT "${stopped[@]}"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$a")" || fail "wait: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job a: $r"
b="$(submit_copies bn128 8 b)" || fail "submit after the queue drained"
cuzk wait "$b" >/dev/null || fail "job b"
check_out_files a 8
check_out_files b 8
verify_jobs bn128 a b
daemon_shutdown_clean
