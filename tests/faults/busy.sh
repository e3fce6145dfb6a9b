#!/usr/bin/env bash
# Backpressure: with --max-queued 12, a submit that would leave more than 12
# partitions unfinished answers "busy" with a sentence; a job larger than the limit
# is told to split; the queued job still finishes.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
ft_init busy
ft_start --devices cpu:1 --buffers 4 --buffer-mb 16 --max-queued 12
# hold the pipeline still so the count is deterministic (stopped stages are woken below)
stopped=($(ft_stage_pids synth) $(ft_stage_pids gpuworker))
kill -STOP "${stopped[@]}"
a="$(ft_submit bn128 8 a)"
out="$(ft_submit bn128 8 b 2>&1)" && ft_fail "second submit accepted: $out"
grep -q '"busy"' <<<"$out" && grep -q "max-queued 12" <<<"$out" || ft_fail "no busy reply: $out"
echo "ok: busy: $(grep -o '"message":"[^"]*"' <<<"$out")"
mkdir -p "$FT_TMP/c/in" "$FT_TMP/c/out"
for i in $(seq 1 13); do cp "$FXDIR/bn128/witness.wtns" "$FT_TMP/c/in/w$i.wtns"; done
out="$(ft_cuzk prove --zkey "$FXDIR/bn128/circuit_final.zkey" --out "$FT_TMP/c/out" "$FT_TMP/c/in"/*.wtns 2>&1)" \
  && ft_fail "job of 13 accepted: $out"
grep -q "split it" <<<"$out" || ft_fail "no split message: $out"
echo "ok: too big: $out"
kill -CONT "${stopped[@]}"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" --json wait "$a")" || ft_fail "wait: $r"
[ "$(jq -r .job.state <<<"$r")" = done ] || ft_fail "job a: $r"
b="$(ft_submit bn128 8 b)" || ft_fail "submit after the queue drained"
ft_cuzk wait "$b" >/dev/null || ft_fail "job b"
ft_check_files a 8; ft_check_files b 8; ft_verify bn128 a b
ft_shutdown
