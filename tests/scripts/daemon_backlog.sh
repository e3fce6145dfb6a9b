#!/usr/bin/env bash
# A backlog of input.json partitions through the daemon (issue 19): 32 partitions of
# bn128/mulchain-10 in 4 jobs, all submitted before the first wait, on 2 buffers (so
# the synth waits for buffers and computes each witness into one as the worker frees
# it). Every job ends done with all its partitions, each proof is named after its
# input (pI.proof.json), and snarkjs verifies all 32. The timed version of this is
# bench/backlog.sh (make bench). Environment: BUILD (default build).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/backlog.sh"
wgen_skip_without_tools
CUZK="$BUILD/bin/cuzk"
daemon_init backlog
M="$FIXTURES/bn128/mulchain-10"
# make.sh holds the cache's lock while any worktree builds a fixture (minutes for a
# large one): build only when the key is missing.
[ -f "$M/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q --curve bn128 --only mulchain-10 >/dev/null
wgen_for "$M" >/dev/null

daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16
backlog_inputs "$M" 32 "$tmp/in"
secs="$(backlog_run "$M" 4 "$tmp/in" "$tmp/out")"
for i in $(seq 1 32); do
  [ -f "$tmp/out/p$i.proof.json" ] && [ -f "$tmp/out/p$i.public.json" ] || fail "p$i: no proof named after it"
done
echo "ok   32 input.json partitions in 4 jobs on 2 buffers: all done, snarkjs verified 32 (${secs} s)"
daemon_shutdown_clean
echo "PASS: a backlog of 32 input.json partitions proves and verifies"
