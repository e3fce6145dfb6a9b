#!/usr/bin/env bash
# Supervisor death: SIGKILL cuzkd during a job. Its stages exit at once (PDEATHSIG).
# A new cuzkd on the same instance starts a fresh table and reports the running job
# LOST by id (log, `cuzk status`, `cuzk wait ID`); no temp file is left in the out
# dir; job ids continue after the lost one; new jobs are proved.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
ft_init sdeath
N=60
ft_start --devices cpu:2 --buffers 6 --buffer-mb 16
id="$(ft_submit bn128-chain "$N" a)"
for _ in $(seq 1 100); do
  [ "$(ft_cuzk --json status "$id" | jq .job.done)" -ge 3 ] && break; sleep 0.05
done
old=$FT_DPID
kill -KILL "$old"; wait "$old" 2>/dev/null || true
FT_DPID=""
t0=$(date +%s.%N)
for _ in $(seq 1 500); do [ -z "$(pgrep -f -- "--instance $FT_INST " || true)" ] && break; sleep 0.02; done
left="$(pgrep -f -- "--instance $FT_INST " || true)"
[ -z "$left" ] || ft_fail "stages still running 10 s after cuzkd died (they must die with it): $left"
echo "ok: stages gone $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s after cuzkd was killed"
ft_start --devices cpu:2 --buffers 6 --buffer-mb 16
for _ in $(seq 1 300); do grep -q "job $id LOST" "$FT_TMP/cuzkd.log" && break; sleep 0.1; done
grep -q "job $id LOST" "$FT_TMP/cuzkd.log" || ft_fail "no LOST line for job $id"
out="$(ft_cuzk --json status "$id" 2>&1)" && ft_fail "status of lost job succeeded: $out"
grep -q "was lost" <<<"$out" || ft_fail "status $id: $out"
out="$(ft_cuzk --json wait "$id" 2>&1)" && ft_fail "wait of lost job succeeded: $out"
grep -q "was lost" <<<"$out" || ft_fail "wait $id: $out"
ft_status | jq -e --argjson id "$id" '.lost_jobs | map(.id) | index($id) != null' >/dev/null \
  || ft_fail "status has no lost_jobs entry: $(ft_status)"
echo "ok: $(grep -o "job $id LOST.*" "$FT_TMP/cuzkd.log")"
tmpf="$(ls -A "$FT_TMP/a/out" | grep '\.tmp\.' || true)"
[ -z "$tmpf" ] || ft_fail "temp files left: $tmpf"
id2="$(ft_submit bn128 4 b)"
[ "$id2" -gt "$id" ] || ft_fail "job id $id2 reuses the lost range (lost $id)"
ft_cuzk wait "$id2" >/dev/null || ft_fail "new job $id2"
ft_check_files b 4; ft_verify bn128 b
ft_shutdown
