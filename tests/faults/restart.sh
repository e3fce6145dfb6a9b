#!/usr/bin/env bash
# `cuzk restart STAGE` of each stage kind during a job: the stage stops taking work,
# finishes or hands back what it holds, exits and comes back (new pid, generation
# bumped); every witness ends with exactly one verified proof.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init rst
N=24
daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16
gen() { cuzk --json status | jq -r --arg s "$1" '[.children[] | select(.stage == $s) | .generation] | add'; }
a="$(submit_copies bn128-chain "$N" a)"
b="$(submit_copies bn128 "$N" b)"
for st in synth worker finalizer; do
  g0="$(gen "$st")"
  r="$(cuzk --json restart "$st")" || fail "restart $st: $r"
  stopped="$(jq -c .stopped <<<"$r")"
  for _ in $(seq 1 100); do
    # every stopped pid gone, every stage of the kind running again
    back="$(cuzk --json status | jq --arg s "$st" --argjson old "$stopped" \
      '[.children[] | select(.stage == $s)] | all(.pid != 0 and (.pid as $p | $old | index($p) == null))')"
    g1="$(gen "$st")"
    [ "$back" = true ] && break
    sleep 0.1
  done
  [ "$back" = true ] || fail "$st did not come back (stopped $stopped; $(cuzk --json status | jq -c .children))"
  [ "$g1" -ge $((g0 + $(jq length <<<"$stopped"))) ] || fail "$st generations $g0 -> $g1"
  echo "ok: restart $st: $(jq -c .stopped <<<"$r") stopped, generation $g0 -> $g1"
done
grep -q "killed by signal" "$tmp/cuzkd.log" && fail "a stage had to be killed: $(grep 'killed by signal' "$tmp/cuzkd.log")"
for j in "$a" "$b"; do
  r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$j")" || fail "wait $j: $r"
  [ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job $j ended $(jq -c .job <<<"$r")"
done
check_out_files a "$N"
check_out_files b "$N"
verify_jobs bn128-chain a
verify_jobs bn128 b
[ "$(pool_in_use)" = 0 ] || fail "pool in use: $(pool_in_use)"
echo "ok: $((2 * N)) proofs, one per witness, across restarts of every stage kind"
daemon_shutdown_clean
