#!/usr/bin/env bash
# Poison partition: CUZK_TEST_CRASH_ON=w3 (test-only hook) makes the worker abort on
# the partition named w3. With --max-attempts 2 that partition ends FAILED with the
# reason after 2 crashes; the job's other partitions and another job end DONE.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
ft_init poison
CUZK_TEST_CRASH_ON=w3 ft_start --devices cpu:2 --buffers 6 --buffer-mb 16 --max-attempts 2
a="$(ft_submit bn128 6 a)"
b="$(ft_submit bn128-chain 2 b)"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" --json wait "$a")" || true
[ "$(jq -r .job.state <<<"$r")" = failed ] || ft_fail "job a: $r"
w3="$(jq -c '.job.parts[] | select(.name == "w3")' <<<"$r")"
[ "$(jq -r .state <<<"$w3")" = failed ] || ft_fail "w3: $w3"
jq -r .reason <<<"$w3" | grep -q "crashed cuzk-gpuworker 2 times" || ft_fail "w3 reason: $w3"
[ "$(jq '[.job.parts[] | select(.state == "done")] | length' <<<"$r")" -eq 5 ] || ft_fail "job a: $r"
echo "ok: w3 failed: $(jq -r .reason <<<"$w3") (attempts $(jq -r .attempts <<<"$w3")); job a: $(jq -r .job.reason <<<"$r")"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" --json wait "$b")" || ft_fail "job b: $r"
[ "$(jq -r .job.state <<<"$r")" = done ] || ft_fail "job b: $r"
[ "$(grep -c 'CUZK_TEST_CRASH_ON=w3: aborting' "$FT_TMP/cuzkd.log")" -eq 2 ] || ft_fail "expected 2 crashes"
d="$FT_TMP/a/out"
[ ! -e "$d/w3.proof.json" ] || ft_fail "w3 has a proof"
rm -f "$FT_TMP/a/in/w3.wtns"
for i in 1 2 4 5 6; do [ -f "$d/w$i.proof.json" ] || ft_fail "w$i proof missing"; done
[ "$(ls -A "$d" | wc -l)" -eq 10 ] || ft_fail "stray files in $d: $(ls -A "$d")"
ft_verify bn128 a; ft_check_files b 2; ft_verify bn128-chain b
[ "$(ft_pool_in_use)" = 0 ] || ft_fail "pool in use: $(ft_pool_in_use)"
ft_shutdown
