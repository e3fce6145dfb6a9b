#!/usr/bin/env bash
# `cuzk restart STAGE` of each stage kind during a job: the stage stops taking work,
# finishes or hands back what it holds, exits and comes back (new pid, generation
# bumped); every witness ends with exactly one verified proof.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
ft_init rst
N=24
ft_start --devices cpu:2 --buffers 6 --buffer-mb 16
gen() { ft_status | jq -r --arg s "$1" '[.children[] | select(.stage == $s) | .generation] | add'; }
a="$(ft_submit bn128-chain "$N" a)"
b="$(ft_submit bn128 "$N" b)"
for st in synth worker finalizer; do
  g0="$(gen "$st")"
  r="$(ft_cuzk --json restart "$st")" || ft_fail "restart $st: $r"
  stopped="$(jq -c .stopped <<<"$r")"
  for _ in $(seq 1 100); do
    # every stopped pid gone, every stage of the kind running again
    back="$(ft_status | jq --arg s "$st" --argjson old "$stopped" \
      '[.children[] | select(.stage == $s)] | all(.pid != 0 and (.pid as $p | $old | index($p) == null))')"
    g1="$(gen "$st")"
    [ "$back" = true ] && break; sleep 0.1
  done
  [ "$back" = true ] || ft_fail "$st did not come back (stopped $stopped; $(ft_status | jq -c .children))"
  [ "$g1" -ge $((g0 + $(jq length <<<"$stopped"))) ] || ft_fail "$st generations $g0 -> $g1"
  echo "ok: restart $st: $(jq -c .stopped <<<"$r") stopped, generation $g0 -> $g1"
done
grep -q "killed by signal" "$FT_TMP/cuzkd.log" && ft_fail "a stage had to be killed: $(grep 'killed by signal' "$FT_TMP/cuzkd.log")"
for j in "$a" "$b"; do
  r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" --json wait "$j")" || ft_fail "wait $j: $r"
  [ "$(jq -r .job.state <<<"$r")" = done ] || ft_fail "job $j ended $(jq -c .job <<<"$r")"
done
ft_check_files a "$N"; ft_check_files b "$N"
ft_verify bn128-chain a; ft_verify bn128 b
[ "$(ft_pool_in_use)" = 0 ] || ft_fail "pool in use: $(ft_pool_in_use)"
echo "ok: $((2 * N)) proofs, one per witness, across restarts of every stage kind"
ft_shutdown
